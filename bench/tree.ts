/**
 * Tree rollouts against independent sampling, side by side in one run, at an equal number of output
 * leaves per prompt. A short SFT run (demonstrations that always call the calculator, so chains
 * have tool-call branch points) gives the policy; then, for several rollout ids (the same prompts
 * for both), treeRollout runs once as independent sampling (samplesPerRoot chains from each root,
 * no expansion) and once as a tree (a few chains, then expansion rounds from branch points), and
 * the table compares generated tokens, wall time, reward and duplicate outputs.
 *
 *   npm run build && npm run bench:tree [-- --sft-steps 200 --rollouts 4 --leaves 8 --initial 2]
 *
 * Also the inference worker's prefix-cache hit rate (prompt tokens whose KV was reused). RL reward at
 * equal generated tokens is scripts/tree-vs-independent.sh (see the README).
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { parseRunConfig } from '../src/config/parse';
import type { RunConfigInput } from '../src/config/schema';
import { startLocalStack } from '../scripts/lib/local-stack';
import type { RolloutSummary } from '../workflows/plan-act-types';
import { TASK_QUEUES } from '../workflows/shared';
import type { TrainingRunResult } from '../workflows/training-run-types';
import type { TreeRolloutInput } from '../workflows/tree-types';
import { arg } from './lib/args';

interface Measured {
  tokens: number;
  promptTokens: number;
  cachedPromptTokens: number;
  seconds: number;
  reward: number;
  leaves: number;
  duplicates: number;
  nodes: number;
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const sftSteps = Number(arg('sft-steps', '200'));
  const rollouts = Number(arg('rollouts', '4'));
  const leaves = Number(arg('leaves', '8'));
  const base: RunConfigInput = {
    experiment: 'bench-tree',
    seed: 1,
    task: { difficulty: { minTerms: 2, maxTerms: 3, minDigits: 1, maxDigits: 2, operators: ['+'] }, trainProblems: 2000, evalProblems: 8, demoToolUseRate: 1 },
    model: { dModel: 128, nLayers: 2, nHeads: 4, dFf: 512, maxSeq: 384 },
    sft: { steps: sftSteps, batchSize: 32, learningRate: 0.003, stepsPerActivity: 50 },
    rl: { steps: 0, promptsPerStep: 8, groupSize: leaves, temperature: 1, maxNewTokens: 48 },
    eval: { everySteps: 0 },
  };
  const stack = await startLocalStack({ label: 'bench-tree', queues: ['orchestration', 'inference', 'training', 'tools'] });
  try {
    const sft = await stack.client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId: `bench-tree-sft-${Date.now()}`, args: [base] });
    const trained = (await sft.result()) as TrainingRunResult;
    const policy = { weights: trained.weights! };
    // Independent: `leaves` chains per prompt. Tree: 2 chains, then rounds of one branch point × 2 until `leaves`.
    const independent = parseRunConfig({ ...base, rollout: { kind: 'tree' }, tree: { initialRollouts: leaves, expansionIterations: 0, samplesPerRoot: leaves } });
    const initial = Number(arg('initial', '2'));
    const tree = parseRunConfig({
      ...base,
      rollout: { kind: 'tree' },
      tree: { initialRollouts: initial, expansionIterations: Math.ceil((leaves - initial) / 2), expansionsPerIteration: 1, beamSize: 2, samplesPerRoot: leaves, nodeSampling: 'entropy' },
    });
    const treeRandom = parseRunConfig({ ...base, rollout: { kind: 'tree' }, tree: { ...tree.tree, nodeSampling: 'random' } });
    const run = async (name: string, config: typeof tree, rolloutId: number): Promise<Measured> => {
      const input: TreeRolloutInput = { runId: `bench-tree-${name}`, rolloutId, config, policy };
      const t0 = Date.now();
      const r = (await stack.client.workflow.execute('treeRollout', { taskQueue: TASK_QUEUES.orchestration, workflowId: `bench-tree-${name}-${rolloutId}-${Date.now()}`, args: [input] })) as RolloutSummary;
      return { tokens: r.tree!.generatedTokens, promptTokens: r.tree!.promptTokens ?? 0, cachedPromptTokens: r.tree!.cachedPromptTokens ?? 0, seconds: (Date.now() - t0) / 1000, reward: r.meanReward, leaves: r.tree!.leaves, duplicates: r.tree!.duplicates, nodes: r.tree!.nodes };
    };
    const rows: Array<{ id: number; ind: Measured; tree: Measured; random: Measured }> = [];
    for (let id = 1; id <= rollouts; id++) {
      // Alternate which goes first, so a slower moment of the shared machine hits both sides.
      const ind = id % 2 ? await run('independent', independent, id) : undefined;
      const tr = await run('tree', tree, id);
      const random = await run('tree-random', treeRandom, id);
      rows.push({ id, ind: ind ?? (await run('independent', independent, id)), tree: tr, random });
    }
    const sum = (xs: Measured[], k: keyof Measured) => xs.reduce((a, m) => a + m[k], 0);
    const hit = (xs: Measured[]) => `${((100 * sum(xs, 'cachedPromptTokens')) / Math.max(1, sum(xs, 'promptTokens'))).toFixed(0)}%`;
    console.log(`policy: ${sftSteps} SFT steps (every demonstration calls the calculator); ${base.rl!.promptsPerStep} prompts per rollout, ${leaves} output leaves per prompt, max ${base.rl!.maxNewTokens} new tokens per segment; tree: ${initial} chain(s), then ${tree.tree.expansionIterations} rounds branching 1 point into 2`);
    console.log('');
    console.log('| rollout | generated tokens: independent / tree (entropy) / tree (random) | tree / independent | random / independent | seconds: ind. / tree / random | reward: ind. / tree / random |');
    console.log('|---:|---:|---:|---:|---:|---:|');
    for (const r of rows) {
      console.log(`| ${r.id} | ${r.ind.tokens} / ${r.tree.tokens} / ${r.random.tokens} | ${(r.tree.tokens / r.ind.tokens).toFixed(2)} | ${(r.random.tokens / r.ind.tokens).toFixed(2)} | ${r.ind.seconds.toFixed(1)} / ${r.tree.seconds.toFixed(1)} / ${r.random.seconds.toFixed(1)} | ${r.ind.reward.toFixed(2)} / ${r.tree.reward.toFixed(2)} / ${r.random.reward.toFixed(2)} |`);
    }
    const ind = rows.map((r) => r.ind);
    const tr = rows.map((r) => r.tree);
    const rnd = rows.map((r) => r.random);
    console.log(`| all | ${sum(ind, 'tokens')} / ${sum(tr, 'tokens')} / ${sum(rnd, 'tokens')} | ${(sum(tr, 'tokens') / sum(ind, 'tokens')).toFixed(2)} | ${(sum(rnd, 'tokens') / sum(ind, 'tokens')).toFixed(2)} | ${sum(ind, 'seconds').toFixed(1)} / ${sum(tr, 'seconds').toFixed(1)} / ${sum(rnd, 'seconds').toFixed(1)} | ${(sum(ind, 'reward') / rows.length).toFixed(2)} / ${(sum(tr, 'reward') / rows.length).toFixed(2)} / ${(sum(rnd, 'reward') / rows.length).toFixed(2)} |`);
    console.log('');
    console.log(`prefix-cache hit rate (prompt tokens served from cache): independent ${hit(ind)}, tree (entropy) ${hit(tr)}, tree (random) ${hit(rnd)}`);
    console.log(`duplicate outputs: tree (entropy) ${sum(tr, 'duplicates')}, tree (random) ${sum(rnd, 'duplicates')}; leaves: ${sum(tr, 'leaves')} / ${sum(rnd, 'leaves')}`);
  } finally {
    await stack.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
