/**
 * Tree rollouts against independent sampling, side by side in one run, at an equal number of output
 * leaves per prompt. A short SFT run (demonstrations that always call the calculator, so chains
 * have tool-call branch points) gives the policy; then, for several rollout ids (the same prompts
 * for both), treeRollout runs once as independent sampling (samplesPerRoot chains from each root,
 * no expansion) and once as a tree (a few chains, then expansion rounds from branch points), and
 * the table compares generated tokens, wall time, reward and duplicate outputs.
 *
 *   npm run build && npm run bench:tree [-- --sft-steps 200 --rollouts 4 --leaves 8 --initial 2 --segment-tokens 4]
 *
 * Tree columns: branching from the root and tool results (the design), from tool results only
 * (tree.expandFromRoot false), and also inside turns (turns cut into --segment-tokens segments,
 * TreePO-style; 0 leaves those columns out).
 *
 * Also the inference worker's prefix-cache hit rate (prompt tokens whose KV was reused). RL reward at
 * equal generated tokens is scripts/tree-vs-independent.sh (docs/tree-rollouts.md).
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { parseRunConfig } from '../src/config/parse';
import type { RunConfigInput } from '../src/config/schema';
import { startLocalStack } from '../scripts/lib/local-stack';
import type { RolloutSummary } from '../src/contracts/rollout-summary';
import { TASK_QUEUES } from '../workflows/task-queues';
import type { TrainingRunResult } from '../src/contracts/training-run';
import type { TreeRolloutInput } from '../src/contracts/tree';
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
    const segmentTokens = Number(arg('segment-tokens', '4'));
    const variant = (nodeSampling: 'entropy' | 'random', segments: number, expandFromRoot: boolean) =>
      parseRunConfig({ ...base, rollout: { kind: 'tree' }, tree: { ...tree.tree, nodeSampling, segmentTokens: segments, expandFromRoot } });
    // Branch points: the root and tool results (the design); tool results only (root-level diversity
    // from the initial chains, as ARPO); and also inside turns (segments of segmentTokens, as TreePO).
    const variants: Array<{ name: string; label: string; config: typeof tree }> = [
      { name: 'tree', label: 'tree (entropy)', config: tree },
      { name: 'tree-random', label: 'tree (random)', config: variant('random', 0, true) },
      { name: 'tree-inner', label: 'tree (entropy, not from root)', config: variant('entropy', 0, false) },
      { name: 'tree-inner-random', label: 'tree (random, not from root)', config: variant('random', 0, false) },
      ...(segmentTokens > 0
        ? [
            { name: 'tree-seg', label: `tree (entropy, not from root, ${segmentTokens}-token segments)`, config: variant('entropy', segmentTokens, false) },
            { name: 'tree-seg-random', label: `tree (random, not from root, ${segmentTokens}-token segments)`, config: variant('random', segmentTokens, false) },
          ]
        : []),
    ];
    const run = async (name: string, config: typeof tree, rolloutId: number): Promise<Measured> => {
      const input: TreeRolloutInput = { runId: `bench-tree-${name}`, rolloutId, config, policy };
      const t0 = Date.now();
      const r = (await stack.client.workflow.execute('treeRollout', { taskQueue: TASK_QUEUES.orchestration, workflowId: `bench-tree-${name}-${rolloutId}-${Date.now()}`, args: [input] })) as RolloutSummary;
      return { tokens: r.tree!.generatedTokens, promptTokens: r.tree!.promptTokens ?? 0, cachedPromptTokens: r.tree!.cachedPromptTokens ?? 0, seconds: (Date.now() - t0) / 1000, reward: r.meanReward, leaves: r.tree!.leaves, duplicates: r.tree!.duplicates, nodes: r.tree!.nodes };
    };
    // measured[v][rollout]; v = 0 is independent sampling.
    const columns = [{ name: 'independent', label: 'independent', config: independent }, ...variants];
    const measured: Measured[][] = columns.map(() => []);
    for (let id = 1; id <= rollouts; id++) {
      // Rotate which goes first, so a slower moment of the shared machine hits every column.
      for (let k = 0; k < columns.length; k++) {
        const v = (k + id) % columns.length;
        measured[v]![id - 1] = await run(columns[v]!.name, columns[v]!.config, id);
      }
    }
    const sum = (xs: Measured[], k: keyof Measured) => xs.reduce((a, m) => a + m[k], 0);
    const ind = measured[0]!;
    console.log(`policy: ${sftSteps} SFT steps (every demonstration calls the calculator); ${base.rl!.promptsPerStep} prompts per rollout, ${leaves} output leaves per prompt, max ${base.rl!.maxNewTokens} new tokens per turn; tree: ${initial} chain(s), then ${tree.tree.expansionIterations} rounds branching 1 point into 2`);
    console.log('');
    console.log('| | generated tokens | vs independent | wall s | mean reward | prefix-cache hit rate | nodes | leaves | duplicate outputs |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    columns.forEach((c, v) => {
      const xs = measured[v]!;
      const hit = (100 * sum(xs, 'cachedPromptTokens')) / Math.max(1, sum(xs, 'promptTokens'));
      console.log(`| ${c.label} | ${sum(xs, 'tokens')} | ${(sum(xs, 'tokens') / sum(ind, 'tokens')).toFixed(2)} | ${sum(xs, 'seconds').toFixed(1)} | ${(sum(xs, 'reward') / rollouts).toFixed(2)} | ${hit.toFixed(0)}% | ${sum(xs, 'nodes')} | ${sum(xs, 'leaves')} | ${sum(xs, 'duplicates')} |`);
    });
    console.log('');
    console.log('generated tokens per rollout (independent / ' + variants.map((v) => v.label).join(' / ') + '):');
    for (let id = 1; id <= rollouts; id++) console.log(`  rollout ${id}: ${measured.map((xs) => xs[id - 1]!.tokens).join(' / ')}`);
  } finally {
    await stack.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
