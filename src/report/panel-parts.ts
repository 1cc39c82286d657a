/**
 * Building blocks for the curve panels: long-format rows and the vega-lite layers drawn from them.
 * Every layer carries its own inline data, so a panel is just a list of layers.
 */
import type { TopLevelSpec } from 'vega-lite/build/index';
import { legendColumns } from './legend-layout';

/** Any spec that may sit inside a concat; the panels are layer specs of this type. */
export type PanelSpec = Extract<TopLevelSpec, { concat: unknown }>['concat'][number];
export type LayerPart = Extract<PanelSpec, { layer: unknown }>['layer'][number];

/** One plotted value: `series` names the legend entry. */
export interface Row {
  x: number;
  value: number;
  series: string;
  label?: string;
}

/** Tableau 10 (vega's default), handed out in legend order. */
export const PALETTE = ['#4c78a8', '#f58518', '#54a24b', '#e45756', '#b279a2', '#72b7b2', '#9d755d', '#eeca3b', '#ff9da6', '#bab0ac'];

export const LEGEND_FONT_SIZE = 12;

/** The series of one panel, in legend order, with their colours, and how its legend wraps. */
export interface ColorKey {
  domain: string[];
  range: string[];
  legendColumns: number;
}

/** `panelWidth`: the plot width the legend must fit under (Infinity: one row). */
export function colorKey(series: readonly string[], panelWidth: number): ColorKey {
  return {
    domain: [...series],
    range: series.map((_, i) => PALETTE[i % PALETTE.length]!),
    legendColumns: legendColumns(series, panelWidth, LEGEND_FONT_SIZE),
  };
}

export function colorOf(key: ColorKey, series: string): string {
  return key.range[key.domain.indexOf(series)] ?? '#333333';
}

/** Rows whose value can be drawn; NaN stands for a value the run logged as null (see run-metrics.ts). */
export function finiteRows(rows: readonly Row[]): Row[] {
  return rows.filter((r) => Number.isFinite(r.value) && Number.isFinite(r.x));
}

/**
 * A y domain around a series that never changes (a single step, a constant loss): vega would
 * otherwise draw a zero-height scale with six-decimal tick labels. Undefined when the values vary.
 */
export function flatDomain(values: readonly number[]): [number, number] | undefined {
  const finite = values.filter(Number.isFinite);
  const v = finite[0];
  if (v === undefined || finite.some((x) => x !== v)) return undefined;
  const pad = v === 0 ? 1 : Math.abs(v) / 2;
  return [v - pad, v + pad];
}

/** Points mark each value only while there are few enough to tell apart. */
const POINTS_UP_TO = 40;

export interface LineStyle {
  strokeWidth?: number;
  opacity?: number;
  strokeDash?: number[];
  /** Draw a point at every value; default: only for short series. */
  points?: boolean;
}

export interface AxisStyle {
  title: string;
  /** d3 format of tick labels, e.g. ".0%". */
  format?: string;
  domain?: [number, number];
  /** A second y axis on the right (for a layer whose y scale is independent). */
  right?: boolean;
  /** Colour of the axis title, matching its series when two y axes share a panel. */
  titleColor?: string;
  zero?: boolean;
}

export function xEncoding(title: string) {
  // Steps are whole numbers: integer ticks, also when all points share one step.
  return { field: 'x', type: 'quantitative', title, scale: { zero: false, nice: false }, axis: { tickMinStep: 1, format: 'd' } } as const;
}

function yEncoding(axis: AxisStyle) {
  return {
    field: 'value',
    type: 'quantitative',
    title: axis.title,
    scale: { zero: axis.zero ?? false, ...(axis.domain ? { domain: axis.domain } : {}) },
    axis: {
      ...(axis.format ? { format: axis.format } : {}),
      ...(axis.right ? { orient: 'right' as const } : {}),
      ...(axis.titleColor ? { titleColor: axis.titleColor } : {}),
    },
  } as const;
}

function colorEncoding(key: ColorKey) {
  return {
    field: 'series',
    type: 'nominal',
    scale: { domain: key.domain, range: key.range },
    // Full opacity: the legend would otherwise take it from translucent layers (raw reward, stderr bands).
    legend: {
      title: null,
      orient: 'bottom',
      direction: 'horizontal',
      columns: key.legendColumns,
      symbolType: 'stroke',
      symbolStrokeWidth: 3,
      symbolOpacity: 1,
      labelFontSize: LEGEND_FONT_SIZE,
      labelLimit: 260,
    },
  } as const;
}

/** A line through `rows` (one series or several), coloured by series. */
export function lineLayer(rows: readonly Row[], xTitle: string, axis: AxisStyle, key: ColorKey, style: LineStyle = {}): LayerPart {
  const points = style.points ?? rows.length <= POINTS_UP_TO;
  return {
    data: { values: rows.map((r) => ({ ...r })) },
    mark: {
      type: 'line',
      strokeWidth: style.strokeWidth ?? 2,
      ...(style.opacity !== undefined ? { opacity: style.opacity } : {}),
      ...(style.strokeDash ? { strokeDash: style.strokeDash } : {}),
      ...(points ? { point: { size: 28, filled: true } } : {}),
    },
    encoding: { x: xEncoding(xTitle), y: yEncoding(axis), color: colorEncoding(key) },
  };
}

/** Text next to labelled points (EvalPoint.label). */
export function pointLabelLayer(rows: readonly Row[]): LayerPart {
  return {
    data: { values: rows.filter((r) => r.label).map((r) => ({ ...r })) },
    mark: { type: 'text', dy: -9, fontSize: 10, color: '#333333' },
    encoding: { x: { field: 'x', type: 'quantitative' }, y: { field: 'value', type: 'quantitative' }, text: { field: 'label' } },
  };
}

/** Horizontal reference rules (baselines), coloured by series, with an optional ±stderr band. */
export function ruleLayers(rules: ReadonlyArray<{ series: string; value: number; stderr?: number }>, key: ColorKey): LayerPart[] {
  const values = rules.map((r) => ({ series: r.series, value: r.value, lo: r.value - (r.stderr ?? 0), hi: r.value + (r.stderr ?? 0) }));
  const color = { ...colorEncoding(key) };
  const banded = values.filter((v) => v.hi > v.lo);
  const layers: LayerPart[] = [];
  if (banded.length > 0) {
    layers.push({
      data: { values: banded },
      mark: { type: 'rect', opacity: 0.12 },
      encoding: { x: { value: 0 }, x2: { value: 'width' }, y: { field: 'lo', type: 'quantitative' }, y2: { field: 'hi' }, color },
    });
  }
  layers.push({
    data: { values },
    mark: { type: 'rule', strokeDash: [6, 4], strokeWidth: 1.5 },
    encoding: { y: { field: 'value', type: 'quantitative' }, color },
  });
  return layers;
}

/** The dashed vertical rule where RL takes over from SFT, labelled at the top. */
export function phaseBoundaryLayers(x: number): LayerPart[] {
  const data = { values: [{ x, text: 'RL starts' }] };
  return [
    { data, mark: { type: 'rule', strokeDash: [3, 3], color: '#888888' }, encoding: { x: { field: 'x', type: 'quantitative' } } },
    {
      data,
      mark: { type: 'text', align: 'left', baseline: 'top', dx: 4, dy: 4, fontSize: 10, color: '#666666' },
      encoding: { x: { field: 'x', type: 'quantitative' }, y: { value: 0 }, text: { field: 'text' } },
    },
  ];
}
