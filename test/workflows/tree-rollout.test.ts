/**
 * treeRollout on the real dev server: the oracle stand-in for generate (one calculator call, then the
 * answer) makes every chain two segments, so the tree's shape is known exactly; the real calculator
 * runs on the tools queue and the real samples activity merges each output's path into one sample.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { createOracleInferenceActivities, type ScriptedCompletion } from '../../activities/oracle-inference';
import { readSamples } from '../../src/contracts/sample-set';
import { parseRunConfig } from '../../src/config/parse';
import type { RunConfigInput } from '../../src/config/schema';
import { formatToolCall, TOOL_RESULT_CLOSE, TOOL_RESULT_OPEN } from '../../src/planact/protocol';
import { checkInvariants, treeAdvantages, type Forest, type TreeNode } from '../../src/tree';
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { treeStateQuery } from '../../workflows/messages';
import type { TreeRolloutInput } from '../../src/contracts/tree';
import type { WeightsInfo } from '../../src/contracts/weights';
import { testEnv, uniqueId, type TestEnv } from '../helpers/temporal';

const ORACLE_WEIGHTS: WeightsInfo = { version: 2, step: 0, onnx: { sha256: '0'.repeat(64), bytes: 0, kind: 'onnx' } };
const oracleQueue = uniqueId('oracle-tree');
/** A second oracle that answers wrong after the tool when its seed is odd: leaves of one tree differ in reward. */
const noisyQueue = uniqueId('noisy-tree');
const segmentQueue = uniqueId('segment-tree');
let ctx: TestEnv;

beforeAll(async () => {
  ctx = await testEnv('tree-rollout');
  await ctx.addWorker({ taskQueue: oracleQueue, activities: createOracleInferenceActivities({ store: ctx.store }), maxConcurrentActivityTaskExecutions: 64 });
  const noisy = createOracleInferenceActivities({
    store: ctx.store,
    script: (input) => (input.prompt.includes('<result>') && (input.params.seed ?? 0) % 2 === 1 ? { text: '7', finishReason: 'eos' } : undefined),
  });
  await ctx.addWorker({ taskQueue: noisyQueue, activities: noisy, maxConcurrentActivityTaskExecutions: 64 });
  // A third that, like a real engine, stops at params.maxNewTokens (its tokens are bytes): the
  // oracle's turn, minus what earlier segments of the turn already wrote, cut to the budget.
  const segmenting = createOracleInferenceActivities({
    store: ctx.store,
    script: (input) => {
      const resultEnd = input.prompt.lastIndexOf(`${TOOL_RESULT_CLOSE}\n`);
      const turnStart = resultEnd >= 0 ? resultEnd + TOOL_RESULT_CLOSE.length + 1 : input.prompt.indexOf('\n') + 1;
      const written = input.prompt.slice(turnStart);
      const rest = oracleTurn(input.prompt.slice(0, turnStart));
      const text = rest.text.slice(written.length);
      return text.length > input.params.maxNewTokens ? { text: text.slice(0, input.params.maxNewTokens), finishReason: 'length' } : { ...rest, text };
    },
  });
  await ctx.addWorker({ taskQueue: segmentQueue, activities: segmenting, maxConcurrentActivityTaskExecutions: 64 });
});

/** The oracle actor's whole turn after `prompt` (a tool call, or the answer after a result). */
function oracleTurn(prompt: string): ScriptedCompletion {
  const expression = /^Evaluate: (\S+)\n/.exec(prompt)![1]!;
  const open = prompt.lastIndexOf(TOOL_RESULT_OPEN);
  if (open < 0) return { text: formatToolCall(expression), finishReason: 'stop' };
  return { text: prompt.slice(open + TOOL_RESULT_OPEN.length, prompt.indexOf(TOOL_RESULT_CLOSE, open)), finishReason: 'eos' };
}

afterAll(async () => {
  await ctx?.stop();
});

function treeConfig(tree: RunConfigInput['tree'] = {}): RunConfigInput {
  const samplesPerRoot = tree.samplesPerRoot ?? 4;
  return {
    seed: 3,
    task: { difficulty: { minTerms: 2, maxTerms: 3, minDigits: 1, maxDigits: 2 } },
    rl: { promptsPerStep: 2, groupSize: samplesPerRoot, maxNewTokens: 32 },
    rollout: { kind: 'tree' },
    tree: { initialRollouts: 2, expansionIterations: 2, expansionsPerIteration: 1, beamSize: 2, ...tree, samplesPerRoot },
    timeouts: { heartbeatSec: 10 },
  };
}

