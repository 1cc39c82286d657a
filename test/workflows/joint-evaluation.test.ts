/** jointEvaluation: two runs' policies playing planner and actor together, on the real dev server. */
import type { TrainingRunResult } from '../../src/contracts/training-run';
import type { JointEvaluationResult } from '../../workflows/joint-evaluation';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { testEnv, tinyRlConfig, tinyRunConfig, uniqueId, type TestEnv } from '../helpers/temporal';

let ctx: TestEnv;

beforeAll(async () => {
  ctx = await testEnv('joint-evaluation');
});

afterAll(async () => {
  await ctx?.stop();
});

test('plays the planner with one run\'s newest weights and every act with another\'s, on the test problems', async () => {
  const [a, b] = await Promise.all([ctx.startTrainingRun('planner-run', tinyRunConfig()), ctx.startTrainingRun('actor-run', tinyRunConfig({ seed: 8 }))]);
  const [ra, rb] = (await Promise.all([a.handle.result(), b.handle.result()])) as TrainingRunResult[];
  const config = { ...tinyRlConfig(), task: { trainProblems: 40, evalProblems: 4, rl: { evalProblems: 4, testProblems: 3 } }, eval: { everySteps: 0, maxNewTokens: 8, passAtK: 2 } };
  const handle = await ctx.env.client.workflow.start('jointEvaluation', {
    taskQueue: TASK_QUEUES.orchestration,
    workflowId: uniqueId('joint'),
    args: [{ config, planner: { fromRun: a.workflowId }, actor: { fromRun: b.workflowId }, part: 'test' }],
  });
  const result = (await handle.result()) as JointEvaluationResult;
  expect(result.planner).toEqual(ra!.weights);
  expect(result.actor).toEqual(rb!.weights);
  expect(result.part).toBe('test');
  expect(result.greedy.total).toBe(3);
  expect(result.passAtK).toHaveLength(2);
  expect(result.perProblem).toMatch(/^[01]{3}$/);
  // A run that published nothing is a clear, typed error.
  const missing = await ctx.env.client.workflow.start('jointEvaluation', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('joint-missing'), args: [{ config, planner: { fromRun: 'no-such-run' }, actor: { fromRun: b.workflowId } }] });
  await expect(missing.result()).rejects.toMatchObject({ cause: { cause: { type: 'BadInputError', message: expect.stringMatching(/no-such-run/) } } });
});
