/**
 * updatePolicy: one policy update (GRPO, or RFT with objective 'rft') on a rollout's sample sets, as
 * trainingRun, its RFT baseline and a training planActJob make it. It schedules the trainGrpo
 * activity (a registered name kept for recorded histories and the torch worker), which runs
 * src/rl/policy-update.ts updatePolicy. The update makes the next global step after the checkpoint
 * and gets the frozen reference (the checkpoint RL started from) only when the KL loss or penalty
 * needs it.
 */
import type { TrainGrpoOutput } from '../activities/training';
import type { RunConfig } from '../src/config/schema';
import type { SampleSetRef } from '../src/contracts/sample-set';
import type { CheckpointInfo } from '../src/contracts/weights';
import { activityProxies } from './activity-proxies';

export interface PolicyUpdateRequest {
  runId: string;
  checkpoint: CheckpointInfo;
  samples: SampleSetRef[];
  rl: RunConfig['rl'];
  /** The first update of RL: SFT's Adam moments do not fit policy-gradient scales. */
  resetOptimizer: boolean;
  /** The checkpoint RL started from. */
  rlStart: CheckpointInfo;
  /** Dynamic sampling: train only on these GRPO groups. */
  keepGroups?: string[];
  /** Asynchronous RL: the weight version of the checkpoint being trained. */
  policyVersion?: number;
  /** compare.rft: fit only the correct episodes. */
  objective?: 'rft';
}

export function updatePolicy(training: ReturnType<typeof activityProxies>['training'], u: PolicyUpdateRequest): Promise<TrainGrpoOutput> {
  return training.trainGrpo({
    runId: u.runId,
    checkpoint: u.checkpoint,
    samples: u.samples,
    step: u.checkpoint.step + 1,
    rl: u.rl,
    resetOptimizer: u.resetOptimizer,
    // The frozen reference policy of the KL loss / penalty.
    ...(u.rl.useKlLoss || u.rl.useKlInReward ? { reference: u.rlStart } : {}),
    ...(u.keepGroups ? { keepGroups: u.keepGroups } : {}),
    ...(u.policyVersion !== undefined ? { policyVersion: u.policyVersion } : {}),
    ...(u.objective ? { objective: u.objective } : {}),
  });
}