async function runTree(config: RunConfigInput, queue = oracleQueue): Promise<{ handle: WorkflowHandle; result: RolloutSummary; forest: Forest }> {
  const input: TreeRolloutInput = { runId: 'tree-test', rolloutId: 1, config: parseRunConfig(config), policy: { weights: ORACLE_WEIGHTS, inferenceQueue: queue } };
  const handle = await ctx.env.client.workflow.start('treeRollout', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('tree'), args: [input] });
  const result = (await handle.result()) as RolloutSummary;
  const state = await handle.query(treeStateQuery);
  expect(state.phase).toBe('done');
  const nodes = state.nodes as TreeNode[];
  const forest: Forest = { nodes: Object.fromEntries(nodes.map((n) => [n.id, n])), roots: nodes.filter((n) => n.parent === null).map((n) => n.id) };
  return { handle, result, forest };
}

const phasesOf = async (handle: WorkflowHandle) =>
  ((await handle.fetchHistory()).events ?? []).flatMap((e) => {
    const fields = e.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields;
    if (!fields?.phase) return [];
    const decode = (p: { data?: Uint8Array | null } | undefined) => JSON.parse(new TextDecoder().decode(p!.data!)) as unknown;
    return [`${decode(fields.phase) as string}${decode(fields.iteration) ? ` ${decode(fields.iteration) as number}` : ''}`];
  });

