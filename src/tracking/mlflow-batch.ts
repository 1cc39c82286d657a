/**
 * What a run sends MLflow, made from what it already records: the metrics file's lines
 * (src/report/run-metrics.ts) as metrics with explicit steps and the workflow's timestamps, the
 * resolved config flattened into parameters, and requests cut to MLflow's log-batch limits.
 * Pure: the same input always gives the same requests, so a retried request writes nothing new
 * (MLflow keeps a metric point once per key, step, timestamp and value; a parameter once per key).
 */
import type { MetricsLine } from '../report/run-metrics';
import type { JobMetricsLine } from './job-lines';

/** What a tracker logs: a run's metrics-file lines, or a planActJob's (job-lines.ts). */
export type TrackedLine = MetricsLine | JobMetricsLine;

/** MLflow's limits (mlflow/utils/validation.py): key length, parameter and tag values, one log-batch request. */
export const MLFLOW_LIMITS = { keyLength: 250, paramValue: 6000, tagValue: 8000, metricsPerBatch: 1000, paramsTagsPerBatch: 100, entitiesPerBatch: 1000 } as const;

export interface MlflowMetric {
  key: string;
  value: number;
  step: number;
  /** Milliseconds since the epoch: the workflow's time when the point was made. */
  timestamp: number;
}

export interface MlflowKeyValue {
  key: string;
  value: string;
}

export interface MlflowBatch {
  metrics?: MlflowMetric[];
  params?: MlflowKeyValue[];
  tags?: MlflowKeyValue[];
}

/** A key MLflow accepts: letters, digits and _ - . / and space, at most 250 characters. */
export function mlflowKey(raw: string): string {
  return raw.replace(/[^A-Za-z0-9_\-./ ]/g, '_').replace(/\.\.+/g, '.').replace(/^\/+/, '').slice(0, MLFLOW_LIMITS.keyLength);
}

/** Numeric leaves of `value` under `prefix` (objects by key, arrays from 1), e.g. seconds/rollout, passAtK/1. */
function numericLeaves(prefix: string, value: unknown, out: Array<[string, number]>): void {
  if (typeof value === 'number') {
    // NaN and ±Infinity reach the metrics file as null (JSON); MLflow's JSON API takes neither: left out.
    if (Number.isFinite(value)) out.push([prefix, value]);
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => numericLeaves(`${prefix}/${i + 1}`, v, out));
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) numericLeaves(`${prefix}/${k}`, v, out);
  }
}

/** A metrics-file line's points: key prefix by kind (sft, eval/<phase>, rl, rft, baseline/<label>, test/<policy>), its step or 0. */
export function metricsOfLine(line: TrackedLine, timestamp: number): MlflowMetric[] {
  let prefix: string;
  const { kind, ...rest } = line as TrackedLine & Record<string, unknown>;
  switch (line.kind) {
    case 'sft-loss':
      prefix = 'sft';
      break;
    case 'eval':
      prefix = `eval/${line.phase}`;
      break;
    case 'baseline':
      prefix = `baseline/${line.label}`;
      break;
    case 'test':
      prefix = `test/${line.policy}`;
      break;
    default:
      prefix = kind;
  }
  // Identifiers are in the key or the step, not values.
  const { step, phase: _phase, label: _label, policy: _policy, ...values } = rest;
  const leaves: Array<[string, number]> = [];
  for (const [k, v] of Object.entries(values)) numericLeaves(`${prefix}/${k}`, v, leaves);
  return leaves.map(([key, value]) => ({ key: mlflowKey(key), value, step: typeof step === 'number' ? step : 0, timestamp }));
}

/** A parameter value within MLflow's limit; a longer one is cut, saying so (the same cut every time). */
function paramValue(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  if (s.length <= MLFLOW_LIMITS.paramValue) return s;
  const note = ` …(cut, ${s.length} characters)`;
  return s.slice(0, MLFLOW_LIMITS.paramValue - note.length) + note;
}

/** The config flattened into parameters: dotted keys (rl.learningRate), arrays and scalars as their JSON. */
export function paramsOfConfig(config: unknown): MlflowKeyValue[] {
  const out: MlflowKeyValue[] = [];
  const walk = (prefix: string, v: unknown): void => {
    if (v === undefined) return;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const entries = Object.entries(v);
      if (entries.length === 0) out.push({ key: mlflowKey(prefix), value: '{}' });
      for (const [k, x] of entries) walk(prefix ? `${prefix}.${k}` : k, x);
      return;
    }
    out.push({ key: mlflowKey(prefix), value: paramValue(v) });
  };
  walk('', config);
  return out;
}

/** A tag value within MLflow's limit. */
export function tagValue(s: string): string {
  return s.length <= MLFLOW_LIMITS.tagValue ? s : s.slice(0, MLFLOW_LIMITS.tagValue);
}

/** `batch` cut into log-batch requests within MLflow's limits, in order (parameters and tags first). */
export function splitBatch(batch: MlflowBatch): MlflowBatch[] {
  const out: MlflowBatch[] = [];
  const kv = [...(batch.params ?? []).map((p) => ['params', p] as const), ...(batch.tags ?? []).map((t) => ['tags', t] as const)];
  for (let i = 0; i < kv.length; i += MLFLOW_LIMITS.paramsTagsPerBatch) {
    const part = kv.slice(i, i + MLFLOW_LIMITS.paramsTagsPerBatch);
    const params = part.filter(([k]) => k === 'params').map(([, v]) => v);
    const tags = part.filter(([k]) => k === 'tags').map(([, v]) => v);
    out.push({ ...(params.length ? { params } : {}), ...(tags.length ? { tags } : {}) });
  }
  const metrics = batch.metrics ?? [];
  for (let i = 0; i < metrics.length; i += MLFLOW_LIMITS.metricsPerBatch) out.push({ metrics: metrics.slice(i, i + MLFLOW_LIMITS.metricsPerBatch) });
  return out;
}
