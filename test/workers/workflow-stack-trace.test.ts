/**
 * The Web UI's "Stack Trace" tab (the __stack_trace and __enhanced_stack_trace queries) against the
 * project's patched promise hook (patches/README.md): the SDK's hook formatted a stack for every
 * promise a workflow made; ours keeps the callsites and formats them when a query asks. A Plan/Act
 * group waiting on its calls must still show where each episode waits, source-mapped to our files,
 * with Promise.all's internal promises folded into the aggregate, as the SDK's own hook shows them.
 */
import fs from 'node:fs';
import { createOracleInferenceActivities } from '../../activities/oracle-inference';
import type { PlanActEpisodeInput } from '../../src/contracts/plan-act-episode';
import type { WeightsInfo } from '../../src/contracts/weights';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { testEnv, uniqueId, type TestEnv } from '../helpers/temporal';
import { planActEpisodeInput } from '../helpers/plan-act-input';
import { waitFor } from '../helpers/wait';

const ORACLE_WEIGHTS: WeightsInfo = { version: 1, step: 0, onnx: { sha256: '0'.repeat(64), bytes: 0, kind: 'onnx' } };
const oracleQueue = uniqueId('oracle-stack-trace');
let ctx: TestEnv;
let generateCalls = 0;

beforeAll(async () => {
  ctx = await testEnv('stack-trace', ['orchestration', 'tools']);
  const oracle = createOracleInferenceActivities({ store: ctx.store, latencyMs: 3000, onCall: () => generateCalls++ });
  await ctx.addWorker({ taskQueue: oracleQueue, activities: oracle, maxConcurrentActivityTaskExecutions: 16 });
});

afterAll(async () => {
  await ctx?.stop();
});

function group(expression: string): PlanActEpisodeInput[] {
  const policy = { weights: ORACLE_WEIGHTS, inferenceQueue: oracleQueue };
  return [0, 1].map((i) => planActEpisodeInput(expression, policy, { runId: 'test-stack-trace', seed: 3 + i, batchRequests: false }));
}

interface Location { file_path?: string; function_name?: string; line?: number; column?: number }

describe('workflow stack traces with the patched promise hook', () => {
  it('shows each waiting episode, source-mapped, in both stack trace queries', async () => {
    const handle = await ctx.env.client.workflow.start('planActEpisodes', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('stack-trace'), args: [group('12+34+56+78')] });
    // Both planners answered (2 calls); a moment later every act waits in its first generate, under
    // Promise.all, for the next 2.5 s: both queries see that one state.
    await waitFor('the planners to answer', async () => (generateCalls >= 2 ? true : undefined));
    await new Promise((r) => setTimeout(r, 500));
    const stack = await handle.query<string>('__stack_trace');
    const enhanced = await handle.query<{ stacks: Array<{ locations: Location[] }>; sdk: { name: string } }>('__enhanced_stack_trace');
    if (process.env.DURABLE_RL_STACK_TRACE_OUT) fs.writeFileSync(process.env.DURABLE_RL_STACK_TRACE_OUT, JSON.stringify({ stack, enhanced }, null, 1));
    await handle.terminate('the stack traces are read');

    expect(stack).toMatch(/at runAct \(.*src\/planact\/actor-loop\.ts:\d+:\d+\)/);
    expect(stack).toMatch(/at runPlanActEpisode \(.*src\/planact\/episode\.ts:\d+:\d+\)/);
    expect(stack).toMatch(/at planActEpisodes \(.*workflows\/plan-act-episode\.ts:\d+:\d+\)/);
    // The framework's frames are cut off.
    expect(stack).not.toMatch(/initAll|Activator\.|runInContext/);

    expect(enhanced.sdk.name).toBe('typescript');
    const locations = enhanced.stacks.flatMap((s) => s.locations);
    const runAct = locations.find((l) => l.function_name === 'runAct');
    expect(runAct).toMatchObject({ file_path: expect.stringMatching(/src\/planact\/actor-loop\.ts$/), line: expect.any(Number), column: expect.any(Number) });
    // The two queries saw the same state: one structured stack for each formatted one.
    expect(enhanced.stacks.length).toBe(stack.split('\n\n').length);
    // An act's first call, made inside Promise.all's map: the aggregate's stack, down to the episode.
    expect(stack).toMatch(/at Object\.generate \(.*\n\s+at runAct \(.*\n\s+at .*src\/planact\/episode\.ts:\d+:\d+\n\s+at Array\.map \(<anonymous>\)\n\s+at runPlanActEpisode /);
  });
});

describe('the promise hook patch', () => {
  it('is what this install runs (scripts/setup.sh applies patches/)', async () => {
    const { GlobalHandlers } = await import('@temporalio/worker/lib/workflow/vm-shared');
    expect(typeof (GlobalHandlers.prototype as unknown as Record<string, unknown>).convertCallsites).toBe('function');
  });
});