describe('treeRollout', () => {
  it('runs its four phases, keeps the tree invariants and writes samplesPerRoot merged paths per root', async () => {
    const { handle, result, forest } = await runTree(treeConfig());
    checkInvariants(forest);
    expect(await phasesOf(handle)).toEqual(['build', 'initial-chains', 'expansion 1', 'expansion 2', 'outputs', 'done']);

    const segments = Object.values(forest.nodes).filter((n) => n.depth > 0);
    // Every chain is a tool call (open, its result appended) and then the answer (a leaf, reward 1).
    for (const n of segments) {
      expect(n.status).toBe(n.end === 'tool-call' ? 'open' : 'leaf');
      if (n.status === 'open') expect(n.children.length).toBeGreaterThan(0);
      if (n.status === 'leaf') expect([n.end, n.reward, n.toolCalls]).toEqual(['eos', 1, 1]);
    }
    for (const root of forest.roots.map((id) => forest.nodes[id]!)) {
      // Two initial chains, then 2 rounds × 1 node × beamSize 2 branches: six leaves per tree.
      const leaves = segments.filter((n) => n.root === root.root && n.status === 'leaf');
      expect(leaves).toHaveLength(6);
    }
    expect(result.metrics.tools.calls).toBe(segments.filter((n) => n.end === 'tool-call').length);
    expect(result.tree).toMatchObject({ nodes: segments.length, leaves: 12, generatedTokens: segments.reduce((s, n) => s + n.generatedTokens, 0), duplicates: 0 });

    expect(result.rows).toHaveLength(8);
    expect(result.rows.map((r) => r.groupId)).toEqual([...Array(4).fill('r1-p0'), ...Array(4).fill('r1-p1')]);
    expect(result.meanReward).toBe(1);
    // One sample per output: its path's two calls merged, the tool result between them masked.
    const set = result.samples.actor!;
    expect(set).toMatchObject({ samples: 8, timelines: { captured: 16, merged: 8 } });
    for (const s of await readSamples(ctx.store, set.ref)) {
      expect(s.lossMask.includes(0) && s.lossMask[0] === 1 && s.lossMask.at(-1) === 1).toBe(true);
    }
  });

  it('ends a segment at the tool-call limit without running the tool, and branches only from open nodes', async () => {
    const { result, forest } = await runTree(treeConfig({ maxToolCallsPerNode: 0, samplesPerRoot: 8 }));
    checkInvariants(forest);
    const segments = Object.values(forest.nodes).filter((n) => n.depth > 0);
    expect(segments.every((n) => n.status === 'leaf' && n.end === 'tool-limit' && n.reward === 0 && n.toolCalls === 0)).toBe(true);
    expect(result.metrics.tools.calls).toBe(0);
    // Only the roots stay open, so every expansion branched from a root: 2 + 2 × 2 leaves, all at depth 1.
    expect(segments.every((n) => n.depth === 1)).toBe(true);
    expect(segments).toHaveLength(2 * 6);
    // Eight outputs asked of six leaves: two duplicates per root, marked.
    expect(result.tree!.duplicates).toBe(4);
    expect(result.rows.filter((r) => r.failure === 'duplicate-leaf')).toHaveLength(4);
  });

  it('with tree.segmentTokens, cuts turns into fixed-length segments that stay open and are branched from', async () => {
    const { result, forest } = await runTree(treeConfig({ segmentTokens: 4, expansionIterations: 4 }), segmentQueue);
    checkInvariants(forest);
    const segments = Object.values(forest.nodes).filter((n) => n.depth > 0);
    const cut = segments.filter((n) => n.end === 'segment-length');
    // '<calc>a+b</calc>' is more than 4 bytes: every chain is cut, and every cut is exactly 4 tokens, open, continued.
    expect(cut.length).toBeGreaterThan(4);
    for (const n of cut) expect([n.status, n.generatedTokens, n.children.length > 0, n.toolCalls]).toEqual(['open', 4, true, 0]);
    // The call split over segments was put back together: every leaf ran the calculator and answered right.
    const leaves = segments.filter((n) => n.status === 'leaf');
    expect(leaves.every((n) => n.end === 'eos' && n.reward === 1 && n.toolCalls === 1)).toBe(true);
    expect(result.metrics.tools.calls).toBe(segments.filter((n) => n.end === 'tool-call').length);
    // Some expansion branched inside a turn: a cut node with a second child.
    expect(cut.some((n) => n.children.length > 1)).toBe(true);
    // Each output is still one merged sample, its path's segments joined.
    expect(result.samples.actor).toMatchObject({ samples: 8, timelines: { merged: 8 } });
  });

  it('with tree.expandFromRoot false, every expansion branches inside a chain', async () => {
    const { forest } = await runTree(treeConfig({ expandFromRoot: false, expansionIterations: 3 }));
    checkInvariants(forest);
    for (const root of forest.roots.map((id) => forest.nodes[id]!)) {
      // The two initial chains only; 3 rounds × 2 branches went to tool-call nodes.
      expect(root.children).toHaveLength(2);
      const below = Object.values(forest.nodes).filter((n) => n.root === root.root && n.depth === 1);
      expect(below.reduce((k, n) => k + n.children.length, 0)).toBe(2 + 3 * 2);
    }
  });

  it('with tree.segmentTokens, a turn that reaches rl.maxNewTokens ends as a length leaf', async () => {
    const config = treeConfig({ segmentTokens: 4, expansionIterations: 0 });
    const { forest } = await runTree({ ...config, rl: { ...config.rl, maxNewTokens: 10 } }, segmentQueue);
    checkInvariants(forest);
    const leaves = Object.values(forest.nodes).filter((n) => n.status === 'leaf');
    // 4 + 4 + 2 tokens of the call: the budget is spent before '</calc>'.
    expect(leaves).toHaveLength(4);
    for (const leaf of leaves) {
      expect([leaf.end, leaf.generatedTokens, leaf.depth, leaf.reward]).toEqual(['length', 2, 3, 0]);
    }
  });

  it('with tree.advantage tree, credits every segment of an output with its TreeRL advantage', async () => {
    const { handle, result, forest } = await runTree(treeConfig({ advantage: 'tree', expansionIterations: 3 }), noisyQueue);
    const rewards = Object.values(forest.nodes).filter((n) => n.status === 'leaf').map((n) => n.reward);
    expect(new Set(rewards)).toEqual(new Set([0, 1]));
    const credit = forest.roots.map((_, r) => treeAdvantages(forest, r, { reweight: 'sqrt' }));
    const samples = await readSamples(ctx.store, result.samples.actor!.ref);
    expect(samples).toHaveLength(8);
    for (const s of samples) {
      const leaf = s.metadata.episodeId.slice(`${handle.workflowId}/`.length).split('#')[0]!;
      const path: string[] = [];
      for (let id: string | null = leaf; forest.nodes[id!]!.depth > 0; id = forest.nodes[id!]!.parent) path.unshift(id!);
      const root = forest.nodes[leaf]!.root;
      // The model's tokens of segment k carry that segment's advantage; env tokens (masked) carry 0.
      const expected: number[] = [];
      let k = -1;
      s.lossMask.forEach((m, j) => {
        if (m === 1 && (j === 0 || s.lossMask[j - 1] === 0)) k++;
        expected.push(m === 1 ? credit[root]![path[k]!]! : 0);
      });
      expect(k).toBe(path.length - 1);
      expect(s.tokenAdvantages).toEqual(expected);
    }
    // Some segment's credit differs from its path's other segments: the credit is per segment, not per output.
    expect(samples.some((s) => new Set(s.tokenAdvantages!.filter((_, j) => s.lossMask[j] === 1)).size > 1)).toBe(true);
  });
});
