/**
 * Where an RL step's time goes, through the real system: a throwaway dev server and the project's
 * workers in this process, a trainingRun with the default config's model and RL settings (SFT cut
 * short: the policy only needs to write well-formed episodes), and per RL step the workflow-time
 * seconds of publish (ONNX export), rollout (the Plan/Act rollout child) and train (trainGrpo),
 * plus the GRPO update's own throughput: tokens through forward and backward per second of update.
 *
 *   npm run build && npm run bench:rl [-- --config configs/default.yaml --sft-steps 100 --rl-steps 6]
 *
 * --by-length false,true: one SFT run, then its RL phase once per value of rl.microBatch.byLength
 * (in the order given), from the same checkpoint: the update's seconds and the positions its passes
 * computed (padding included) side by side, per step and in sum.
 */
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadRunConfig } from '../src/config/load';
import { REPO_ROOT } from '../src/paths';
import { startLocalStack, type LocalStack } from '../scripts/lib/local-stack';
import type { RunConfig, RunConfigInput } from '../src/config/schema';
import { TASK_QUEUES } from '../workflows/task-queues';
import type { RlPoint, TrainingRunResult } from '../src/contracts/training-run';
import { arg } from './lib/args';

function stats(xs: number[]): { median: number; mean: number; min: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  return { median: mid, mean: xs.reduce((a, b) => a + b, 0) / xs.length, min: s[0]!, max: s.at(-1)! };
}

async function main(): Promise<void> {
  // Worker state changes and workflow logs at INFO would bury the table.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const file = arg('config', path.join(REPO_ROOT, 'configs', 'default.yaml'));
  const base = loadRunConfig(file);
  const sftSteps = Number(arg('sft-steps', '100'));
  const rlSteps = Number(arg('rl-steps', '6'));
  const config = {
    ...base,
    experiment: 'bench-rl',
    sft: { ...base.sft, steps: sftSteps },
    rl: { ...base.rl, steps: rlSteps },
    eval: { ...base.eval, everySteps: 0, rlEverySteps: 0, sampled: false },
    task: { ...base.task, evalProblems: 8, rl: { ...base.task.rl, evalProblems: 16, testProblems: 0 } },
    compare: { moreSft: false },
  };
  const stack = await startLocalStack({ label: 'bench-rl', queues: ['orchestration', 'inference', 'training', 'tools'] });
  const byLength = arg('by-length', '');
  if (byLength) {
    try {
      await compareByLength(stack, config, byLength.split(',').map((v) => parseBool(v.trim())));
    } finally {
      await stack.stop();
    }
    return;
  }
  try {
    const handle = await stack.client.workflow.start('trainingRun', {
      taskQueue: TASK_QUEUES.orchestration,
      workflowId: `bench-rl-${Date.now()}`,
      args: [config],
    });
    const result = (await handle.result()) as TrainingRunResult;
    // Step 1 also loads the first engine and starts Adam afresh: report it, leave it out of the summary.
    const measured: RlPoint[] = result.rl.length > 1 ? result.rl.slice(1) : result.rl;
    console.log(`config ${path.relative(REPO_ROOT, file)}: ${sftSteps} SFT steps, ${rlSteps} RL steps of ${config.rl.promptsPerStep} prompts × ${config.rl.groupSize} episodes, ${config.rl.ppoEpochs} epochs × ${config.rl.miniBatches} mini-batches; backend ${result.backend}`);
    console.log('');
    console.log('| rl step | episodes acc | publish (s) | rollout (s) | train (s) | total (s) | rows | tokens run | update tok/s |');
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const p of result.rl) {
      const u = p.update ?? {};
      const tps = (u.tokensRun ?? 0) / Math.max(1e-9, u.updateSeconds ?? 0);
      const total = p.seconds.publish + p.seconds.rollout + p.seconds.train;
      console.log(
        `| ${p.step} | ${(100 * p.accuracy).toFixed(0)}% | ${p.seconds.publish.toFixed(2)} | ${p.seconds.rollout.toFixed(2)} | ${p.seconds.train.toFixed(2)} | ${total.toFixed(2)} | ${p.rows} | ${u.tokensRun ?? '-'} | ${tps.toFixed(0)} |`,
      );
    }
    const col = (f: (p: RlPoint) => number) => stats(measured.map(f));
    const fmt = (s: ReturnType<typeof stats>) => `median ${s.median.toFixed(2)}, mean ${s.mean.toFixed(2)} (${s.min.toFixed(2)}–${s.max.toFixed(2)})`;
    console.log('');
    console.log(`over RL steps ${measured[0]!.step}–${measured.at(-1)!.step}:`);
    console.log(`  publish  ${fmt(col((p) => p.seconds.publish))} s`);
    console.log(`  rollout  ${fmt(col((p) => p.seconds.rollout))} s`);
    console.log(`  train    ${fmt(col((p) => p.seconds.train))} s`);
    console.log(`  step     ${fmt(col((p) => p.seconds.publish + p.seconds.rollout + p.seconds.train))} s`);
    const tokens = measured.reduce((n, p) => n + (p.update?.tokensRun ?? 0), 0);
    const secs = measured.reduce((n, p) => n + (p.update?.updateSeconds ?? 0), 0);
    console.log(`  GRPO update throughput (${result.backend}): ${(tokens / secs).toFixed(0)} tokens/s through forward + backward (${tokens} tokens in ${secs.toFixed(1)} s)`);
  } finally {
    await stack.stop();
  }
}

