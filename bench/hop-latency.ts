/**
 * What one Temporal hop costs on the dev server: a workflow that runs n no-op activities one after
 * another, so each hop is a schedule, a dispatch, a completion and a workflow task, with no work in
 * between. Two dev servers side by side, interleaved: the project's settings, and the same with
 * the history shard's queue read rate at the server's default of 20 reads a second.
 *   npm run build && node dist/bench/hop-latency.js [--hops 50] [--repeat 5]
 */
import os from 'node:os';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { startLocalStack } from '../scripts/lib/local-stack';
import { rolloutHops } from './lib/history-hops';
import { HOP_ACTIVITY_QUEUE } from './workflows/noop-chain';
import { arg } from './lib/args';

const HOPS = Number(arg('hops', '50'));
const REPEAT = Number(arg('repeat', '5'));
const WORKFLOW_QUEUE = 'bench-hop-workflows';

interface Setup {
  name: string;
  dynamicConfig: Record<string, number>;
}
const SETUPS: Setup[] = [
  { name: 'project settings (queue reads up to 1000/s)', dynamicConfig: {} },
  { name: 'server default (queue reads up to 20/s)', dynamicConfig: { 'history.transferProcessorMaxPollRPS': 20, 'history.timerProcessorMaxPollRPS': 20 } },
];

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const bundle = await bundleWorkflowCode({ workflowsPath: require.resolve('./workflows/noop-chain'), logger: new DefaultLogger('ERROR') });
  const stacks = await Promise.all(
    SETUPS.map((setup) =>
      startLocalStack({
        label: 'bench-hops',
        queues: [],
        dynamicConfig: setup.dynamicConfig,
        extraWorkers: async (connection) => [
          await Worker.create({ connection, taskQueue: WORKFLOW_QUEUE, workflowBundle: bundle }),
          await Worker.create({ connection, taskQueue: HOP_ACTIVITY_QUEUE, activities: { async noop() {} } }),
        ],
      }),
    ),
  );
  try {
    const perHop = SETUPS.map(() => [] as number[]);
    const dispatch = SETUPS.map(() => [] as number[]);
    for (let rep = -1; rep < REPEAT; rep++) {
      for (const [i, stack] of stacks.entries()) {
        const workflowId = `hops-${rep}-${Date.now()}`;
        const t0 = performance.now();
        await stack.client.workflow.execute('noopChain', { taskQueue: WORKFLOW_QUEUE, workflowId, args: [HOPS] });
        const ms = performance.now() - t0;
        if (rep < 0) continue; // warm-up
        perHop[i]!.push(ms / HOPS);
        const hops = await rolloutHops(stack.client, workflowId);
        dispatch[i]!.push((hops.activityDispatch.meanMs + hops.workflowTaskDispatch.meanMs) / 2);
      }
    }
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    console.log(`Temporal hop latency: a workflow running ${HOPS} no-op activities in a row, median of ${REPEAT} interleaved runs per server (${os.cpus().length} cores)\n`);
    console.log('| dev server | ms per hop | task scheduled -> started, mean (ms) |');
    console.log('|---|---:|---:|');
    SETUPS.forEach((s, i) => console.log(`| ${s.name} | ${median(perHop[i]!).toFixed(1)} | ${median(dispatch[i]!).toFixed(1)} |`));
  } finally {
    await Promise.all(stacks.map((s) => s.stop()));
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
