/**
 * A recorded RL update as the page shows it: the GRPO groups side by side, each episode's reward,
 * advantage, length, tool calls, weight versions and staleness; tree groups as trees. Pure: the
 * server hands it the record and the samples it read.
 */
import type { RolloutRecord } from '../contracts/rollout-record';
import type { AgentRole, Sample } from '../domain/types';
import { TOOL_CALL_OPEN } from '../planact/protocol';
import { TOOL_START as HERMES_TOOL_CALL_OPEN } from '../chat/hermes';
import { sumCounts } from '../timeline/counts';
import { groupKey } from '../rl/advantages';
import type { TextTokenizer } from '../model/tokenizer-types';
import { episodeWorkflowId, shapeOf, workflowUiUrl, type RolloutShape } from './links';
import type { EpisodeSummary, GroupView, StepView, TreeNodeView } from './view-types';
import type { RlStepMetrics } from '../report/run-metrics';

/** A sample of the record with its number (set by set, in file order) and its credit. */
export interface NumberedSample {
  index: number;
  sample: Sample;
  credit: RolloutRecord['credit'][number];
}

export interface LinkSettings {
  /** The Temporal Web UI's address; absent: no links. */
  uiUrl?: string;
  namespace: string;
  /** The run is a Plan/Act job (no trainingRun state): its single-agent episodes are fallbacks. */
  planActJob?: boolean;
}

export function numberSamples(record: RolloutRecord, samples: readonly Sample[]): NumberedSample[] {
  if (samples.length !== record.credit.length) {
    throw new Error(`the record of step ${record.step} credits ${record.credit.length} samples but its sets hold ${samples.length}`);
  }
  return samples.map((sample, index) => ({ index, sample, credit: record.credit[index]! }));
}

/** Samples by episode, episodes in order of first appearance. */
export function byEpisode(samples: readonly NumberedSample[]): Map<string, NumberedSample[]> {
  const out = new Map<string, NumberedSample[]>();
  for (const s of samples) {
    const list = out.get(s.sample.metadata.episodeId) ?? [];
    list.push(s);
    out.set(s.sample.metadata.episodeId, list);
  }
  return out;
}

