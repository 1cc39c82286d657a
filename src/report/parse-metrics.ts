/**
 * Reads the tagged JSON-lines metrics file described in run-metrics.ts into RunMetrics.
 * Every malformed line is reported with its line number and field, all at once, so whoever
 * writes the file fixes it in one round.
 */
import { z } from 'zod';
import {
  METRICS_KINDS,
  type BaselinePoint,
  type EvalPoint,
  type LossPoint,
  type MetricsKind,
  type MetricsLine,
  type RftStepMetrics,
  type RlStepMetrics,
  type TestMetrics,
  type RunMetrics,
} from './run-metrics';

export interface MetricsProblem {
  /** 1-based line number in the file. */
  line: number;
  /** Dotted path of the offending field ("seconds.train"); "" when the line as a whole is wrong. */
  field: string;
  message: string;
}

/** The file had malformed lines; `problems` names each one. */
export class MetricsParseError extends Error {
  override readonly name = 'MetricsParseError';
  constructor(
    readonly source: string,
    readonly problems: readonly MetricsProblem[],
  ) {
    const shown = problems.slice(0, 20).map((p) => `  - line ${p.line}${p.field ? `, field "${p.field}"` : ''}: ${p.message}`);
    const more = problems.length > shown.length ? [`  ... and ${problems.length - shown.length} more`] : [];
    super(`invalid metrics file ${source}:\n${[...shown, ...more].join('\n')}`);
  }
}

const step = z.number().int().nonnegative();
/** null stands for NaN/Infinity (what JSON.stringify writes for them); see run-metrics.ts. */
const metric = z.number().nullable().transform((v) => v ?? Number.NaN);
const fraction = z.number().min(0).max(1).nullable().transform((v) => v ?? Number.NaN);
const nonNegativeMetric = z.number().nonnegative().nullable().transform((v) => v ?? Number.NaN);

const RlStepSchema = z.strictObject({
  kind: z.literal('rl'),
  step,
  meanReward: metric,
  accuracy: fraction.optional(),
  loss: metric,
  clipFrac: fraction.optional(),
  approxKl: metric.optional(),
  entropy: metric.optional(),
  gradNorm: nonNegativeMetric.optional(),
  responseLength: nonNegativeMetric.optional(),
  tokensTrained: nonNegativeMetric.optional(),
  rows: z.number().int().nonnegative().optional(),
  skipped: z.number().int().nonnegative().optional(),
  timelines: z
    .strictObject({
      captured: nonNegativeMetric,
      merged: nonNegativeMetric,
      tokensBefore: nonNegativeMetric,
      tokensAfter: nonNegativeMetric,
      driftRepaired: nonNegativeMetric,
      snaps: z.partialRecord(z.enum(['text', 'tokens', 'tools', 'author', 'length']), nonNegativeMetric).optional(),
      // Chat episodes (task.chat): the full-render check's mismatches by kind, and unalignedModelIds.
      chat: z.record(z.string(), nonNegativeMetric).optional(),
    })
    .optional(),
  tree: z
    .strictObject({
      nodes: nonNegativeMetric,
      leaves: nonNegativeMetric,
      generatedTokens: nonNegativeMetric,
      duplicates: nonNegativeMetric,
      promptTokens: nonNegativeMetric.optional(),
      cachedPromptTokens: nonNegativeMetric.optional(),
    })
    .optional(),
  // plan_h{H}_success_count / _total_count / _success_rate
  horizon: z.record(z.string().regex(/^plan_h\d+_(success_count|total_count|success_rate)$/), nonNegativeMetric).optional(),
  seconds: z.strictObject({ rollout: nonNegativeMetric, train: nonNegativeMetric, publish: nonNegativeMetric, sync: nonNegativeMetric.optional() }).optional(),
  schedule: z
    .strictObject({
      maxStaleness: z.number().int().nonnegative(),
      staleness: z.record(z.string().regex(/^-?\d+$/), z.number().int().nonnegative()),
      droppedStale: z.number().int().nonnegative(),
      partial: z.number().int().nonnegative().optional(),
      trainerIdle: fraction,
      inferenceIdle: fraction,
      capped: nonNegativeMetric.optional(),
      meanWeight: nonNegativeMetric.optional(),
    })
    .optional(),
});

const EvalSchema = z.strictObject({
  kind: z.literal('eval'),
  step,
  phase: z.enum(['sft', 'rl']),
  greedyAccuracy: fraction,
  sampledAccuracy: fraction.optional(),
  byHorizon: z.record(z.string().regex(/^\d+$/), fraction).optional(),
  label: z.string().min(1).optional(),
});

const SftLossSchema = z.strictObject({ kind: z.literal('sft-loss'), step, loss: metric });

const BaselineSchema = z.strictObject({
  kind: z.literal('baseline'),
  label: z.string().min(1),
  accuracy: z.number().min(0).max(1),
  stderr: z.number().nonnegative().optional(),
});

