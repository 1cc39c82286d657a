/**
 * What a training run records for its curves, and the one file format that carries it.
 *
 * File format: JSON lines (one JSON object per line, UTF-8, blank lines ignored), each tagged with
 * `kind`; the other keys are exactly the fields of the matching type below (unknown keys are
 * rejected, so a misspelt optional field fails loudly instead of vanishing from the plot):
 *
 *   {"kind":"sft-loss","step":10,"loss":1.92}
 *   {"kind":"eval","step":300,"phase":"sft","greedyAccuracy":0.41,"sampledAccuracy":0.33}
 *   {"kind":"rl","step":1,"meanReward":0.38,"loss":0.012,"clipFrac":0.04,"approxKl":0.002}
 *   {"kind":"baseline","label":"SFT only","accuracy":0.41,"stderr":0.03}
 *   {"kind":"rft","step":1,"meanReward":0.3,"accuracy":0.3,"trainedSamples":19,"loss":-0.9}
 *   {"kind":"test","policy":"rl","greedyAccuracy":0.62,"stderr":0.03,"passAtK":[0.5,0.6]}
 *
 * Lines may come in any order and kinds may interleave (append as the run goes). A later line
 * for the same key replaces an earlier one (rl and sft-loss: step; eval: phase and step;
 * baseline: label; rft: step; test: policy), so a step that a resumed or retried run logs twice is plotted once.
 * Metric values may be `null`: JSON.stringify writes NaN and ±Infinity as null, and a diverged
 * loss is exactly when the curves are wanted, so such a point is read as NaN and left out of the
 * plot rather than failing the file. Steps, phases, labels and baselines may not be null.
 *
 * Pure types and one serializer; the parser is in parse-metrics.ts.
 */
import type { RlStepSchedule } from '../contracts/training-run';

/** Wall-clock seconds one RL step spent in each stage. */
export interface RlStepSeconds {
  rollout: number;
  train: number;
  publish: number;
  /** Loading the new weights into a remote server (inference.openai.weightSync). */
  sync?: number;
}

/** One RL (GRPO) step: rollout statistics and the policy update that followed. */
export interface RlStepMetrics {
  /** RL step number (integer >= 0), counted from the start of RL, not of SFT. */
  step: number;
  /** Mean reward over the step's rollouts. */
  meanReward: number;
  /** Fraction of the step's rollouts that were correct, in [0, 1]. */
  accuracy?: number;
  /** The policy loss the update minimised (mean over its minibatches). */
  loss: number;
  /** Fraction of tokens whose probability ratio was clipped, in [0, 1]. */
  clipFrac?: number;
  /** Approximate KL divergence between the rollout policy and the updated policy. */
  approxKl?: number;
  /** Mean per-token entropy of the policy on the trained tokens. */
  entropy?: number;
  /** Gradient norm before clipping. */
  gradNorm?: number;
  /** Mean response length in tokens. */
  responseLength?: number;
  /** Tokens that contributed to the loss in this step. */
  tokensTrained?: number;
  /** Samples (training rows) in the update, and samples left out for having no trained token: together, every sample the step took. */
  rows?: number;
  skipped?: number;
  /** Timeline merging: calls captured and samples trained, tokens before and after (src/timeline). */
  timelines?: RlStepTimelines;
  /** Tree rollouts: segments generated, leaves, generated tokens, duplicate outputs. */
  tree?: { nodes: number; leaves: number; generatedTokens: number; duplicates: number; promptTokens?: number; cachedPromptTokens?: number };
  /** Horizon rollouts: the step's success per plan horizon (plan_h{H}_success_count / total_count / success_rate). */
  horizon?: Record<string, number>;
  seconds?: RlStepSeconds;
  /** How the step used the trainer and the inference workers, and how stale its samples were (src/rl/schedule.ts). */
  schedule?: RlStepSchedule;
}


