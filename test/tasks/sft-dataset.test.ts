/** prepareSftDataset's task keys: extra demonstrations from another distribution, and the tool-use rate. */
import { createDataActivities } from '../../activities/data';
import { parseRunConfig } from '../../src/config/parse';
import { getJson } from '../../src/store/blob-store';
import { tempStore } from '../helpers/store';

const dataset = async (task: Record<string, unknown>) => {
  const store = tempStore('sft-dataset');
  const info = await createDataActivities({ store }).prepareSftDataset({ runId: 'r', seed: 3, task: parseRunConfig({ task }).task, maxSeq: 384 });
  return { info, examples: (await getJson<{ examples: Array<{ role: string; tokens: number[] }> }>(store, info.ref)).examples };
};

test('extraDemonstrations adds that many problems of its distribution; the main ones stay as they were', async () => {
  const base = await dataset({ trainProblems: 20 });
  const more = await dataset({ trainProblems: 20, extraDemonstrations: { problems: 5, difficulty: { minTerms: 4, maxTerms: 4 } } });
  expect(base.info.plannerExamples).toBe(20);
  expect(more.info.plannerExamples).toBe(25);
  // The first 20 planner examples are the same problems as without the extras.
  const planners = (e: typeof base.examples) => e.filter((x) => x.role === 'planner').map((x) => x.tokens.join(','));
  expect(planners(more.examples).slice(0, 20)).toEqual(planners(base.examples));
  // 4-term problems take three acts (three actor examples) each.
  expect(more.info.actorExamples - base.info.actorExamples).toBe(15);
});

test('demoToolUseRate below 1 gives actor demonstrations without a calculator call', async () => {
  const all = await dataset({ trainProblems: 30 });
  const some = await dataset({ trainProblems: 30, demoToolUseRate: 0.3 });
  expect(some.info.actorExamples).toBe(all.info.actorExamples);
  expect(some.info.meanTokens).toBeLessThan(all.info.meanTokens);
});
