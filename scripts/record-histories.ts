/**
 * Regenerates test/histories/*.json: runs each recorded scenario on a fresh in-memory dev server
 * with the real workers, then exports the history with `temporal workflow show --output json`,
 * exactly as a user would export one from their own server. Run after an intended workflow change:
 *   npm run build && npm run histories
 */
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { REPO_ROOT } from '../src/paths';
import { createOracleInferenceActivities, ORACLE_TASK_QUEUE } from '../activities/oracle-inference';
import { TASK_QUEUES } from '../workflows/shared';
import { startLocalStack } from './lib/local-stack';
import { RECORDED_SCENARIOS } from './lib/scenarios';
import { runTemporalCli } from './lib/temporal-cli';

async function main(): Promise<void> {
  const stack = await startLocalStack({
    label: 'histories',
    queues: ['orchestration', 'inference', 'training', 'tools'],
    // Plan/Act scenarios take generate from the oracle stand-in, so their histories contain real acts.
    extraWorkers: async (connection, store) => [
      await Worker.create({ connection, taskQueue: ORACLE_TASK_QUEUE, activities: createOracleInferenceActivities({ store }), maxConcurrentActivityTaskExecutions: 64 }),
    ],
  });
  try {
    const { client } = stack;
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
        const json = runTemporalCli(['workflow', 'show', '--address', stack.address, '--workflow-id', id, '--output', 'json']);
        fs.writeFileSync(path.join(outDir, `${name}.json`), json);
        console.log(`recorded ${name} (${(json.length / 1024).toFixed(0)} KiB)`);
      }
      batch = [];
    }
  } finally {
    await stack.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