export interface RlStepTimelines {
  captured: number;
  merged: number;
  tokensBefore: number;
  tokensAfter: number;
  driftRepaired: number;
  snaps?: Partial<Record<'text' | 'tokens' | 'tools' | 'author' | 'length', number>>;
  /** Chat episodes (task.chat): the full-render check's mismatches by kind, and unalignedModelIds. */
  chat?: Record<string, number>;
}

export type TrainingPhase = 'sft' | 'rl';

/** Held-out accuracy of one checkpoint. `step` counts within its phase (SFT step or RL step). */
export interface EvalPoint {
  step: number;
  phase: TrainingPhase;
  /** Accuracy with greedy decoding, in [0, 1]. */
  greedyAccuracy: number;
  /** Accuracy with sampling at the training temperature, in [0, 1]. */
  sampledAccuracy?: number;
  /** Grid world: greedy success rate per plan horizon, e.g. { "5": 0.62, "10": 0.41 }. */
  byHorizon?: Record<string, number>;
  /** Short note drawn next to the point, e.g. "final". */
  label?: string;
}

/** One SFT step's training loss (cross-entropy). */
export interface LossPoint {
  step: number;
  loss: number;
}

/** A reference accuracy to compare the run against (e.g. "SFT only", "SFT + more SFT"), drawn as a horizontal rule. */
export interface BaselinePoint {
  label: string;
  /** Held-out accuracy, in [0, 1]. */
  accuracy: number;
  /** Standard error of `accuracy`; drawn as a band around the rule. */
  stderr?: number;
}

/** One step of the rejection-sampling fine-tuning baseline (compare.rft). */
export interface RftStepMetrics {
  step: number;
  /** Mean reward and share correct of the step's rollout (the baseline's own policy). */
  meanReward: number;
  accuracy: number;
  /** Samples fitted (those of the correct episodes). */
  trainedSamples: number;
  loss: number;
}

/** One compared policy on the test problems, evaluated once after training. */
export interface TestMetrics {
  /** sftOnly, rl, moreSft, filteredSft or rft. */
  policy: string;
  greedyAccuracy: number;
  stderr: number;
  sampledAccuracy?: number;
  /** pass@1...pass@k of sampled episodes (eval.passAtK). */
  passAtK?: number[];
  /** Share of greedy acts that called the calculator. */
  actToolRate?: number;
}

/** Everything one run's curves are drawn from; each list sorted by step (baselines, test: file order). */
export interface RunMetrics {
  rl: RlStepMetrics[];
  evals: EvalPoint[];
  sftLoss: LossPoint[];
  baselines: BaselinePoint[];
  rft: RftStepMetrics[];
  test: TestMetrics[];
}

/** One line of the metrics file. */
export type MetricsLine =
  | ({ kind: 'rl' } & RlStepMetrics)
  | ({ kind: 'eval' } & EvalPoint)
  | ({ kind: 'sft-loss' } & LossPoint)
  | ({ kind: 'baseline' } & BaselinePoint)
  | ({ kind: 'rft' } & RftStepMetrics)
  | ({ kind: 'test' } & TestMetrics);

export type MetricsKind = MetricsLine['kind'];
export const METRICS_KINDS: readonly MetricsKind[] = ['rl', 'eval', 'sft-loss', 'baseline', 'rft', 'test'];

/** The text of one line of the metrics file (no trailing newline); what the training run appends. */
export function formatMetricsLine(line: MetricsLine): string {
  return JSON.stringify(line);
}

/** What makes a line unique (a later line with the same key replaces it): the writer appends each key once. */
export function metricsLineKey(line: MetricsLine): string {
  switch (line.kind) {
    case 'rl':
    case 'sft-loss':
    case 'rft':
      return `${line.kind}:${line.step}`;
    case 'test':
      return `test:${line.policy}`;
    case 'eval':
      return `eval:${line.phase}:${line.step}`;
    case 'baseline':
      return `baseline:${line.label}`;
  }
}
