/**
 * The vega-lite spec of a run's curves: the panels the run has data for, in a grid, under a
 * title that summarises the run. Pure: no vega, no I/O.
 */
import type { TopLevelSpec } from 'vega-lite/build/index';
import { accuracyPanel, lossPanel, policyShiftPanel, rewardPanel, schedulePanel, type Panel, type PanelContext } from './curve-panels';
import type { PanelSpec } from './panel-parts';
import type { RunMetrics } from './run-metrics';
import { runTimeline } from './timeline';

export interface CurvesOptions {
  /** Picture size in pixels; the PNG is exactly this size. Default 1200 x 800. */
  width?: number;
  height?: number;
  /** Heading of the picture. Default "Training curves". */
  title?: string;
  /** Steps in the reward's rolling mean. Default: about a tenth of the RL steps, 2 to 25. */
  rollingWindow?: number;
}

export const DEFAULT_SIZE = { width: 1200, height: 800 } as const;

/** Fonts asked for by name, first found wins; fonts.ts makes sure resvg has the first one. */
export const FONT_FAMILY = 'DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif';

/** Thrown when a run has nothing to draw, rather than writing an empty picture. */
export class NoCurvesError extends Error {
  override readonly name = 'NoCurvesError';
}

/**
 * The panels this run has data for, in reading order: RL panels on the left, whole-run panels on
 * the right. `panelWidth` (plot width in px) only decides how legends wrap.
 */
export function runPanels(run: RunMetrics, options: CurvesOptions = {}, panelWidth = Number.POSITIVE_INFINITY): Panel[] {
  const ctx: PanelContext = { timeline: runTimeline(run), width: panelWidth, ...(options.rollingWindow !== undefined ? { rollingWindow: options.rollingWindow } : {}) };
  const panels = [rewardPanel(run, ctx), accuracyPanel(run, ctx), policyShiftPanel(run, ctx), lossPanel(run, ctx), schedulePanel(run, ctx)];
  const present = panels.filter((p): p is Panel => p !== null);
  if (present.length === 0) {
    const what = run.baselines.length > 0 ? 'only baselines' : 'no lines at all';
    throw new NoCurvesError(`nothing to plot: the run has no RL steps, eval points or SFT losses (${what})`);
  }
  return present;
}

export interface PanelSize {
  width: number;
  height: number;
}

/** Below this a panel is unreadable anyway; a picture too small for it is scaled down instead. */
export const MIN_PANEL: PanelSize = { width: 120, height: 80 };

export interface GridLayout {
  columns: number;
  rows: number;
}

export function gridLayout(panelCount: number): GridLayout {
  const columns = panelCount >= 2 ? 2 : 1;
  return { columns, rows: Math.ceil(panelCount / columns) };
}

/**
 * A first guess of each panel's plotting area for a picture of the given size; the renderer
 * measures the result and corrects it (axes, legends and titles take space vega decides).
 */
export function estimatePanelSize(panelCount: number, width: number, height: number): PanelSize {
  const { columns, rows } = gridLayout(panelCount);
  const perColumnChrome = 130; // y axis labels and title on both sides
  const perRowChrome = 110; // panel title, x axis, legend
  const pictureChrome = 70; // picture title, subtitle, padding
  return {
    width: Math.max(MIN_PANEL.width, Math.floor((width - 24 - columns * perColumnChrome) / columns)),
    height: Math.max(MIN_PANEL.height, Math.floor((height - pictureChrome - rows * perRowChrome) / rows)),
  };
}

/** One line that says what the run was: the last step logged in each phase and the last held-out accuracy. */
export function runSummary(run: RunMetrics): string {
  const parts: string[] = [];
  const lastStep = (steps: number[]): number => steps.reduce((a, b) => Math.max(a, b), -1);
  const sftSteps = lastStep([...run.sftLoss.map((p) => p.step), ...run.evals.filter((e) => e.phase === 'sft').map((e) => e.step)]);
  if (sftSteps >= 0) parts.push(`SFT to step ${sftSteps}`);
  const rlSteps = lastStep([...run.rl.map((m) => m.step), ...run.evals.filter((e) => e.phase === 'rl').map((e) => e.step)]);
  if (rlSteps >= 0) parts.push(`RL to step ${rlSteps}`);
  const last = run.evals.filter((e) => Number.isFinite(e.greedyAccuracy)).at(-1);
  if (last) parts.push(`last held-out greedy accuracy ${(last.greedyAccuracy * 100).toFixed(1)}% (${last.phase.toUpperCase()} step ${last.step})`);
  return parts.join('  ·  ');
}

function sized(panel: Panel, size: PanelSize): PanelSpec {
  return {
    // frame 'group': titles start where the plot does, whatever the width of its axis labels.
    title: { text: panel.title, ...(panel.subtitle ? { subtitle: panel.subtitle } : {}), anchor: 'start', frame: 'group', fontSize: 14, subtitleFontSize: 11, offset: 8 },
    width: size.width,
    height: size.height,
    layer: panel.layers,
    ...(panel.dualAxis ? { resolve: { scale: { y: 'independent' } } } : {}),
  };
}

/** The spec with panels of exactly `size`; the renderer uses it to fit the picture to the requested size. */
export function curvesSpecWithPanelSize(run: RunMetrics, options: CurvesOptions, size: PanelSize): TopLevelSpec {
  const panels = runPanels(run, options, size.width);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: options.title ?? 'Training curves', subtitle: runSummary(run), anchor: 'start', fontSize: 18, subtitleFontSize: 12, offset: 14 },
    background: 'white',
    padding: 12,
    columns: gridLayout(panels.length).columns,
    spacing: { row: 24, column: 36 },
    concat: panels.map((p) => sized(p, size)),
    // Each panel has its own series, so its own colour scale and legend.
    resolve: { scale: { color: 'independent' }, legend: { color: 'independent' } },
    config: {
      font: FONT_FAMILY,
      view: { stroke: '#dddddd' },
      axis: { labelFontSize: 11, titleFontSize: 12, titleFontWeight: 'normal', gridColor: '#eeeeee' },
      // A one-row picture has tall panels; more ticks than this are clutter, not precision.
      axisY: { tickCount: 8 },
      legend: { symbolSize: 200 },
    },
  };
}

/** The vega-lite spec of the run's curves at an estimated panel size (the renderer refines it). */
export function buildCurvesSpec(run: RunMetrics, options: CurvesOptions = {}): TopLevelSpec {
  const width = options.width ?? DEFAULT_SIZE.width;
  const height = options.height ?? DEFAULT_SIZE.height;
  return curvesSpecWithPanelSize(run, options, estimatePanelSize(runPanels(run, options).length, width, height));
}
