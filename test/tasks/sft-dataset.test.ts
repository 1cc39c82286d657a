/** prepareSftDataset's task keys: extra demonstrations from another distribution, and the tool-use rate. */
import { createDataActivities } from '../../activities/data';
import { parseRunConfig } from '../../src/config/parse';
import { getJson } from '../../src/store/blob-store';
import { tempStore } from '../helpers/store';
import { loadTokenizer } from '../../src/model/tokenizer';
import { names } from '../../src/store/run-names';
import { generateProblems, problemFromExpression, problemPart } from '../../src/tasks/arith';

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

test('filter tool-using keeps every planner demonstration and only the acts that call the calculator (compare.filteredSft)', async () => {
  const store = tempStore('sft-filtered');
  const task = parseRunConfig({ task: { trainProblems: 40, demoToolUseRate: 0.3 } }).task;
  const data = createDataActivities({ store });
  const all = await data.prepareSftDataset({ runId: 'all', seed: 3, task, maxSeq: 384 });
  const filtered = await data.prepareSftDataset({ runId: 'filtered', seed: 3, task, maxSeq: 384, filter: 'tool-using' });
  expect(filtered.plannerExamples).toBe(all.plannerExamples);
  expect(filtered.actorExamples).toBeGreaterThan(0);
  expect(filtered.actorExamples).toBeLessThan(all.actorExamples * 0.5);
  const tokenizer = loadTokenizer();
  const texts = (await getJson<{ examples: Array<{ role: string; tokens: number[] }> }>(store, filtered.ref)).examples.filter((e) => e.role === 'actor').map((e) => tokenizer.decode(e.tokens));
  expect(texts.every((t) => t.includes('<calc>'))).toBe(true);
  // Each is named under its own run key.
  expect(await store.getName(names.dataset('filtered'))).toEqual(filtered.ref);
});

test('task.split subproblem: SFT demonstrations come from the sft part only; expression keeps the old training split', async () => {
  const problemsOf = async (split: 'subproblem' | 'expression') => {
    const { examples } = await dataset({ trainProblems: 30, split, rl: { testProblems: split === 'expression' ? 0 : 256 } });
    const tokenizer = loadTokenizer();
    return examples.filter((e) => e.role === 'planner').map((e) => /Compute: (\S+)/.exec(tokenizer.decode(e.tokens))?.[1] ?? '');
  };
  const sub = await problemsOf('subproblem');
  expect(sub.every((x) => problemPart(problemFromExpression(x)) === 'sft')).toBe(true);
  const old = await problemsOf('expression');
  expect(old).toEqual(generateProblems({ seed: 3, count: 30, split: 'train', difficulty: parseRunConfig({}).task.difficulty }).map((p) => p.expression));
});
