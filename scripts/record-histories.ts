/**
 * Regenerates test/histories/*.json: runs each recorded scenario on a fresh in-memory dev server
 * with the real workers, then exports the history with `temporal workflow show --output json`,
 * exactly as a user would export one from their own server. Run after an intended workflow change:
 *   npm run build && npm run histories
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { FsBlobStore } from '../src/store/fs-blob-store';
import { REPO_ROOT } from '../src/paths';
import { createOracleInferenceActivities, ORACLE_TASK_QUEUE } from '../activities/oracle-inference';
import { createWorkers } from '../workers/create-workers';
import { TASK_QUEUES } from '../workflows/shared';
import { freePort, startDevServer } from './lib/dev-server';
import { RECORDED_SCENARIOS } from './lib/scenarios';
import { runTemporalCli } from './lib/temporal-cli';

async function main(): Promise<void> {
  const server = await startDevServer({ port: await freePort(), logFile: path.join(os.tmpdir(), 'durable-rl-histories.log'), detached: false });
  const native = await NativeConnection.connect({ address: server.address });
  const connection = await Connection.connect({ address: server.address });
  const store = new FsBlobStore(fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-histories-')));
  const workers = await createWorkers({ connection: native, queues: ['orchestration', 'inference', 'training', 'tools'], store });
  // Plan/Act scenarios take generate from the oracle stand-in, so their histories contain real acts.
  workers.push(await Worker.create({ connection: native, taskQueue: ORACLE_TASK_QUEUE, activities: createOracleInferenceActivities({ store }), maxConcurrentActivityTaskExecutions: 64 }));
  const running = workers.map((w) => w.run());
  try {
    const client = new Client({ connection });
    const outDir = path.join(REPO_ROOT, 'test', 'histories');
    fs.mkdirSync(outDir, { recursive: true });
    // Scenarios marked concurrent run alongside the next ones; each batch is awaited, then exported.
    let batch: Array<{ name: string; workflowId: string }> = [];
    for (const scenario of RECORDED_SCENARIOS) {
      const workflowId = scenario.workflowId ?? `history-${scenario.name}`;
      if (!scenario.startedByOthers) {
        await client.workflow.start(scenario.workflowType, { taskQueue: TASK_QUEUES.orchestration, workflowId, args: scenario.args });
      }
      batch.push({ name: scenario.name, workflowId });
      if (scenario.concurrent) continue;
      for (const { name, workflowId: id } of batch) {
        await client.workflow.getHandle(id).result();
        const json = runTemporalCli(['workflow', 'show', '--address', server.address, '--workflow-id', id, '--output', 'json']);
        fs.writeFileSync(path.join(outDir, `${name}.json`), json);
        console.log(`recorded ${name} (${(json.length / 1024).toFixed(0)} KiB)`);
      }
      batch = [];
    }
  } finally {
    for (const w of workers) w.shutdown();
    await Promise.all(running);
    await native.close();
    await connection.close();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
