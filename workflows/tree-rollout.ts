/**
 * treeRollout: an offline tree-search rollout (docs/tree-rollouts.md) on the actor's tool-using task
 * ("Evaluate: <expr>", calculator calls, a number). Its four phases are distinct steps in the
 * history (each sets the `phase` memo) and the tree's skeleton is the `treeState` query:
 *   1. build: a root per prompt with tree.initialRollouts pending branches;
 *   2. initial chains: generate every pending node; a segment that ends in a tool call runs the
 *      tool, appends its result (loss mask 0) and gets a pending continuation, until all are leaves
 *      (with tree.segmentTokens, a segment cut at that length inside a turn also gets one);
 *   3. expansion: tree.expansionIterations rounds of selecting open (non-leaf) nodes per tree,
 *      random or by branch-point entropy, branching each into tree.beamSize continuations from
 *      that point and generating them to leaves;
 *   4. outputs: tree.samplesPerRoot leaves per root (duplicates marked when a root has fewer), whose
 *      root-to-leaf paths are written as samples (timeline merging joins a path's segments into one
 *      sample); the leaves of a root form its GRPO group.
 * The tree lives in src/tree (pure); this file drives generate and calc activities over it.
 * Finished nodes are in the history, so a crashed worker costs only the activity it was running.
 */
import { setHandler, upsertMemo, workflowInfo } from '@temporalio/workflow';
import type { GenerateResult } from '../activities/inference';
import type { GenerationRef } from '../src/contracts/generation';
import { withRecordedDefaults } from '../src/config/recorded';
import { ActorAnswerError, parseActorAnswer } from '../src/planact/actor-parser';
import { errorMessage } from '../src/planact/error-message';
import { TOOL_CALL_CLOSE } from '../src/planact/protocol';
import { arithActorPrompt } from '../src/tasks/arith/formats';
import { problemFromExpression, type ArithProblem } from '../src/tasks/arith/problem';
import { arithReward } from '../src/tasks/arith/reward';
import { fnv1a32, mulberry32 } from '../src/domain/rng';
import {
  addBranch,
  buildForest,
  completeSegment,
  forestSummary,
  generatedTokens,
  keepsOpen,
  pathTo,
  pendingNodes,
  sampleOutputs,
  scoreLeaf,
  selectExpansionNodes,
  treeAdvantages,
  type Forest,
  readSegment,
  segmentBudget,
  withToolOutcome,
  type SegmentLimits,
  type SegmentText,
} from '../src/tree';
import { withNodes } from '../src/tree/build';
import { emptyToolMetrics } from './tool-metrics';
import { rolloutProblems } from './rollout-episodes';
import { workflowNow } from './clock';
import { meteredCalc } from './plan-act-episode';
import { planActProxies } from './activity-proxies';
import { episodeCalls } from './episode-calls';
import type { EpisodeRow, RolloutSummary } from '../src/contracts/rollout-summary';
import { treeStateQuery } from './messages';
import { rolloutSummary } from './rollout-summary';
import type { TreePhase, TreeRolloutInput, TreeRolloutState } from '../src/contracts/tree';

/** What the workflow keeps per node beside the skeleton: the text after it (src/tree/segment.ts), and its generation. */
interface NodeText extends SegmentText {
  promptTokens: number;
  generation?: GenerationRef;
}

