/**
 * npm run viewer -- [--run <id>] [--runs <folder>] [--store <folder | s3://bucket/prefix>] [--port 8240]
 *                   [--temporal-ui http://localhost:8233 | none] [--temporal-address 127.0.0.1:7233 | none]
 *                   [--namespace default]
 *
 * The rollout viewer (docs/viewer.md): a page on 127.0.0.1 that shows what each RL step trained on,
 * read from the runs' metrics files and the blob store's rollout records. Read-only: a run in
 * progress is never slowed, and the page follows it as steps land; a run's status (live, completed,
 * failed, ...) is its workflow's, asked of the Temporal server. The store's S3 settings are the
 * workers' (DURABLE_RL_S3_ENDPOINT, ... in src/store/store-spec.ts); --store overrides DURABLE_RL_STORE.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { Command, InvalidArgumentError } from 'commander';
import { loadTokenizer, loadTokenizerDir } from '../src/model/tokenizer';
import { resolveTokenizerDir, TOKENIZER_ALIASES } from '../src/model/tokenizer-dir';
import type { TextTokenizer } from '../src/model/tokenizer-types';
import { describeStore, openCheckedStore, parseStoreSpec, storeSettingsFromEnv } from '../src/store/store-spec';
import { DATA_DIR, defaultRunsDir } from '../src/paths';
import { createViewer } from '../src/viewer/server';
import { workflowStateLookup } from './lib/workflow-state';

function port(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 0 || n > 65535) throw new InvalidArgumentError(`expected a port number 0-65535, got '${value}'`);
  return n;
}

function uiUrl(value: string): string | undefined {
  if (value === 'none') return undefined;
  if (!/^https?:\/\/[^\s/]+(\/\S*)?$/.test(value)) throw new InvalidArgumentError(`expected an http(s) address or 'none', got '${value}'`);
  return value;
}

/** --tokenizer: a tokenizer.json, or (chat runs: model.tokenizer) `qwen3` or a Hugging Face tokenizer directory. */
function viewerTokenizer(value: string): TextTokenizer {
  try {
    if (TOKENIZER_ALIASES[value] !== undefined) return loadTokenizerDir(resolveTokenizerDir(value));
    const file = path.resolve(value);
    return fs.statSync(file).isDirectory() ? loadTokenizerDir(file) : loadTokenizer(file);
  } catch (err) {
    throw new Error(`--tokenizer ${value}: ${(err as Error).message}`);
  }
}

async function main(): Promise<void> {
  const opts = new Command()
    .name('npm run viewer --')
    .description('Serve the rollout viewer on 127.0.0.1')
    .option('--run <id>', 'open this run first (the printed address goes straight to it)')
    .option('--runs <folder>', 'where the runs write their metrics files', defaultRunsDir())
    .option('--store <folder|s3-url>', 'the blob store the runs wrote to (default DURABLE_RL_STORE, else .data/store)')
    .option('--port <n>', 'port on 127.0.0.1 (0: any free one)', port, 8240)
    .option('--temporal-ui <url>', "the Temporal Web UI episodes link to, or 'none'", uiUrl, 'http://localhost:8233')
    .option('--temporal-address <host:port>', "the Temporal server to ask for runs' status (live, completed, failed), or 'none'", process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233')
    .option('--namespace <name>', 'the runs’ Temporal namespace (for the links and their status)', 'default')
    .option('--tokenizer <file>', 'tokenizer.json the runs used (default the project’s), or a tokenizer directory or qwen3 (chat runs whose samples do not name theirs)')
    .parse()
    .opts<{ run?: string; runs: string; store?: string; port: number; temporalUi?: string; temporalAddress: string; namespace: string; tokenizer?: string }>();
  const settings = storeSettingsFromEnv();
  if (opts.store) settings.store = { value: opts.store, from: '--store' };
  const spec = parseStoreSpec(settings, path.join(DATA_DIR, 'store'));
  const store = await openCheckedStore(spec);
  const tokenizer = opts.tokenizer ? viewerTokenizer(opts.tokenizer) : loadTokenizer();
  // Connected on the first question: a server that is down leaves each run's status unknown, not the viewer stopped.
  const temporal = opts.temporalAddress === 'none' ? undefined : Connection.lazy({ address: opts.temporalAddress, connectTimeout: 1000 });
  const app = createViewer({
    store,
    runsDir: path.resolve(opts.runs),
    tokenizer,
    links: { ...(opts.temporalUi ? { uiUrl: opts.temporalUi } : {}), namespace: opts.namespace },
    ...(temporal ? { workflowState: workflowStateLookup(temporal, opts.namespace) } : {}),
  });
  const address = await app.listen({ host: '127.0.0.1', port: opts.port });
  const page = opts.run ? `${address}/#/run/${encodeURIComponent(opts.run)}` : address;
  console.log(`rollout viewer: ${page}  (runs ${path.resolve(opts.runs)}, store ${describeStore(spec)}; Ctrl-C stops it)`);
  const stop = () => void app.close().then(() => temporal?.close().catch(() => undefined)).then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? `viewer: ${err.message}` : err);
  process.exit(1);
});
