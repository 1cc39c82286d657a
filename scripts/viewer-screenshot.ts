/**
 * npm run viewer:screenshot -- --run <id> [--step <global step>] [--out docs/viewer.png]
 *
 * The README's picture of the rollout viewer: serves the viewer in-process over the runs folder and
 * blob store (as `npm run viewer` does), opens the run's step in chromium, picks the group whose
 * episodes differ most in reward, opens its episode with the most tool calls, hovers a trained token
 * in its last sample and saves the window.
 */
import path from 'node:path';
import { Command } from 'commander';
import { loadTokenizer } from '../src/model/tokenizer';
import { openCheckedStore, parseStoreSpec, storeSettingsFromEnv } from '../src/store/store-spec';
import { DATA_DIR, defaultRunsDir } from '../src/paths';
import { createViewer } from '../src/viewer/server';
import { RunData } from '../src/viewer/run-data';
import type { StepView } from '../src/viewer/view-types';
import { launchChromium } from './lib/chromium';

async function main(): Promise<void> {
  const opts = new Command()
    .requiredOption('--run <id>', 'the run to show')
    .option('--step <n>', 'its recorded update at this global step (default: the first)')
    .option('--runs <folder>', 'the runs folder', defaultRunsDir())
    .option('--store <folder|s3-url>', 'the blob store (default DURABLE_RL_STORE, else .data/store)')
    .option('--out <file.png>', 'where to save it', 'docs/viewer.png')
    .parse()
    .opts<{ run: string; step?: string; runs: string; store?: string; out: string }>();
  const settings = storeSettingsFromEnv();
  if (opts.store) settings.store = { value: opts.store, from: '--store' };
  const store = await openCheckedStore(parseStoreSpec(settings, path.join(DATA_DIR, 'store')));
  const steps = await new RunData(store, opts.runs).recordedSteps(opts.run);
  if (steps.length === 0) throw new Error(`run '${opts.run}' has no rollout records in the store (runs made before the viewer have none)`);
  if (opts.step !== undefined && !steps.includes(Number(opts.step))) throw new Error(`--step ${opts.step}: run '${opts.run}' has records at steps ${steps.join(', ')}`);
  const step = opts.step !== undefined ? Number(opts.step) : steps[0]!;
  const app = createViewer({ store, runsDir: path.resolve(opts.runs), tokenizer: loadTokenizer(), links: { uiUrl: 'http://localhost:8233', namespace: 'default' } });
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  const browser = await launchChromium();
  try {
    const api = `${base}/api/runs/${encodeURIComponent(opts.run)}/steps/${step}?groupLimit=64`;
    const res = await fetch(api);
    if (!res.ok) throw new Error(`${api}: ${res.status} ${await res.text()}`);
    const view = (await res.json()) as StepView;
    const spread = (g: StepView['groups'][number]) => Math.max(...g.episodes.map((e) => e.reward)) - Math.min(...g.episodes.map((e) => e.reward));
    const index = view.groups.reduce((best, g, i) => (spread(g) > spread(view.groups[best]!) ? i : best), 0);
    const group = view.groups[index]!;
    const episode = group.episodes.reduce((a, e) => (e.toolCalls > a.toolCalls ? e : a));
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    // The chosen group first (the page starts its 8 groups at ?g=), and a token of the episode's last sample hovered.
    await page.goto(`${base}/#/run/${encodeURIComponent(opts.run)}/step/${step}?g=${index}&e=${encodeURIComponent(episode.episodeId)}`);
    const token = page.locator('#episode .sample').last().locator('.tok.m1').nth(2);
    await token.waitFor();
    await token.scrollIntoViewIfNeeded();
    await token.hover();
    await page.screenshot({ path: path.resolve(opts.out) });
    console.log(`saved ${opts.out}: run ${opts.run}, step ${step}, group ${group.groupId}, episode ${episode.episodeId}`);
  } finally {
    await browser.close();
    await app.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? `viewer:screenshot: ${err.message}` : err);
  process.exit(1);
});
