/**
 * scripts/lib/dual-summary.ts: the dual-mode table pairs the main job's own baselines with the
 * pairings problem by problem, and refuses a main job judged on other problems.
 */
import type { ComparedResult, Comparison } from '../../src/contracts/training-run';
import { ARMS, type Arm, type CompareFile, mainJobArms, summarizeDual } from '../../scripts/lib/dual-summary';

/** A policy's result on four test problems, from its per-problem correctness. */
const judged = (perProblem: string): ComparedResult => {
  const accuracy = [...perProblem].filter((x) => x === '1').length / perProblem.length;
  return { greedy: { accuracy, stderr: 0, correct: 0, total: perProblem.length }, perProblem } as ComparedResult;
};

function compareFile(fromRun: string, perProblem: Record<Arm, string>): CompareFile {
  const arms = Object.fromEntries(ARMS.map((a) => [a, { planner: 'p', actor: 'a', greedy: judged(perProblem[a]).greedy.accuracy, stderr: 0, perProblem: perProblem[a] }]));
  return { fromRun, fromStep: 300, rollouts: 16, jobs: {}, arms: arms as CompareFile['arms'], seconds: 1 };
}

const run1 = compareFile('run-1', { sft: '1000', shared: '1100', dualOutcome: '1100', dualCredit: '1110', frozenPlannerOutcome: '1110', frozenPlannerCredit: '1111' });
const run2 = compareFile('run-2', { sft: '0000', shared: '1000', dualOutcome: '0000', dualCredit: '1000', frozenPlannerOutcome: '1100', frozenPlannerCredit: '1100' });
const main1: Comparison = { problems: 4, split: 'test', sftOnly: judged('1000'), rft: judged('1100'), filteredSft: judged('1111'), moreSft: judged('1000'), rl: judged('1100') };
const main2: Comparison = { problems: 4, split: 'test', sftOnly: judged('0000'), rft: judged('0000'), filteredSft: judged('1110'), moreSft: judged('0000'), rl: judged('1000') };

/** The row of a markdown table that starts with this cell. */
const row = (table: string, first: string) => table.split('\n').find((l) => l.startsWith(`| ${first} |`));

describe('summarizeDual', () => {
  it("puts the main job's baselines beside the pairings, paired on the same problems", () => {
    const table = summarizeDual([run1, run2], [mainJobArms(run1, main1, 'run-1.result.json'), mainJobArms(run2, main2, 'run-2.result.json')]);
    expect(row(table, 'main job: SFT + filtered SFT')).toBe('| main job: SFT + filtered SFT | 87.5% | 100.0%, 75.0% |');
    expect(row(table, 'main job: SFT + RFT')).toBe('| main job: SFT + RFT | 25.0% | 50.0%, 0.0% |');
    // Per run: 1111 − 1111 = 0 and 1100 − 1110 = −0.25; their mean −12.5 with SE 12.5 over the two runs.
    expect(row(table, 'frozenPlannerCredit − filteredSft')).toMatch(/^\| frozenPlannerCredit − filteredSft \| -12\.5 ± 12\.5 \| \+0\.0 ± 0\.0, -25\.0 ± 25\.0 \|$/);
    // 1100 − 1100 and 1000 − 0000.
    expect(row(table, 'shared − rft')).toMatch(/^\| shared − rft \| \+12\.5 ± 12\.5 \| \+0\.0 ± 0\.0, \+25\.0 ± 25\.0 \|$/);
    expect(row(table, 'shared − rl')).toMatch(/^\| shared − rl \| \+0\.0 ± 0\.0 \|/);
  });

  it('leaves the baselines out when a run has no result file, and keeps the pairings', () => {
    const table = summarizeDual([run1, run2], [mainJobArms(run1, main1, 'run-1.result.json'), undefined]);
    expect(table).not.toContain('main job:');
    expect(table).not.toContain('− rft');
    expect(table).toContain('no main-job policies beside the pairings: no test results of run-2 in the runs folder');
    expect(row(table, 'shared − sft')).toMatch(/^\| shared − sft \| \+25\.0 ± 0\.0 \|/);
  });

  it('refuses a main job whose SFT-only results are not the SFT pairing, naming the file', () => {
    expect(() => mainJobArms(run1, { ...main1, sftOnly: judged('0001') }, 'run-1.result.json')).toThrow(/run-1\.result\.json: its SFT-only test results differ from run-1's SFT pairing/);
  });

  it('takes nothing from runs recorded before the test split', () => {
    const { split: _split, ...validation } = main1;
    expect(mainJobArms(run1, validation, 'old.result.json')).toBeUndefined();
  });
});