const RftSchema = z.strictObject({ kind: z.literal('rft'), step, meanReward: metric, accuracy: fraction, trainedSamples: z.number().int().nonnegative(), loss: metric });

const TestSchema = z.strictObject({
  kind: z.literal('test'),
  policy: z.string().min(1),
  greedyAccuracy: fraction,
  stderr: z.number().nonnegative(),
  sampledAccuracy: fraction.optional(),
  passAtK: z.array(fraction).optional(),
  actToolRate: fraction.optional(),
});

// Each schema must produce exactly its line type; a drift between the two fails to compile.
const SCHEMAS: { [K in MetricsKind]: z.ZodType<Extract<MetricsLine, { kind: K }>, unknown> } = {
  rl: RlStepSchema,
  eval: EvalSchema,
  'sft-loss': SftLossSchema,
  baseline: BaselineSchema,
  rft: RftSchema,
  test: TestSchema,
};

function isKind(value: unknown): value is MetricsKind {
  return typeof value === 'string' && (METRICS_KINDS as readonly string[]).includes(value);
}

/** Parses one line's text; returns the line or the problems with it. */
function parseLine(text: string, lineNo: number): MetricsLine | MetricsProblem[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return [{ line: lineNo, field: '', message: `not valid JSON (${(err as Error).message})` }];
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return [{ line: lineNo, field: '', message: 'expected a JSON object' }];
  }
  const kind = (raw as { kind?: unknown }).kind;
  if (!isKind(kind)) {
    return [{ line: lineNo, field: 'kind', message: `expected one of ${METRICS_KINDS.map((k) => `"${k}"`).join(', ')}, got ${JSON.stringify(kind) ?? 'nothing'}` }];
  }
  const result = SCHEMAS[kind].safeParse(raw);
  if (result.success) return result.data;
  return result.error.issues.map((issue) => {
    // An unknown key is reported at its own name, not at the object that holds it.
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const field = [...issue.path.map(String), ...keys.slice(0, 1)].join('.');
    return { line: lineNo, field, message: issue.message };
  });
}

/** Keeps the last entry per key, in order of first appearance. */
function lastPerKey<T>(items: readonly T[], key: (item: T) => string): T[] {
  const byKey = new Map<string, T>();
  for (const item of items) byKey.set(key(item), item);
  return [...byKey.values()];
}

const byStep = (a: { step: number }, b: { step: number }): number => a.step - b.step;

/** Groups parsed lines into RunMetrics: later duplicates win, each series sorted by step. */
export function collectRunMetrics(lines: readonly MetricsLine[]): RunMetrics {
  const rl: RlStepMetrics[] = [];
  const evals: EvalPoint[] = [];
  const sftLoss: LossPoint[] = [];
  const baselines: BaselinePoint[] = [];
  const rft: RftStepMetrics[] = [];
  const test: TestMetrics[] = [];
  for (const line of lines) {
    const { kind: _kind, ...fields } = line;
    if (line.kind === 'rl') rl.push(fields as RlStepMetrics);
    else if (line.kind === 'eval') evals.push(fields as EvalPoint);
    else if (line.kind === 'sft-loss') sftLoss.push(fields as LossPoint);
    else if (line.kind === 'rft') rft.push(fields as RftStepMetrics);
    else if (line.kind === 'test') test.push(fields as TestMetrics);
    else baselines.push(fields as BaselinePoint);
  }
  return {
    rl: lastPerKey(rl, (p) => String(p.step)).sort(byStep),
    evals: lastPerKey(evals, (p) => `${p.phase}:${p.step}`).sort((a, b) => (a.phase === b.phase ? a.step - b.step : a.phase === 'sft' ? -1 : 1)),
    sftLoss: lastPerKey(sftLoss, (p) => String(p.step)).sort(byStep),
    baselines: lastPerKey(baselines, (b) => b.label),
    rft: lastPerKey(rft, (p) => String(p.step)).sort(byStep),
    test: lastPerKey(test, (t) => t.policy),
  };
}

/**
 * Parses the text of a metrics file. Throws MetricsParseError naming every bad line and field.
 * An empty file parses to empty series; rendering is what refuses a run with nothing to draw.
 */
export function parseMetricsJsonl(text: string, source = 'input'): RunMetrics {
  const lines: MetricsLine[] = [];
  const problems: MetricsProblem[] = [];
  text.split(/\r?\n/).forEach((lineText, index) => {
    if (lineText.trim() === '') return;
    const parsed = parseLine(lineText, index + 1);
    if (Array.isArray(parsed)) problems.push(...parsed);
    else lines.push(parsed);
  });
  if (problems.length > 0) throw new MetricsParseError(source, problems);
  return collectRunMetrics(lines);
}