export async function treeRollout(input: TreeRolloutInput): Promise<RolloutSummary> {
  const cfg = withRecordedDefaults(input.config);
  const tree = cfg.tree;
  const started = workflowNow();
  const self = workflowInfo().workflowId;
  // The nodes an expansion grows at once go as one activity (histories from before: one per node).
  const calls = episodeCalls(cfg.timeouts, cfg.rollout.batchRequests ?? true);
  const { samples } = planActProxies(cfg.timeouts);
  const toolMetrics = emptyToolMetrics();
  const rng = mulberry32(fnv1a32(`tree:${cfg.seed}:${input.rolloutId}`));
  const limits: SegmentLimits = { segmentTokens: tree.segmentTokens, maxNewTokens: cfg.rl.maxNewTokens, maxToolCallsPerNode: tree.maxToolCallsPerNode };
  const includeRoot = tree.expandFromRoot;

  // One root per prompt: rolloutProblems repeats each prompt groupSize times; a tree needs it once.
  const problems = rolloutProblems(cfg, input.rolloutId).filter((_, i) => i % cfg.rl.groupSize === 0);
  const parsed: ArithProblem[] = problems.map((p) => problemFromExpression(p.expression));

  const state: TreeRolloutState = { phase: 'build', iteration: 0, summary: [] };
  let forest: Forest = buildForest(problems.length, tree.initialRollouts);
  const texts = new Map<string, NodeText>();
  const prefill = { promptTokens: 0, cachedPromptTokens: 0 };
  const answers = new Map<string, string | null>();
  forest.roots.forEach((id, r) => {
    const prompt = arithActorPrompt(problems[r]!.expression);
    texts.set(id, { context: prompt, starts: [0], promptTokens: 0, turnText: '', turnTokens: 0 });
  });
  setHandler(treeStateQuery, () => ({ ...state, summary: forestSummary(forest), nodes: Object.values(forest.nodes).map(skeleton) }));
  const enter = (phase: TreePhase, iteration = 0): void => {
    state.phase = phase;
    state.iteration = iteration;
    upsertMemo({ phase, iteration });
  };
  enter('build');

  /** Generates one pending node: its segment, and its tool call if it made one. */
  const grow = async (id: string): Promise<void> => {
    const node = forest.nodes[id]!;
    const parent = texts.get(node.parent!)!;
    const output: GenerateResult = await calls.generate({
      weights: input.policy.weights,
      role: 'actor',
      prompt: parent.context,
      params: {
        // A turn may generate rl.maxNewTokens in all; with segmentTokens it does so a segment at a time.
        maxNewTokens: segmentBudget(parent, limits),
        temperature: cfg.rl.temperature,
        topP: cfg.rl.topP,
        stop: [TOOL_CALL_CLOSE],
        seed: fnv1a32(`${cfg.seed}:${input.rolloutId}:${id}`),
      },
      messageStarts: parent.starts,
      ...(input.policy.remote ? { remote: input.policy.remote } : {}),
    }, input.policy.inferenceQueue);
    prefill.promptTokens += output.promptTokens;
    prefill.cachedPromptTokens += output.cachedPromptTokens ?? 0;
    const generation: GenerationRef = { role: 'actor', turn: 1, actId: id, step: node.depth, tokens: output.tokens, weightVersion: output.weightVersion };
    // The parent's tool result, in tokens: what this prompt holds beyond the parent's own prompt and output.
    const parentNode = forest.nodes[node.parent!]!;
    if (parentNode.end === 'tool-call' && parentNode.envTokens === 0) {
      forest = withNodes(forest, [{ ...parentNode, envTokens: Math.max(0, output.promptTokens - parent.promptTokens - parentNode.generatedTokens) }]);
    }
    const read = readSegment(parent, parentNode.toolCalls, output, limits);
    const { end } = read;
    let text = read.text;
    if (read.call) {
      try {
        text = withToolOutcome(text, { value: await meteredCalc(calls.calc, read.call.expression, toolMetrics) });
      } catch (err) {
        text = withToolOutcome(text, { error: errorMessage(err) });
      }
    }
    texts.set(id, { ...text, promptTokens: output.promptTokens, generation });
    forest = completeSegment(forest, id, { generatedTokens: output.responseTokens, envTokens: 0, entropy: output.meanEntropy, end });
    if (keepsOpen(end)) {
      forest = addBranch(forest, id).forest;
      return;
    }
    const answer = end === 'eos' ? actorAnswer(text.context, texts.get(forest.roots[node.root]!)!.context) : null;
    answers.set(id, answer);
    forest = scoreLeaf(forest, id, answer === null ? 0 : arithReward(parsed[node.root]!, answer));
  };
  /** Generates until no node is pending: each round grows every pending node at once. */
  const growAll = async (): Promise<void> => {
    for (let pending = pendingNodes(forest); pending.length > 0; pending = pendingNodes(forest)) {
      await Promise.all(pending.map((id) => grow(id)));
    }
  };

  enter('initial-chains');
  await growAll();

  for (let iteration = 1; iteration <= tree.expansionIterations; iteration++) {
    enter('expansion', iteration);
    for (let r = 0; r < forest.roots.length; r++) {
      for (const id of selectExpansionNodes(forest, r, tree.expansionsPerIteration, tree.nodeSampling, rng, { includeRoot })) {
        for (let b = 0; b < tree.beamSize; b++) forest = addBranch(forest, id).forest;
      }
    }
    await growAll();
  }

  enter('outputs');
  const outputs = forest.roots.flatMap((_, r) =>
    sampleOutputs(forest, r, tree.samplesPerRoot, rng).map((o, k) => ({
      ...o,
      root: r,
      episodeId: `${self}/${o.id}#${k}`,
      groupId: `r${input.rolloutId}-p${r}`,
      reward: forest.nodes[o.id]!.reward ?? 0,
      // The output's segments, root excluded (it generated nothing).
      segments: pathTo(forest, o.id).slice(1),
    })),
  );
  // tree.advantage 'tree': each segment's TreeRL credit, from the rewards of the leaves below it.
  const credit = tree.advantage === 'tree' ? forest.roots.map((_, r) => treeAdvantages(forest, r, { reweight: 'sqrt' })) : undefined;
  const sets = await samples.writeEpisodeSamples({
    episodes: outputs.map((o) => ({
      episodeId: o.episodeId,
      groupId: o.groupId,
      reward: o.reward,
      generations: o.segments.map((id) => texts.get(id)!.generation!),
      ...(credit ? { segmentAdvantages: o.segments.map((id) => credit[o.root]![id] ?? 0) } : {}),
    })),
    timeline: cfg.timeline,
  });

  const rows: EpisodeRow[] = outputs.map((o) => ({
    episodeId: o.episodeId,
    groupId: o.groupId,
    expression: problems[o.root]!.expression,
    reward: o.reward,
    answer: answers.get(o.id) ?? null,
    ...(o.duplicate ? { failure: 'duplicate-leaf' } : {}),
  }));
  enter('done');
  const nodes = Object.values(forest.nodes).filter((n) => n.depth > 0);
  return rolloutSummary({
    rolloutId: input.rolloutId,
    mode: 'single',
    rows,
    answered: outputs.filter((o) => answers.get(o.id) !== null).length,
    // Every node that ended its path other than with an answer.
    failureCodes: Object.values(forest.nodes).flatMap((node) => (node.end && !keepsOpen(node.end) && node.end !== 'eos' ? [node.end] : [])),
    samples: sets,
    durationMs: workflowNow() - started,
    metrics: { generations: nodes.length, tools: toolMetrics },
    tree: {
      nodes: nodes.length,
      leaves: nodes.filter((n) => n.status === 'leaf').length,
      generatedTokens: generatedTokens(forest),
      duplicates: outputs.filter((o) => o.duplicate).length,
      ...prefill,
    },
  });
}

/** The act's answer from its transcript after the prompt; null when it gave none. */
function actorAnswer(context: string, prompt: string): string | null {
  try {
    return parseActorAnswer(context.slice(prompt.length));
  } catch (err) {
    if (err instanceof ActorAnswerError) return null;
    throw err;
  }
}

function skeleton(n: Forest['nodes'][string]) {
  const { segment: _segment, ...rest } = n;
  return rest;
}
