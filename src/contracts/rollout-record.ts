/**
 * What one RL update trained on, written by trainGrpo next to its checkpoint (blob name
 * names.rolloutRecord) and read by the rollout viewer. It lives in the blob store, not in the
 * history: the samples stay behind their references, and the per-sample credit is a few numbers
 * per sample. Written once per step (content-addressed, named if absent), never read by a run.
 */
import type { PlanActRoleName } from './plan-act-episode';
import type { SampleSetRef, SampleSets } from './sample-set';

/** What the update made of one sample: the advantage it got and whether it became a training row. */
export interface SampleCredit {
  /** The scalar advantage of its episode (RFT: 1 for a correct episode); tree credit is per token on the sample. */
  advantage: number;
  status: 'trained' | 'no-trained-token' | 'too-long' | 'rejected';
}

/** Why a sample was not trained: dropped by dynamic sampling before the update (not-kept), or by the update. */
export type SampleStatus = SampleCredit['status'] | 'not-kept';

export interface RolloutRecord {
  version: 1;
  runId: string;
  /** The global step the update produced (SFT steps + RL step; its checkpoint's step). */
  step: number;
  /** The weight version the update started from: a sample's staleness is this minus its weightVersion. */
  policyVersion: number;
  /** True when policyVersion came from the run (rl.async); false: the newest version among the samples (synchronous runs). */
  policyVersionKnown: boolean;
  objective: 'grpo' | 'rft';
  /** The rollout's sample sets, in the order the samples are numbered below. */
  sets: SampleSetRef[];
  /** Per sample of `sets` (set by set, in file order): its advantage and what the update did with it. */
  credit: Array<{ advantage: number; status: SampleStatus }>;
  /** Dynamic sampling: the groups kept for training (absent: all). */
  keepGroups?: string[];
  /** The workflow whose update this was (trainingRun, planActJob): a job's single-agent samples are its fallback rollouts. */
  workflowType?: string;
  /** The group advantages' settings, for reading them. */
  normAdvByStd: boolean;
  advantageNorm: 'episode' | 'role';
}

/**
 * A dual-mode rollout session's episodes (blob name names.sessionRecord): both roles' sample sets
 * and the jobs that trained them. Each job's rollout record holds only its own role's samples; the
 * viewer shows an episode's other role from here.
 */
export interface SessionRecord {
  version: 1;
  sessionId: string;
  rolloutId: number;
  samples: SampleSets;
  jobs: Partial<Record<PlanActRoleName, string>>;
}
