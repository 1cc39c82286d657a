/**
 * One episode's policy calls as timelines, merged per agent (src/timeline): the part of
 * writeEpisodeSamples that turns captured requests into the samples training sees.
 */
import type { AgentRole, Sample } from '../src/domain/types';
import type { RunConfig } from '../src/config/schema';
import { captureTimeline } from '../src/timeline/capture';
import { fixRetokenizationDrift } from '../src/timeline/drift';
import { splitAtOutputs } from '../src/timeline/output-split';
import { mergeTimelines } from '../src/timeline/merge';
import { mergeStats } from '../src/timeline/stats';
import { timelineToSample } from '../src/timeline/to-sample';
import type { SnapReport, Timeline } from '../src/timeline/types';
import type { TimelineCounts } from '../src/timeline/counts';
import type { CompletionTokens, GenerationRef } from '../src/contracts/samples';

/** The tools list each agent is offered, as the chat template would render it. */
const TOOLS: Record<AgentRole, string> = { planner: '', actor: '[{"name":"calc"}]', single: '[{"name":"calc"}]' };

export interface MergedRole {
  /**
   * A sample per surviving timeline, with the call it ended on (its turn and act label the sample)
   * and every call merged into it, that one included, in capture order.
   */
  samples: Array<{ sample: Omit<Sample, 'reward' | 'metadata'>; generation: GenerationRef; merged: GenerationRef[] }>;
  counts: TimelineCounts;
  snaps: SnapReport[];
}

/**
 * One agent's timelines (in capture order) repaired and merged as the timeline config says (each
 * earlier output parted from the template's text after it first, output-split.ts): a
 * sample per surviving timeline (its id with it, and the ids of the timelines absorbed into it),
 * and the counts and snap reports of the merge. With timeline.merge false every timeline is its own
 * sample, as captured.
 */
export function mergeAgentTimelines(
  own: Timeline[],
  cfg: RunConfig['timeline'],
  credit?: (survivor: Timeline) => number[],
): { samples: Array<{ sample: Omit<Sample, 'reward' | 'metadata'>; timeline: string; absorbed: string[] }>; counts: TimelineCounts; snaps: SnapReport[] } {
  const parted = cfg.merge ? splitAtOutputs(own, cfg.compareBy).timelines : own;
  const fixed = cfg.merge && cfg.fixRetokenizationDrift ? fixRetokenizationDrift(parted) : { timelines: parted, repaired: 0 };
  const merged = cfg.merge
    ? mergeTimelines(fixed.timelines, { compareBy: cfg.compareBy, ignoreTools: cfg.ignoreTools, snapDetection: cfg.snapDetection })
    : { timelines: own, absorbed: [], snaps: [], stats: mergeStats(own, own) };
  const absorbedInto = new Map<string, string[]>();
  for (const a of merged.absorbed) {
    for (const survivor of a.into) {
      const list = absorbedInto.get(survivor);
      if (list) list.push(a.id);
      else absorbedInto.set(survivor, [a.id]);
    }
  }
  const samples = merged.timelines.flatMap((t) => {
    const sample = timelineToSample(t, { reward: 0, metadata: { role: 'single', episodeId: '', turn: 0, weightVersion: 0 } });
    if (!sample) return [];
    const { reward: _r, metadata: _m, ...trainable } = sample;
    const tokenAdvantages = credit?.(t);
    return [{ sample: { ...trainable, ...(tokenAdvantages ? { tokenAdvantages } : {}) }, timeline: t.id, absorbed: absorbedInto.get(t.id) ?? [] }];
  });
  const snaps: TimelineCounts['snaps'] = {};
  for (const s of merged.snaps) snaps[s.reason] = (snaps[s.reason] ?? 0) + 1;
  return {
    samples,
    counts: {
      captured: own.length,
      merged: samples.length,
      tokensBefore: merged.stats.tokensIn,
      tokensAfter: samples.reduce((n, s) => n + s.sample.promptTokens.length + s.sample.responseTokens.length, 0),
      driftRepaired: fixed.repaired,
      ...(cfg.snapDetection ? { snaps } : {}),
    },
    snaps: merged.snaps,
  };
}

/** A call that could not be captured (a blob from before capture) is kept as its own sample. */
export function unmergedCounts(t: CompletionTokens): TimelineCounts {
  const tokens = t.promptTokenIds.length + t.tokenIds.length;
  return { captured: 1, merged: 1, tokensBefore: tokens, tokensAfter: tokens, driftRepaired: 0 };
}

/** Captures every call of one episode and merges each agent's timelines; the agent is the role. */
export function mergeEpisode(
  generations: GenerationRef[],
  tokens: CompletionTokens[],
  cfg: RunConfig['timeline'],
  segmentAdvantages?: readonly number[],
): Map<AgentRole, MergedRole> {
  const byId = new Map<string, GenerationRef>();
  const indexOf = new Map<string, number>();
  const timelines: Timeline[] = generations.map((g, i) => {
    const t = tokens[i]!;
    const id = `${i}:${g.role}/t${g.turn}${g.actId !== undefined ? `/act${g.actId}` : ''}/s${g.step ?? 0}`;
    byId.set(id, g);
    indexOf.set(id, i);
    return captureTimeline({
      id,
      agent: g.role,
      tools: TOOLS[g.role],
      prompt: t.messages!,
      output: { text: t.outputText!, tokenIds: t.tokenIds, logprobs: t.logprobs },
    });
  });
  const out = new Map<AgentRole, MergedRole>();
  for (const role of [...new Set(generations.map((g) => g.role))]) {
    const merged = mergeAgentTimelines(
      timelines.filter((t) => t.agent === role),
      cfg,
      segmentAdvantages ? (t) => segmentTokenValues(t, segmentAdvantages, indexOf.get(t.id)!) : undefined,
    );
    out.set(role, {
      ...merged,
      samples: merged.samples.map((s) => ({
        sample: s.sample,
        generation: byId.get(s.timeline)!,
        merged: [...s.absorbed, s.timeline].sort((a, b) => indexOf.get(a)! - indexOf.get(b)!).map((id) => byId.get(id)!),
      })),
    });
  }
  return out;
}

/**
 * Per response token of a merged timeline's sample, the value of the generation that wrote it: the
 * k-th llm message is the output of the k-th of the calls merged into it (a chain's calls, in
 * order, ending with the survivor's own call at `lastIndex`); env tokens get 0 (they are masked).
 */
function segmentTokenValues(t: Timeline, values: readonly number[], lastIndex: number): number[] {
  const llm = t.messages.filter((m) => m.author === 'llm').length;
  const first = lastIndex - llm + 1;
  if (first < 0) throw new Error(`timeline ${t.id}: ${llm} model messages but only ${lastIndex + 1} calls before it`);
  const out: number[] = [];
  let k = first;
  let seen = false;
  for (const m of t.messages) {
    if (m.author === 'llm') seen = true;
    if (!seen) continue;
    const v = m.author === 'llm' ? values[k++]! : 0;
    for (let x = 0; x < m.tokenIds.length; x++) out.push(v);
  }
  return out;
}
