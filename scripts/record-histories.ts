/**
 * Records test/histories/*.json: runs recorded scenarios on a fresh in-memory dev server with the
 * real workers, then exports each history with `temporal workflow show --output json`, exactly as a
 * user would export one from their own server.
 *
 * Histories recorded from earlier code are never re-recorded: they are what runs in flight look
 * like, and the replay test proves new code still runs them. After a workflow change (behind
 * patched()), add a scenario and record only it:
 *   npm run build && npm run histories -- --only <scenario name>[,<name>...]
 */
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { REPO_ROOT } from '../src/paths';
import { createOracleInferenceActivities, ORACLE_TASK_QUEUE } from '../activities/oracle-inference';
import { createToolActivities } from '../activities/tools';
import { TASK_QUEUES } from '../workflows/task-queues';
import { startLocalStack } from './lib/local-stack';
import { RECORDED_SCENARIOS } from './lib/scenarios';
import { runTemporalCli } from './lib/temporal-cli';
import { arg } from '../bench/lib/args';

async function main(): Promise<void> {
  const only = arg('only', '');
  if (!only) {
    console.error('name the scenarios to record: --only a,b (earlier histories stay as recorded; see the comment above)');
    process.exit(2);
  }
  const wanted = new Set(only.split(','));
  const unknown = [...wanted].filter((n) => !RECORDED_SCENARIOS.some((s) => s.name === n));
  if (unknown.length > 0) {
    console.error(`unknown scenarios: ${unknown.join(', ')}`);
    process.exit(2);
  }
  const stack = await startLocalStack({
    label: 'histories',
    queues: ['orchestration', 'inference', 'training', 'tools'],
    // Plan/Act scenarios take generate from the oracle stand-in, so their histories contain real acts.
    // rollout.batchRequests 'local' scenarios: the orchestration worker's own calls are the oracle and the calculator.
    localCalls: (store) => ({ generate: createOracleInferenceActivities({ store }).generate, calcWithAttempt: createToolActivities().calcWithAttempt }),
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
    // A scenario's batch (its concurrent partners, the children it starts) is recorded with it.
    const batches: (typeof RECORDED_SCENARIOS)[] = [];
    let current: typeof RECORDED_SCENARIOS = [];
    for (const s of RECORDED_SCENARIOS) {
      current.push(s);
      if (!s.concurrent && !RECORDED_SCENARIOS[RECORDED_SCENARIOS.indexOf(s) + 1]?.startedByOthers) {
        batches.push(current);
        current = [];
      }
    }
    if (current.length > 0) batches.push(current);
    const chosen = batches.filter((b) => b.some((s) => wanted.has(s.name))).flat();
    for (const scenario of chosen) {
      const workflowId = scenario.workflowId ?? `history-${scenario.name}`;
      if (!scenario.startedByOthers) {
        await client.workflow.start(scenario.workflowType, { taskQueue: TASK_QUEUES.orchestration, workflowId, args: scenario.args });
      }
      batch.push({ name: scenario.name, workflowId });
      if (scenario.concurrent && scenario !== chosen.at(-1)) continue;
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