function countOccurrences(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

/** Tool calls the model wrote in a sample: `<calc>` (chat episodes: Hermes `<tool_call>`) in its trained (model-written) tokens. */
function toolCalls(tok: TextTokenizer, s: Sample): number {
  const written = s.responseTokens.filter((_, j) => (s.lossMask[j] ?? 0) > 0);
  return countOccurrences(tok.decode(written), s.metadata.chat ? HERMES_TOOL_CALL_OPEN : TOOL_CALL_OPEN);
}

const TREE_OUTPUT = /\/(r\d+(?:\.\d+)*)#\d+$/;

export function episodeSummary(
  record: RolloutRecord,
  episodeId: string,
  samples: readonly NumberedSample[],
  tok: TextTokenizer,
  links: LinkSettings,
): EpisodeSummary {
  const plain = samples.map((s) => s.sample);
  const shape = shapeOf(record.runId, episodeId, plain, links.planActJob ?? false);
  const workflowId = episodeWorkflowId(record.runId, episodeId, shape);
  // A partial rollout's sample spans several versions (metadata.weightVersions).
  const versions = [...new Set(plain.flatMap((s) => s.metadata.weightVersions ?? [s.metadata.weightVersion]))].sort((a, b) => a - b);
  // The advantage its trained samples got: one per episode, or one per role with rl.advantageNorm
  // role (tree credit is per token, on the samples).
  const credited = samples.find((s) => s.credit.status === 'trained') ?? samples[0]!;
  const byRole: Partial<Record<AgentRole, number>> = {};
  for (const s of samples) if (s.credit.status === 'trained') byRole[s.sample.metadata.role] ??= s.credit.advantage;
  const roleValues = new Set(Object.values(byRole));
  const tree = TREE_OUTPUT.exec(episodeId);
  const horizon = plain.find((s) => s.metadata.planHorizon !== undefined)?.metadata.planHorizon;
  return {
    episodeId,
    reward: plain[0]!.reward,
    advantage: credited.credit.advantage,
    ...(roleValues.size > 1 ? { advantageByRole: byRole } : {}),
    samples: samples.length,
    trained: samples.filter((s) => s.credit.status === 'trained').length,
    statuses: [...new Set(samples.map((s) => s.credit.status))],
    responseTokens: plain.reduce((n, s) => n + s.responseTokens.length, 0),
    trainedTokens: plain.reduce((n, s) => n + s.lossMask.filter((m) => m > 0).length, 0),
    toolCalls: plain.reduce((n, s) => n + toolCalls(tok, s), 0),
    roles: [...new Set(plain.map((s) => s.metadata.role))],
    weightVersions: versions,
    staleness: record.policyVersion - versions[0]!,
    shape,
    ...(workflowId ? { workflowId } : {}),
    ...(workflowId && links.uiUrl ? { workflowUrl: workflowUiUrl(links.uiUrl, links.namespace, workflowId) } : {}),
    ...(tree ? { treeNode: tree[1]! } : {}),
    ...(horizon !== undefined ? { planHorizon: horizon } : {}),
  };
}

/** A group's tree: every node on its outputs' paths (r0 -> r0.2 -> r0.2.1), outputs at their leaves. */
export function groupTree(episodes: readonly EpisodeSummary[]): TreeNodeView | undefined {
  const outputs = episodes.filter((e) => e.treeNode !== undefined);
  if (outputs.length === 0) return undefined;
  const nodes = new Map<string, TreeNodeView>();
  const node = (id: string): TreeNodeView => {
    let n = nodes.get(id);
    if (!n) {
      n = { id, children: [], outputs: [] };
      nodes.set(id, n);
      const cut = id.lastIndexOf('.');
      if (cut > 0) node(id.slice(0, cut)).children.push(n);
    }
    return n;
  };
  for (const e of outputs) node(e.treeNode!).outputs.push({ episodeId: e.episodeId, reward: e.reward, advantage: e.advantage });
  const sortTree = (n: TreeNodeView): TreeNodeView => {
    n.children.sort((a, b) => a.id.localeCompare(b.id, 'en', { numeric: true }));
    n.children.forEach(sortTree);
    return n;
  };
  const rootId = outputs[0]!.treeNode!.split('.')[0]!;
  return sortTree(node(rootId));
}

function shorten(text: string, max: number): string {
  return text.length <= max ? text : `…${text.slice(text.length - max)}`;
}

export interface StepViewOptions {
  rlStep: number;
  groupOffset: number;
  groupLimit: number;
  links: LinkSettings;
  metrics?: RlStepMetrics;
}

export function stepView(record: RolloutRecord, samples: readonly NumberedSample[], tok: TextTokenizer, opts: StepViewOptions): StepView {
  const episodes = byEpisode(samples);
  const groups = new Map<string, { groupId: string; first: Sample; episodes: string[] }>();
  for (const [episodeId, list] of episodes) {
    const first = list[0]!.sample;
    const key = groupKey(first.metadata.groupId, episodeId);
    const g = groups.get(key) ?? { groupId: first.metadata.groupId ?? episodeId, first, episodes: [] };
    g.episodes.push(episodeId);
    groups.set(key, g);
  }
  const all = [...groups.values()];
  const shown = all.slice(opts.groupOffset, opts.groupOffset + opts.groupLimit);
  const views: GroupView[] = shown.map((g) => {
    const summaries = g.episodes.map((id) => episodeSummary(record, id, episodes.get(id)!, tok, opts.links));
    const tree = groupTree(summaries);
    return {
      groupId: g.groupId,
      prompt: shorten(tok.decode(g.first.promptTokens), 400),
      meanReward: summaries.reduce((a, e) => a + e.reward, 0) / summaries.length,
      episodes: summaries,
      ...(tree ? { tree } : {}),
    };
  });
  const shapes = new Set<RolloutShape>(views.flatMap((g) => g.episodes.map((e) => e.shape)));
  // The metrics line's, else the record's own sets' (runs without a metrics file).
  const chatCheck = opts.metrics?.timelines?.chat ?? sumCounts(record.sets.flatMap((s) => (s.timelines ? [s.timelines] : [])))?.chat;
  return {
    runId: record.runId,
    step: record.step,
    rlStep: opts.rlStep,
    policyVersion: record.policyVersion,
    policyVersionKnown: record.policyVersionKnown,
    objective: record.objective,
    shape: shapes.size === 1 ? [...shapes][0]! : 'unknown',
    fellBack: shapes.has('fallback'),
    samples: samples.length,
    episodes: episodes.size,
    groups: views,
    page: { offset: opts.groupOffset, limit: opts.groupLimit, total: all.length },
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
    ...(chatCheck ? { chatCheck } : {}),
  };
}
