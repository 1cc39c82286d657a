/**
 * Draws a run's curves: vega-lite spec -> vega (SVG, headless) -> resvg (PNG).
 * The picture is fitted to the requested size: vega sizes axes, legends and titles itself, so the
 * spec is rendered at an estimated panel size, the space around the panels is measured, and the
 * panels are resized to fill what is left; any remainder (a picture too small for its panels) is
 * absorbed by scaling the SVG's viewBox, so the PNG is exactly width x height.
 */
import { renderAsync } from '@resvg/resvg-js';
import type { TopLevelSpec } from 'vega-lite/build/index';
import { curvesSpecWithPanelSize, DEFAULT_SIZE, estimatePanelSize, FONT_FAMILY, gridLayout, MIN_PANEL, runPanels, type CurvesOptions, type PanelSize } from './curves-spec';
import { assertTextRenders, curveFontOptions } from './fonts';
import type { RunMetrics } from './run-metrics';
import { loadVega } from './vega-umd';

export interface RenderCurvesOptions extends CurvesOptions {
  /** TrueType/OpenType files for the text; default DejaVu Sans where installed, plus system fonts. */
  fontFiles?: readonly string[];
}

/** vega's SVG for a vega-lite spec, at vega's own size. */
export async function vegaLiteToSvg(spec: TopLevelSpec): Promise<string> {
  const { vega, vegaLite } = loadVega();
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

const ROOT_SIZE = /^<svg\b[^>]*?\swidth="([\d.]+)"\s+height="([\d.]+)"/;

function svgSize(svg: string): { width: number; height: number } {
  const m = ROOT_SIZE.exec(svg);
  if (!m) throw new Error(`unexpected SVG from vega: no width/height on the root element (${svg.slice(0, 120)}...)`);
  return { width: Number(m[1]), height: Number(m[2]) };
}

/** Sets the root's size to exactly width x height; its viewBox (vega's own size) scales into it, centred. */
function withRootSize(svg: string, width: number, height: number): string {
  return svg.replace(ROOT_SIZE, (whole) =>
    whole.replace(/\swidth="[\d.]+"\s+height="[\d.]+"/, ` width="${width}" height="${height}" preserveAspectRatio="xMidYMid meet"`),
  );
}

const FIT_PASSES = 2;

function requestedSize(options: CurvesOptions): { width: number; height: number } {
  const width = options.width ?? DEFAULT_SIZE.width;
  const height = options.height ?? DEFAULT_SIZE.height;
  for (const [name, v] of [['width', width], ['height', height]] as const) {
    if (!Number.isInteger(v) || v < 200 || v > 10_000) throw new Error(`curves ${name} must be an integer from 200 to 10000 pixels, got ${v}`);
  }
  return { width, height };
}

/** The curves as an SVG document of exactly the requested size. Throws NoCurvesError for a run with nothing to draw. */
export async function renderCurvesSvg(run: RunMetrics, options: CurvesOptions = {}): Promise<string> {
  const { width, height } = requestedSize(options);
  const panelCount = runPanels(run, options).length;
  const { columns, rows } = gridLayout(panelCount);
  let size: PanelSize = estimatePanelSize(panelCount, width, height);
  let svg = await vegaLiteToSvg(curvesSpecWithPanelSize(run, options, size));
  // Axes, titles and legends take what vega decides; give the panels the difference. A second
  // correction catches legends that wrapped into more rows once their panels got narrower.
  for (let pass = 0; pass < FIT_PASSES; pass++) {
    const natural = svgSize(svg);
    const next: PanelSize = {
      width: Math.max(MIN_PANEL.width, Math.floor(size.width + (width - natural.width) / columns)),
      height: Math.max(MIN_PANEL.height, Math.floor(size.height + (height - natural.height) / rows)),
    };
    if (next.width === size.width && next.height === size.height) break;
    size = next;
    svg = await vegaLiteToSvg(curvesSpecWithPanelSize(run, options, size));
  }
  return withRootSize(svg, width, height);
}

/** The curves as a PNG of exactly the requested size (default 1200 x 800). */
export async function renderCurvesPng(run: RunMetrics, options: RenderCurvesOptions = {}): Promise<Buffer> {
  const font = curveFontOptions(options.fontFiles);
  assertTextRenders(font, FONT_FAMILY);
  const svg = await renderCurvesSvg(run, options);
  const image = await renderAsync(svg, { font, background: 'white', fitTo: { mode: 'original' } });
  return image.asPng();
}
