/**
 * One agent's timelines, in capture order, made into samples as the timeline config says: each
 * earlier output parted from the template's text after it (output-split.ts), retokenization drift
 * repaired (drift.ts), the timelines another one extends absorbed into it (merge.ts), and every
 * survivor turned into a sample (to-sample.ts), with the counts and snap reports of the merge.
 */
import type { Sample } from '../domain/types';
import type { TimelineCounts } from './counts';
import { fixRetokenizationDrift } from './drift';
import { mergeTimelines } from './merge';
import { splitAtOutputs } from './output-split';
import { mergeStats } from './stats';
import { timelineToSample } from './to-sample';
import type { MergeOptions, SnapReport, Timeline } from './types';

/** The run config's `timeline` section, as the merge reads it (src/config/schema.ts declares the keys). */
export interface TimelineMergeConfig extends MergeOptions {
  /** Train on merged timelines (false: every timeline its own sample, as captured). */
  merge: boolean;
  fixRetokenizationDrift: boolean;
}

/** A sample's trainable part: the labels (reward, metadata) are the caller's to add. */
export type TrainableSample = Omit<Sample, 'reward' | 'metadata'>;

export interface AgentMerge {
  /** A sample per surviving timeline: its id, and the ids of the timelines absorbed into it. */
  samples: Array<{ sample: TrainableSample; timeline: string; absorbed: string[] }>;
  counts: TimelineCounts;
  snaps: SnapReport[];
}

/**
 * The samples of one agent's timelines. `credit`, when given, is each survivor's per-response-token
 * values (written as tokenAdvantages). With cfg.merge false every timeline is its own sample.
 */
export function mergeAgentTimelines(own: Timeline[], cfg: TimelineMergeConfig, credit?: (survivor: Timeline) => number[]): AgentMerge {
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
