/**
 * The panels of the curves picture, one function each. A panel whose data the run does not have
 * is left out (null), so an SFT-only run still gets its accuracy and loss panels.
 */
import {
  colorKey,
  colorOf,
  finiteRows,
  flatDomain,
  lineLayer,
  phaseBoundaryLayers,
  pointLabelLayer,
  ruleLayers,
  type AxisStyle,
  type LayerPart,
  type Row,
} from './panel-parts';
import { defaultRollingWindow, trailingMean } from './rolling-mean';
import type { RlStepMetrics, RunMetrics } from './run-metrics';
import type { Timeline } from './timeline';

/** A panel before it is sized: its layers, title and whether some layer puts an axis on the right. */
export interface Panel {
  title: string;
  subtitle?: string;
  layers: LayerPart[];
  /** y scales are independent between layers (two y axes). */
  dualAxis: boolean;
}

/** What every panel builder needs besides the run. */
export interface PanelContext {
  timeline: Timeline;
  /** Plot width of a panel in px, for wrapping its legend (Infinity: one row). */
  width: number;
  /** Steps in the reward's rolling mean; default from defaultRollingWindow. */
  rollingWindow?: number;
}

const RL_STEP = 'RL step';

function rlRows(rl: readonly RlStepMetrics[], series: string, pick: (m: RlStepMetrics) => number | undefined): Row[] {
  return finiteRows(rl.flatMap((m) => {
    const value = pick(m);
    return value === undefined ? [] : [{ x: m.step, value, series }];
  }));
}

/**
 * (1) Mean rollout reward per RL step and its trailing rolling mean; rollout accuracy, if logged,
 * only as a rolling mean (raw, it is a second noisy line on top of the reward's).
 */
export function rewardPanel(run: RunMetrics, ctx: PanelContext): Panel | null {
  const raw = rlRows(run.rl, 'mean reward', (m) => m.meanReward);
  if (raw.length === 0) return null;
  const window = ctx.rollingWindow ?? defaultRollingWindow(raw.length);
  const rolling = (rows: Row[], series: string): Row[] =>
    rows.length >= 2 ? trailingMean(rows.map((r) => r.value), window).map((value, i) => ({ x: rows[i]!.x, value, series })) : [];
  const smooth = rolling(raw, 'mean reward (rolling)');
  const accuracy = rolling(rlRows(run.rl, '', (m) => m.accuracy), 'rollout accuracy (rolling)');
  const key = colorKey([raw, smooth, accuracy].filter((rows) => rows.length > 0).map((rows) => rows[0]!.series), ctx.width);
  const domain = flatDomain([...raw, ...smooth, ...accuracy].map((r) => r.value));
  const axis: AxisStyle = { title: 'reward', ...(domain ? { domain } : {}) };
  const layers = [lineLayer(raw, RL_STEP, axis, key, { strokeWidth: 1, opacity: smooth.length > 0 ? 0.5 : 1 })];
  if (smooth.length > 0) layers.push(lineLayer(smooth, RL_STEP, axis, key, { strokeWidth: 2.5, points: false }));
  if (accuracy.length > 0) layers.push(lineLayer(accuracy, RL_STEP, axis, key, { strokeWidth: 2, strokeDash: [5, 3], points: false }));
  const subtitle = smooth.length > 0 ? `rolling = trailing mean over ${window} steps` : undefined;
  return { title: 'Rollout reward', ...(subtitle ? { subtitle } : {}), layers, dualAxis: false };
}

