/**
 * What trainingRun returns: the comparison first (key order is what the Web UI shows first: the
 * outcome, then the curves), the report's files, and the last points of each curve.
 */
import type { ComparedPolicy, ComparedResult, Comparison, EvalPoint, RlEvalPoint, RunState, TrainingRunResult } from '../../src/contracts/training-run';
import type { Run } from './run';

export interface RunOutcome {
  /** The SFT distribution at the end. */
  final: EvalPoint;
  /** Where the starting policy came from. */
  backend: string;
  report: { metricsFile: string; png: string };
}

export function runResult(run: Run, { final, backend, report }: RunOutcome): TrainingRunResult {
  const { cfg, state, rlSteps } = run;
  return {
    experiment: cfg.experiment,
    ...(rlSteps > 0 ? { comparison: compare(run.rlEvals, state, rlSteps) } : {}),
    metricsFile: report.metricsFile,
    curvesPng: report.png,
    backend,
    sftSteps: Math.min(cfg.sft.steps, run.checkpoint.step - run.rlDone()),
    rlSteps: run.rlDone(),
    finalLoss: state.losses.at(-1)?.loss,
    final,
    // The last points only (trimState): the whole curves are in the metrics file (metricsFile).
    evals: state.evals,
    rlEvals: run.rlEvals,
    rl: run.rlPoints,
    checkpoint: run.checkpoint,
    weights: state.weights,
    losses: state.losses,
  };
}

/**
 * The comparison the run returns: each policy on the test problems (evaluated once each, after
 * training), or for runs without a test evaluation the validation evaluations (the first and last
 * RL evaluation, the baselines' own).
 */
function compare(rlEvals: RlEvalPoint[], state: RunState, rlSteps: number): Comparison {
  const first = rlEvals[0]!;
  const last = rlEvals.at(-1)!;
  // Grid runs also compare success per plan horizon.
  const pick = (e: Omit<RlEvalPoint, 'step'>): ComparedResult => ({
    greedy: e.greedy,
    ...(e.sampled ? { sampled: e.sampled } : {}),
    ...(e.byHorizon ? { byHorizon: e.byHorizon } : {}),
    ...(e.passAtK ? { passAtK: e.passAtK } : {}),
    ...(e.tools ? { tools: e.tools } : {}),
    ...(e.perProblem ? { perProblem: e.perProblem } : {}),
  });
  const test = state.test;
  const of = (name: ComparedPolicy, validation: RlEvalPoint | undefined): ComparedResult | undefined => {
    const e = test ? test[name] : validation;
    return e ? pick(e) : undefined;
  };
  const sftSpent = (b: RunState['moreSft']) => (b ? { steps: b.steps, seconds: round1(b.seconds), ...(b.trainedTokens !== undefined ? { trainedTokens: b.trainedTokens } : {}) } : {});
  const moreSft = of('moreSft', state.moreSft?.eval);
  const filteredSft = of('filteredSft', state.filteredSft?.eval);
  const rft = of('rft', state.rft?.eval);
  return {
    problems: (test?.sftOnly ?? first).greedy.total,
    ...(test ? { split: 'test' as const } : {}),
    sftOnly: of('sftOnly', first)!,
    ...(moreSft ? { moreSft: { ...moreSft, ...sftSpent(state.moreSft) } } : {}),
    ...(filteredSft ? { filteredSft: { ...filteredSft, ...sftSpent(state.filteredSft) } } : {}),
    ...(rft ? { rft: { ...rft, steps: state.rft!.steps, seconds: round1(state.rft!.seconds) } } : {}),
    rl: { ...of('rl', last)!, steps: rlSteps, seconds: round1(state.rlSeconds ?? 0), ...(state.rlTrainedTokens !== undefined ? { trainedTokens: state.rlTrainedTokens } : {}) },
  };
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
