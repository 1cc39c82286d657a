/**
 * Bundles workflows/ once at build time. Workers and tests load this file instead of bundling at
 * start-up, which keeps jest's transforms out of the bundler and makes a Node built-in imported
 * under workflows/ fail the build, not a worker in production.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

const root = path.resolve(__dirname, '../..');

async function bundle(entry: string, outFile: string): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(root, 'dist', entry),
    logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} },
  });
  const out = path.join(root, 'dist', outFile);
  fs.writeFileSync(out, code);
  console.log(`[build] workflow bundle: ${path.relative(root, out)} (${(code.length / 1024).toFixed(0)} KiB)`);
}

async function main(): Promise<void> {
  await bundle(path.join('workflows', 'index.js'), 'workflow-bundle.js');
  // Workflows only tests start (test/fixtures/workflows.ts), kept out of the workers' bundle.
  await bundle(path.join('test', 'fixtures', 'workflows.js'), 'test-workflow-bundle.js');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
