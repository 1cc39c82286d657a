/** Training curves as pictures: the metrics file format, its parser, and the PNG/SVG renderer. */
export * from './run-metrics';
export { parseMetricsJsonl, collectRunMetrics, MetricsParseError, type MetricsProblem } from './parse-metrics';
export { buildCurvesSpec, NoCurvesError, DEFAULT_SIZE, type CurvesOptions } from './curves-spec';
export { renderCurvesPng, renderCurvesSvg, type RenderCurvesOptions } from './render-curves';
