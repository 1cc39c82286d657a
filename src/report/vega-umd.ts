/**
 * Loads vega and vega-lite from the UMD bundles their packages ship, not from their ESM entry points.
 *
 * Why: vega 6 and vega-lite 6 are ESM only, and vega's graph has a top-level await (vega-canvas
 * does `await import('canvas')`). This project compiles to CommonJS, where `require()` of an ESM
 * graph with top-level await fails (ERR_REQUIRE_ASYNC_MODULE), TypeScript turns `import()` into
 * `require()`, and jest refuses ESM without --experimental-vm-modules. The UMD bundles are the
 * same code built as one self-contained script each (vega.js has no imports at all; vega-lite's
 * needs only "vega"), so evaluating them as CommonJS works in node and in jest alike.
 * Without node-canvas vega measures text by estimate, which is all SVG output needs.
 */
import fs from 'node:fs';
import path from 'node:path';
import type * as Vega from 'vega';
// vega-lite publishes its types only through package.json "exports", which this project's
// moduleResolution ("node") does not read; the path is type-only and erased from the output.
import type * as VegaLite from 'vega-lite/build/index';
import { vegaTextWidth, type VegaTextItem } from './text-width';

export type VegaModule = typeof Vega;
export type VegaLiteModule = typeof VegaLite;

interface CommonJsModule {
  exports: Record<string, unknown>;
}

/** The directory of a package's build/ folder, found through node's resolver (its ESM entry lives there). */
function buildDir(pkg: 'vega' | 'vega-lite'): string {
  return path.dirname(require.resolve(pkg));
}

/** Evaluates one UMD file in CommonJS mode; `deps` answers its require() calls. */
function evaluateUmd(file: string, deps: Readonly<Record<string, unknown>>): Record<string, unknown> {
  if (!fs.existsSync(file)) throw new Error(`UMD bundle not found: ${file} (are vega and vega-lite installed at the pinned versions?)`);
  // sourceURL: stack traces from inside vega name the bundle instead of an anonymous function.
  const source = `${fs.readFileSync(file, 'utf8')}\n//# sourceURL=${file}`;
  const mod: CommonJsModule = { exports: {} };
  const requireDep = (id: string): unknown => {
    if (id in deps) return deps[id];
    throw new Error(`${path.basename(file)} requires "${id}", which the UMD loader does not provide`);
  };
  // `define` is passed as undefined so the UMD header takes its CommonJS branch.
  const run = new Function('exports', 'module', 'require', 'define', source) as (...args: unknown[]) => void;
  run.call(mod.exports, mod.exports, mod, requireDep, undefined);
  return mod.exports;
}

/** vega's text measurement hook (exported by vega, absent from its typings); vl-convert sets it the same way. */
interface VegaTextMetrics {
  width: (item: VegaTextItem, text: unknown) => number;
}

let cached: { vega: VegaModule; vegaLite: VegaLiteModule } | undefined;

/**
 * vega and vega-lite, evaluated once per process (vega.js is 1.4 MB of source), with vega measuring
 * text by DejaVu Sans's real widths instead of its rough estimate (see text-width.ts).
 */
export function loadVega(): { vega: VegaModule; vegaLite: VegaLiteModule } {
  if (!cached) {
    const vega = evaluateUmd(path.join(buildDir('vega'), 'vega.js'), {}) as unknown as VegaModule;
    (vega as unknown as { textMetrics: VegaTextMetrics }).textMetrics.width = vegaTextWidth;
    const vegaLite = evaluateUmd(path.join(buildDir('vega-lite'), 'vega-lite.min.js'), { vega }) as unknown as VegaLiteModule;
    cached = { vega, vegaLite };
  }
  return cached;
}
