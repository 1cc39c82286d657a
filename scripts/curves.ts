/**
 * Draws a run's training curves from its metrics file (tagged JSON lines, see
 * src/report/run-metrics.ts) into a PNG, and prints the PNG's path:
 *
 *   npm run curves -- --metrics run.jsonl --out curves.png [--width 1200] [--height 800] [--title "..."]
 *                     [--rolling-window 10] [--font /path/to/font.ttf]
 *
 * Exit status 2 for a missing or malformed metrics file or one with nothing to draw, with the reason on stderr.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { MetricsParseError, NoCurvesError, parseMetricsJsonl, renderCurvesPng } from '../src/report';
import { runMain } from './lib/run-main';

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

/** The renderer's limits, checked here so a bad flag is a usage error, not a stack trace. */
function pixels(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 200 || n > 10_000) throw new InvalidArgumentError('expected an integer from 200 to 10000');
  return n;
}

interface CurvesCliOptions {
  metrics: string;
  out: string;
  width?: number;
  height?: number;
  title?: string;
  rollingWindow?: number;
  font?: string[];
}

async function main(): Promise<number> {
  const opts = new Command()
    .name('curves')
    .description('Render the training curves of a run as a PNG')
    .requiredOption('--metrics <file.jsonl>', 'metrics file: one {"kind": "rl" | "eval" | "sft-loss" | "baseline", ...} object per line')
    .requiredOption('--out <file.png>', 'PNG to write')
    .option('--width <px>', 'picture width (default 1200)', pixels)
    .option('--height <px>', 'picture height (default 800)', pixels)
    .option('--title <text>', 'picture title (default "Training curves")')
    .option('--rolling-window <steps>', 'steps in the reward rolling mean (default: about a tenth of the RL steps)', positiveInt)
    .option('--font <file...>', 'TrueType/OpenType font files for the text (default: DejaVu Sans where installed, and system fonts)')
    .parse()
    .opts<CurvesCliOptions>();

  const out = path.resolve(opts.out);
  if (!fs.existsSync(opts.metrics)) {
    console.error(`metrics file not found: ${opts.metrics}`);
    return 2;
  }
  try {
    const run = parseMetricsJsonl(fs.readFileSync(opts.metrics, 'utf8'), opts.metrics);
    const { metrics: _metrics, out: _out, font, ...renderOptions } = opts;
    const png = await renderCurvesPng(run, { ...renderOptions, ...(font ? { fontFiles: font } : {}) });
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, png);
  } catch (err) {
    if (err instanceof MetricsParseError || err instanceof NoCurvesError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }
  console.log(out);
  return 0;
}

runMain(main);