function parseBool(v: string): boolean {
  if (v !== 'true' && v !== 'false') throw new Error(`--by-length takes true and false, got ${v}`);
  return v === 'true';
}

/** One SFT run, then its RL phase once per rl.microBatch.byLength value, from that checkpoint. */
async function compareByLength(stack: LocalStack, config: RunConfigInput & Pick<RunConfig, 'sft' | 'rl'>, values: boolean[]): Promise<void> {
  const run = async (id: string, cfg: RunConfigInput): Promise<TrainingRunResult> =>
    (await (await stack.client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId: id, args: [cfg] })).result()) as TrainingRunResult;
  const stamp = Date.now();
  const sftId = `bench-rl-sft-${stamp}`;
  await run(sftId, { ...config, rl: { ...config.rl, steps: 0 } });
  console.log(`${config.sft.steps} SFT steps, then ${config.rl.steps} RL steps of ${config.rl.promptsPerStep} prompts × ${config.rl.groupSize} from that checkpoint per rl.microBatch.byLength; ${config.rl.ppoEpochs} epochs × ${config.rl.miniBatches} mini-batches, ${config.rl.microBatch.rows} rows per pass`);
  console.log('');
  console.log('| byLength | update s/step (mean) | train phase s/step | positions computed/step (padding included) | tokens of the rows/step | padded / rows | RL wall (s) |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const [i, value] of values.entries()) {
    const r = await run(`bench-rl-${i}-${value}-${stamp}`, { ...config, init: { fromRun: sftId }, sft: { ...config.sft, steps: 0 }, rl: { ...config.rl, microBatch: { ...config.rl.microBatch, byLength: value } } });
    const per = (f: (p: RlPoint) => number) => r.rl.reduce((n, p) => n + f(p), 0) / r.rl.length;
    const padded = per((p) => p.update?.paddedTokensRun ?? NaN);
    const tokens = per((p) => p.update?.tokensRun ?? NaN);
    const wall = r.rl.reduce((n, p) => n + p.seconds.publish + p.seconds.rollout + p.seconds.train, 0);
    console.log(`| ${value} | ${per((p) => p.update?.updateSeconds ?? NaN).toFixed(2)} | ${per((p) => p.seconds.train).toFixed(2)} | ${padded.toFixed(0)} | ${tokens.toFixed(0)} | ${(padded / tokens).toFixed(2)} | ${wall.toFixed(1)} |`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