/** (2) Held-out accuracy (greedy, sampled) over the whole run, with baselines as horizontal rules. */
export function accuracyPanel(run: RunMetrics, ctx: PanelContext): Panel | null {
  const { timeline } = ctx;
  const greedy = finiteRows(run.evals.map((e) => ({ x: timeline.x(e.phase, e.step), value: e.greedyAccuracy, series: 'greedy', ...(e.label ? { label: e.label } : {}) })));
  const sampled = finiteRows(run.evals.flatMap((e) => (e.sampledAccuracy === undefined ? [] : [{ x: timeline.x(e.phase, e.step), value: e.sampledAccuracy, series: 'sampled' }])));
  if (greedy.length === 0 && sampled.length === 0) return null;
  const baselines = run.baselines.map((b) => ({ series: b.label, value: b.accuracy, ...(b.stderr !== undefined ? { stderr: b.stderr } : {}) }));
  const key = colorKey([...(greedy.length > 0 ? ['greedy'] : []), ...(sampled.length > 0 ? ['sampled'] : []), ...baselines.map((b) => b.series)], ctx.width);
  const axis: AxisStyle = { title: 'held-out accuracy', format: '.0%', domain: [0, 1] };
  const layers: LayerPart[] = [];
  if (baselines.length > 0) layers.push(...ruleLayers(baselines, key));
  // Eval points are few and each is a checkpoint, so each gets a marker, unless they crowd into a band.
  layers.push(lineLayer([...greedy, ...sampled], timeline.title, axis, key, { points: Math.max(greedy.length, sampled.length) <= 60 }));
  if (greedy.some((r) => r.label)) layers.push(pointLabelLayer(greedy));
  if (timeline.rlStart !== undefined) layers.push(...phaseBoundaryLayers(timeline.rlStart));
  return { title: 'Held-out accuracy', layers, dualAxis: false };
}

/**
 * Two series that share the x axis but not the y scale (SFT cross-entropy is around 1, a GRPO loss
 * is around 0 and may be negative): each gets its own axis, left and right, titled in its colour.
 */
function twoAxisPanel(
  title: string,
  xTitle: string,
  width: number,
  left: { name: string; rows: Row[] },
  right: { name: string; rows: Row[] },
  extra: LayerPart[],
): Panel | null {
  const present = [left, right].filter((s) => s.rows.length > 0);
  if (present.length === 0) return null;
  const key = colorKey(present.map((s) => s.name), width);
  const dualAxis = present.length === 2;
  const layers = present.map((s, i) => {
    const domain = flatDomain(s.rows.map((r) => r.value));
    const axis: AxisStyle = { title: s.name, right: i === 1, ...(dualAxis ? { titleColor: colorOf(key, s.name) } : {}), ...(domain ? { domain } : {}) };
    return lineLayer(s.rows, xTitle, axis, key);
  });
  return { title, layers: [...layers, ...extra], dualAxis };
}

/** (3) SFT loss and RL loss over the whole run. */
export function lossPanel(run: RunMetrics, ctx: PanelContext): Panel | null {
  const { timeline } = ctx;
  const sft = finiteRows(run.sftLoss.map((p) => ({ x: timeline.x('sft', p.step), value: p.loss, series: 'SFT loss' })));
  const rl = finiteRows(run.rl.map((m) => ({ x: timeline.x('rl', m.step), value: m.loss, series: 'RL loss' })));
  const boundary = timeline.rlStart !== undefined && sft.length > 0 && rl.length > 0 ? phaseBoundaryLayers(timeline.rlStart) : [];
  return twoAxisPanel('Training loss', timeline.title, ctx.width, { name: 'SFT loss', rows: sft }, { name: 'RL loss', rows: rl }, boundary);
}

/** (4) How far each RL update moved the policy: clipped-token fraction and approximate KL. */
/**
 * (5) Asynchronous RL only: per RL step the share of wall time the trainer waited for a rollout and
 * the mean staleness of the samples it trained (versions between the trained policy and theirs).
 */
export function schedulePanel(run: RunMetrics, ctx: PanelContext): Panel | null {
  const steps = run.rl.filter((m) => m.schedule);
  if (steps.length === 0) return null;
  const meanStaleness = (m: RlStepMetrics): number | undefined => {
    const entries = Object.entries(m.schedule!.staleness);
    const n = entries.reduce((a, [, c]) => a + c, 0);
    return n === 0 ? undefined : entries.reduce((a, [k, c]) => a + Number(k) * c, 0) / n;
  };
  return twoAxisPanel(
    'Asynchronous schedule',
    RL_STEP,
    ctx.width,
    { name: 'trainer idle share', rows: rlRows(steps, 'trainer idle share', (m) => m.schedule!.trainerIdle) },
    { name: 'mean staleness (versions)', rows: rlRows(steps, 'mean staleness (versions)', meanStaleness) },
    [],
  );
}

export function policyShiftPanel(run: RunMetrics, ctx: PanelContext): Panel | null {
  return twoAxisPanel(
    'RL update size',
    RL_STEP,
    ctx.width,
    { name: 'clip fraction', rows: rlRows(run.rl, 'clip fraction', (m) => m.clipFrac) },
    { name: 'approx. KL', rows: rlRows(run.rl, 'approx. KL', (m) => m.approxKl) },
    [],
  );
}
