/**
 * An RL step's rollout: the newest weights as its policy (loaded into the remote server first when
 * there is one), and the rollout kind's batches on it (one, or with dynamic sampling as many as it
 * takes to fill the step with groups that have reward spread: src/rl/dynamic-sampling.ts).
 */
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import type { StepRollouts } from '../../src/contracts/training-run';
import type { PolicyRef } from '../../src/contracts/weights';
import { nextDynamicSample } from '../../src/rl/dynamic-sampling';
import { workflowNow } from '../clock';
import { failAsRun } from '../failures';
import { ROLLOUT_KINDS } from '../rollout-kinds';
import type { Run } from './run';

export interface StepRolloutRunner {
  /** The newest weights as a rollout's policy, and the workflow time (ms) they were published, before any sync. */
  rolloutPolicy(): Promise<{ policy: PolicyRef; tSync: number }>;
  /** One step's rollout on `policy`: its batches and, with dynamic sampling, the groups kept. */
  runRollouts(rlStep: number, policy: PolicyRef): Promise<StepRollouts>;
}

/** The step rollouts of one execution of the run. */
export function stepRollouts(run: Run): StepRolloutRunner {
  const { cfg, runId, remote } = run;
  const kind = ROLLOUT_KINDS[cfg.rollout.kind];
  // The weight version the remote server was last given in this execution (a resumed or continued
  // run syncs again: the server may have restarted meanwhile).
  let syncedVersion: number | undefined;
  return {
    async rolloutPolicy() {
      const policy: PolicyRef = { weights: await run.publish(), ...(remote ? { remote: remote.ref } : {}) };
      const tSync = workflowNow();
      // A remote server gets the step's weights before its rollout (checked by logprobs there).
      if (remote && syncedVersion !== policy.weights.version) {
        await failAsRun(run.inference.syncRemoteWeights({ runId, weights: policy.weights, checkpoint: run.checkpoint, remote: remote.ref, dir: remote.dir }));
        syncedVersion = policy.weights.version;
      }
      return { policy, tSync };
    },
    async runRollouts(rlStep, policy) {
      const dynamic = cfg.rl.dynamicSampling;
      const rollouts: RolloutSummary[] = [];
      let keepGroups: string[] = [];
      for (let batch = 0; ; batch++) {
        rollouts.push(await kind.run({ runId, rlStep, batch, config: cfg, policy }));
        if (!kind.batches) break;
        if (!dynamic.enabled) break;
        const next = nextDynamicSample(keepGroups, rollouts.at(-1)!.rows, { wanted: cfg.rl.promptsPerStep, batchesRun: batch + 1, maxBatches: dynamic.maxBatchesPerStep });
        keepGroups = next.kept;
        if (!next.more) break;
      }
      return { rollouts, keepGroups };
    },
  };
}
