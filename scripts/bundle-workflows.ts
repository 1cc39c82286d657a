/**
 * Bundles workflows/ once at build time. Workers and tests load this file instead of bundling at
 * start-up, which keeps jest's transforms out of the bundler and makes a Node built-in imported
 * under workflows/ fail the build, not a worker in production.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

async function main(): Promise<void> {
  const root = path.resolve(__dirname, '../..');
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(root, 'dist', 'workflows', 'index.js'),
    logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} },
  });
  const out = path.join(root, 'dist', 'workflow-bundle.js');
  fs.writeFileSync(out, code);
  console.log(`[build] workflow bundle: ${path.relative(root, out)} (${(code.length / 1024).toFixed(0)} KiB)`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
