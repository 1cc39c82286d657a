/**
 * The dual-mode comparison's files and table (scripts/dual-compare.ts, docs/plan-act.md): each
 * pairing's greedy test accuracy over the runs compared, the main job's own policies beside them
 * when their result files are at hand, and paired differences on the same test problems.
 */
import type { Comparison } from '../../src/contracts/training-run';
import { pairedOnProblems } from '../../src/report/comparison';
import { meanSd, pairedSe, pct, pts } from './summary-stats';

/** The pairings judged, planner x actor. */
export const ARMS = ['sft', 'shared', 'dualOutcome', 'dualCredit', 'frozenPlannerOutcome', 'frozenPlannerCredit'] as const;
export type Arm = (typeof ARMS)[number];
const LABELS: Record<Arm, string> = {
  sft: 'SFT planner + SFT actor (no RL)',
  shared: 'shared mode (one policy, both roles)',
  dualOutcome: 'dual, outcome credit (both trained)',
  dualCredit: 'dual, planner credit correct-results (both trained)',
  frozenPlannerOutcome: 'SFT planner + dual-outcome actor',
  frozenPlannerCredit: 'SFT planner + dual-credit actor',
};

export interface ArmResult {
  planner: string;
  actor: string;
  greedy: number;
  stderr: number;
  sampled?: number;
  passAtK?: number[];
  actToolRate?: number;
  perProblem: string;
}

/** One comparison, as dual-compare writes it to .data/dual-compare/<from-run>.json. */
export interface CompareFile {
  fromRun: string;
  fromStep: number;
  rollouts: number;
  jobs: Record<string, string>;
  arms: Record<Arm, ArmResult>;
  seconds: number;
}

/** The main job's own policies, judged on the test problems the pairings were judged on: the baselines beside dual mode. */
const MAIN_JOB_ARMS = ['rl', 'rft', 'filteredSft', 'moreSft'] as const;
type MainJobArm = (typeof MAIN_JOB_ARMS)[number];
const MAIN_JOB_LABELS: Record<MainJobArm, string> = {
  rl: 'main job: SFT + RL (trainingRun, one policy)',
  rft: 'main job: SFT + RFT',
  filteredSft: 'main job: SFT + filtered SFT',
  moreSft: 'main job: SFT + more SFT',
};

/** A pairing's or a main-job policy's greedy result on the test problems. */
type Judged = Pick<ArmResult, 'greedy' | 'perProblem'>;
type MainJobArms = Partial<Record<MainJobArm, Judged>>;

/**
 * The main job's policies from the comparison of the run a dual comparison started from (undefined
 * for a run without test evaluations). Its SFT-only policy must match the SFT pairing problem by
 * problem, or the two were not judged on the same problems and nothing can be paired. (A check on
 * outcomes, not on the problems themselves: the embedded engine is deterministic, so the same SFT
 * weights on the same problems give the same string, and other problems almost never do.)
 */
export function mainJobArms(f: CompareFile, comparison: Comparison | undefined, source: string): MainJobArms | undefined {
  if (comparison?.split !== 'test' || comparison.sftOnly.perProblem === undefined) return undefined;
  if (comparison.sftOnly.perProblem !== f.arms.sft.perProblem) {
    throw new Error(`${source}: its SFT-only test results differ from ${f.fromRun}'s SFT pairing; were they judged on the same problems?`);
  }
  const arms: MainJobArms = {};
  for (const key of MAIN_JOB_ARMS) {
    const r = comparison[key];
    if (r?.perProblem !== undefined) arms[key] = { greedy: r.greedy.accuracy, perProblem: r.perProblem };
  }
  return arms;
}

/**
 * The table over the runs: every pairing, then the main-job policies every run has; paired
 * differences between pairings, and against RFT and filtered SFT (the strongest simple baselines)
 * of the best dual pairing, both trained dual policies and shared mode. mains[i] belongs to files[i].
 */
export function summarizeDual(files: readonly CompareFile[], mains: ReadonlyArray<MainJobArms | undefined>): string {
  const mean = (xs: number[]) => meanSd(xs).mean;
  const lines = [`Dual-mode comparison, greedy accuracy on the test problems, ${files.length} run(s): ${files.map((f) => f.fromRun).join(', ')}`, ''];
  const mainKeys = MAIN_JOB_ARMS.filter((key) => mains.every((m) => m?.[key]));
  const isArm = (key: Arm | MainJobArm): key is Arm => (ARMS as readonly string[]).includes(key);
  const judged = (i: number, key: Arm | MainJobArm): Judged => (isArm(key) ? files[i]!.arms[key] : mains[i]![key]!);
  const rows: Array<[Arm | MainJobArm, string]> = [...ARMS.map((a): [Arm, string] => [a, LABELS[a]]), ...mainKeys.map((k): [MainJobArm, string] => [k, MAIN_JOB_LABELS[k]])];
  lines.push('| pairing | mean | per run |', '|---|---:|---|');
  for (const [key, label] of rows) {
    const accs = files.map((_, i) => judged(i, key).greedy);
    lines.push(`| ${label} | ${pct(mean(accs))} | ${accs.map(pct).join(', ')} |`);
  }
  const pairs: Array<[Arm | MainJobArm, Arm | MainJobArm]> = [
    ['dualCredit', 'dualOutcome'],
    ['dualOutcome', 'frozenPlannerOutcome'],
    ['dualCredit', 'frozenPlannerCredit'],
    ['dualCredit', 'shared'],
    ['dualOutcome', 'shared'],
    ['frozenPlannerCredit', 'shared'],
    ['shared', 'sft'],
  ];
  for (const baseline of (['rft', 'filteredSft'] as const).filter((k) => mainKeys.includes(k))) {
    for (const arm of ['frozenPlannerCredit', 'dualCredit', 'shared'] as const) pairs.push([arm, baseline]);
  }
  // Shared mode is trainingRun's RL on planActJob's schedule: the two should agree.
  if (mainKeys.includes('rl')) pairs.push(['shared', 'rl']);
  // The SE over runs is the one about the methods; a run's SE (over its test problems) says only how
  // well 256 problems measure that one training run.
  lines.push('', '| difference (points) | mean over runs ± SE over runs | per run ± SE over its test problems |', '|---|---:|---|');
  for (const [a, b] of pairs) {
    const per = files.map((_, i) => pairedOnProblems(judged(i, a).perProblem, judged(i, b).perProblem));
    const { mean: diff, se } = pairedSe(per.map((d) => d.diff));
    lines.push(`| ${a} − ${b} | ${diff} ± ${se} | ${per.map((d) => `${pts(d.diff)} ± ${(100 * d.stderr).toFixed(1)}`).join(', ')} |`);
  }
  if (mainKeys.length > 0) lines.push('', 'main job: the policies of the run each comparison started from (its <id>.result.json), judged on the same test problems.');
  const without = files.filter((_, i) => mains[i] === undefined).map((f) => f.fromRun);
  if (without.length > 0) lines.push('', `no main-job policies beside the pairings: no test results of ${without.join(', ')} in the runs folder (DURABLE_RL_RUNS).`);
  return lines.join('\n');
}
