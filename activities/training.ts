/**
 * Training-queue activities: thin adapters from Temporal to src/rl and src/model. Each one is
 * idempotent: a retry after a crash finds the named result of an earlier attempt and returns it,
 * so no checkpoint is written twice, and content addressing means no bytes are stored twice.
 *
 * Every named result (checkpoints, SFT chunks, RL steps, published weights) is keyed by what it was
 * made from as well as by its name (src/store/named-results.ts): a start under a workflow id whose
 * results were made from other inputs (a source run that trained further since) is refused with a
 * ConfigError naming what differs, instead of being handed the other start's result. An RL step's
 * inputs are its checkpoint, reference, config and optimizer reset, not its samples: a step redone
 * after a resume rolls the same policy out again, whose samples can differ (float rounding of
 * batched logits), and reuses the update that was finished (docs/main-job.md, "Resume a run").
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { BlobRef, Sample } from '../src/domain/types';
import { getJson, putJson, type BlobStore } from '../src/store/blob-store';
import { jsonDigest, namedResult, onceByName, type MadeFrom } from '../src/store/named-results';
import type { RolloutRecord, SampleCredit } from '../src/contracts/rollout-record';
import { initTfBackend } from '../src/model/backend';
import { decodeCheckpoint, encodeCheckpoint, type Checkpoint } from '../src/model/checkpoint';
import { initWeights } from '../src/model/init';
import { exportOnnx, readOnnxMetadata } from '../src/model/onnx-export';
import { loadTokenizer } from '../src/model/tokenizer';
import { readHfStartingPolicy, refuseOtherShape, StartingPolicyError } from '../src/model/starting-policy';
import { sha256Hex } from '../src/store/blob-keys';
import { updatePolicy, type PolicyUpdateResult } from '../src/rl/policy-update';
import { runSftChunk, type SftExample } from '../src/sft/sft';
import type { RunConfig } from '../src/config/schema';
import type { CheckpointInfo, LossPoint, WeightsInfo } from '../src/contracts/weights';
import type { SampleSetRef } from '../src/contracts/sample-set';
import { checkpointSteps, names } from '../src/store/run-names';
import { refuseOtherInputs } from './named-results';
import { readSamples } from '../src/contracts/sample-set';
import { RECORDED_MICRO_BATCH } from '../src/config/recorded';

export interface InitPolicyInput {
  runId: string;
  model: RunConfig['model'];
  seed: number;
  /** The run's trainer section (the torch worker reads it; this trainer is trainer.backend tfjs). */
  trainer?: RunConfig['trainer'];
}

export interface TrainSftInput {
  runId: string;
  checkpoint: CheckpointInfo;
  dataset: BlobRef;
  toStep: number;
  sft: RunConfig['sft'];
  seed: number;
  /** Train exactly this many tokens (the step reaching them trains only what is left), before toStep if need be. */
  maxTrainedTokens?: number;
  /** The run's trainer section (the torch worker reads it; this trainer is trainer.backend tfjs). */
  trainer?: RunConfig['trainer'];
}

export interface TrainSftOutput {
  checkpoint: CheckpointInfo;
  losses: LossPoint[];
  tokensPerSec: number;
  /** Loss-masked tokens trained; absent in chunks recorded before it was counted. */
  trainedTokens?: number;
}

export interface TrainGrpoInput {
  runId: string;
  checkpoint: CheckpointInfo;
  /** The rollout's sample sets; in shared mode planner and actor, trained as one batch. */
  samples: SampleSetRef[];
  /** Global step (SFT steps + RL step) the new checkpoint is named after. */
  step: number;
  rl: RunConfig['rl'];
  /** True on the first RL step: SFT's Adam moments do not fit policy-gradient scales. */
  resetOptimizer?: boolean;
  /** The checkpoint RL started from: the frozen reference of rl.useKlLoss and rl.useKlInReward. */
  reference?: CheckpointInfo;
  /** Dynamic sampling: train only on the samples of these GRPO groups (absent = every sample). */
  keepGroups?: string[];
  /** Asynchronous RL: the weight version of `checkpoint` (staleness and off-policy correction, rl.async). */
  policyVersion?: number;
  /** rft: rejection-sampling fine-tuning, only the correct episodes with advantage 1 (compare.rft); default grpo. */
  objective?: 'grpo' | 'rft';
  /** The run's trainer section (the torch worker reads it; this trainer is trainer.backend tfjs). */
  trainer?: RunConfig['trainer'];
}

/** The update's numbers, with the checkpoint as a blob-store reference instead of weights. */
export type TrainGrpoOutput = Omit<PolicyUpdateResult, 'checkpoint' | 'perSample'> & { checkpoint: CheckpointInfo };

/**
 * What the update trained on, for the rollout viewer (src/contracts/rollout-record.ts): the sample
 * sets and each sample's advantage and status. Named once per step; a retry writes the same bytes.
 */
async function writeRolloutRecord(store: BlobStore, input: TrainGrpoInput, all: readonly Sample[], kept: (s: Sample) => boolean, perSample: readonly SampleCredit[]): Promise<void> {
  const workflowType = Context.current().info.workflowType;
  let next = 0;
  const credit = all.map((s) => (kept(s) ? perSample[next++]! : { advantage: 0, status: 'not-kept' as const }));
  const record: RolloutRecord = {
    version: 1,
    runId: input.runId,
    step: input.step,
    policyVersion: input.policyVersion ?? all.reduce((m, s) => Math.max(m, ...(s.metadata.weightVersions ?? [s.metadata.weightVersion])), 0),
    policyVersionKnown: input.policyVersion !== undefined,
    objective: input.objective ?? 'grpo',
    sets: input.samples,
    credit,
    ...(input.keepGroups ? { keepGroups: input.keepGroups } : {}),
    ...(workflowType ? { workflowType } : {}),
    normAdvByStd: input.rl.normAdvByStd,
    // Absent in configs recorded before the key.
    advantageNorm: input.rl.advantageNorm ?? 'episode',
  };
  await store.nameIfAbsent(names.rolloutRecord(input.runId, input.step), await putJson(store, record, 'rollout-record'));
}

export interface CheckpointFromRunInput {
  runId: string;
  /** Workflow id of the earlier trainingRun. */
  fromRun: string;
  /** Its checkpoint at this step; default its latest. */
  step?: number;
  model: RunConfig['model'];
  /** The run's trainer section (the torch worker reads it; this trainer is trainer.backend tfjs). */
  trainer?: RunConfig['trainer'];
}

export interface CheckpointFromHfInput {
  runId: string;
  /** A Hugging Face GPT-2 directory on the training workers. */
  dir: string;
  model: RunConfig['model'];
  /** The run's trainer section (the torch worker reads it; this trainer is trainer.backend tfjs). */
  trainer?: RunConfig['trainer'];
}

export interface PublishWeightsInput {
  runId: string;
  checkpoint: CheckpointInfo;
  version: number;
}

/** A checkpoint as a record of what a result was made from lists it: its content address and step. */
const checkpointText = (c: CheckpointInfo): string => `${c.ref.sha256} (step ${c.step})`;

/** What an SFT chunk (its result and its checkpoint) is made from. */
function sftChunkInputs(input: TrainSftInput): MadeFrom {
  return {
    activity: 'trainSft',
    checkpoint: checkpointText(input.checkpoint),
    dataset: input.dataset.sha256,
    'sft config': jsonDigest(input.sft),
    seed: String(input.seed),
    'to step': String(input.toStep),
    ...(input.maxTrainedTokens !== undefined ? { 'token budget': String(input.maxTrainedTokens) } : {}),
  };
}

/** What an RL step (its result and its checkpoint) is made from; see the file's comment for why not its samples. */
function rlStepInputs(input: TrainGrpoInput): MadeFrom {
  return {
    activity: 'trainGrpo',
    checkpoint: checkpointText(input.checkpoint),
    'rl config': jsonDigest(input.rl),
    'reset optimizer': String(input.resetOptimizer ?? false),
    objective: input.objective ?? 'grpo',
    ...(input.reference ? { reference: checkpointText(input.reference) } : {}),
  };
}

export function createTrainingActivities({ store }: { store: BlobStore }) {
  /**
   * Names the checkpoint for its run and step, made from `madeFrom`. `exact`: its bytes follow from
   * those inputs (an initialisation, a copy), so one written before made-from records is adopted
   * only if it holds the same bytes; a trained one is adopted as it is (a retry after the upgrade
   * of an attempt that crashed after naming it).
   */
  const saveCheckpoint = async (runId: string, ckpt: Checkpoint, madeFrom: MadeFrom, exact = false, bytes = encodeCheckpoint(ckpt)): Promise<CheckpointInfo> => {
    const name = names.checkpoint(runId, ckpt.step);
    const ref = await namedResult(
      store,
      {
        name,
        what: `checkpoint step ${ckpt.step} of workflow id '${runId}'`,
        madeFrom,
        ...(exact ? { checkUnrecorded: async (held) => sameBytes(held, bytes, 'checkpoint') } : {}),
      },
      () => store.put(bytes, 'checkpoint'),
    );
    return { name, ref, step: ckpt.step };
  };

  return {
    async initPolicy(input: InitPolicyInput): Promise<{ checkpoint: CheckpointInfo; backend: string; parameters: number }> {
      // Heartbeats between the stages, as publishWeights (a killed worker noticed after heartbeatSec).
      heartbeatIfActivity('start');
      const backend = await initTfBackend();
      heartbeatIfActivity('backend');
      const { dModel, nLayers, nHeads, dFf, maxSeq } = input.model;
      const config = { dModel, nLayers, nHeads, dFf, maxSeq, vocabSize: loadTokenizer().vocabSize };
      const weights = initWeights(config, input.seed);
      heartbeatIfActivity('initialised');
      const parameters = Object.values(weights).reduce((a, w) => a + w.length, 0);
      // Deterministic init: a retry produces the same bytes, which saveCheckpoint stores once.
      const madeFrom = { activity: 'initPolicy', model: jsonDigest(config), seed: String(input.seed) };
      const checkpoint = await refuseOtherInputs(() => saveCheckpoint(input.runId, { config, weights, step: 0 }, madeFrom, true));
      return { checkpoint, backend: backend.name, parameters };
    },

    async trainSft(input: TrainSftInput): Promise<TrainSftOutput> {
      const madeFrom = sftChunkInputs(input);
      const spec = { name: names.sftChunk(input.runId, input.toStep), what: `SFT chunk to step ${input.toStep} of workflow id '${input.runId}'`, madeFrom };
      return refuseOtherInputs(() => onceByName(store, spec, 'sft-chunk', async (): Promise<TrainSftOutput> => {
        await initTfBackend();
        const ctx = Context.current();
        const ckpt = decodeCheckpoint(await store.get(input.checkpoint.ref));
        const { examples } = await getJson<{ examples: SftExample[] }>(store, input.dataset);
        const chunk = await runSftChunk(ckpt, examples, input.toStep, input.sft, input.seed, async (step, loss) => {
          ctx.heartbeat({ step, loss });
          // Let the heartbeat and cancellation go out between synchronous tfjs steps.
          await new Promise((r) => setImmediate(r));
          if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
        }, input.maxTrainedTokens);
        return {
          checkpoint: await saveCheckpoint(input.runId, chunk.checkpoint, madeFrom),
          losses: chunk.losses,
          tokensPerSec: Math.round(chunk.tokensPerSec),
          trainedTokens: chunk.trainedTokens,
        };
      }));
    },

    /**
     * The policy update (src/rl/policy-update.ts updatePolicy; GRPO, or RFT with objective 'rft').
     * Registered as trainGrpo, the name recorded histories and the torch worker know, so it stays.
     */
    async trainGrpo(input: TrainGrpoInput): Promise<TrainGrpoOutput> {
      const needsReference = input.rl.useKlLoss || input.rl.useKlInReward;
      if (needsReference && !input.reference) {
        throw ApplicationFailure.nonRetryable(
          'rl.useKlLoss and rl.useKlInReward need a reference policy, but trainGrpo got no reference checkpoint (TrainGrpoInput.reference)',
          'BadInputError',
        );
      }
      const madeFrom = rlStepInputs(input);
      const spec = { name: names.rlStep(input.runId, input.step), what: `RL step ${input.step} of workflow id '${input.runId}'`, madeFrom };
      return refuseOtherInputs(() => onceByName(store, spec, 'rl-step', async (): Promise<TrainGrpoOutput> => {
        await initTfBackend();
        const ctx = Context.current();
        ctx.heartbeat({ step: input.step, phase: 'load' });
        const ckpt = decodeCheckpoint(await store.get(input.checkpoint.ref));
        const reference = needsReference && input.reference ? decodeCheckpoint(await store.get(input.reference.ref)) : undefined;
        const all = (await Promise.all(input.samples.map((s) => readSamples(store, s.ref)))).flat();
        const keep = input.keepGroups ? new Set(input.keepGroups) : undefined;
        const kept = (s: Sample) => !keep || (s.metadata.groupId !== undefined && keep.has(s.metadata.groupId));
        const samples = all.filter(kept);
        ctx.heartbeat({ step: input.step, phase: 'update', samples: samples.length });
        const r = await updatePolicy(ckpt, samples, {
          rl: input.rl,
          step: input.step,
          resetOptimizer: input.resetOptimizer ?? false,
          // An activity scheduled by an older workflow (input recorded before rl.microBatch) cuts as it did.
          microBatchRows: (input.rl.microBatch ?? RECORDED_MICRO_BATCH).rows,
          byLength: (input.rl.microBatch ?? RECORDED_MICRO_BATCH).byLength,
          // The step seeds the mini-batch shuffle: a retry replays the same update.
          seed: input.step,
          ...(reference ? { reference } : {}),
          ...(input.policyVersion !== undefined ? { policyVersion: input.policyVersion } : {}),
          ...(input.objective ? { objective: input.objective } : {}),
          onProgress: async (p) => {
            ctx.heartbeat({ step: input.step, ...p });
            // Let the heartbeat and cancellation go out between synchronous tfjs passes.
            await new Promise((r) => setImmediate(r));
            if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
          },
        });
        const { perSample, ...numbers } = r;
        await writeRolloutRecord(store, input, all, kept, perSample);
        return { ...numbers, checkpoint: await saveCheckpoint(input.runId, r.checkpoint, madeFrom) };
      }));
    },

    /**
     * Starts this run from an earlier run's checkpoint, as that run would go on: same step, weights
     * and Adam state. So SFT continued from it (the more-SFT and filtered-SFT baselines) takes the
     * learning rate of that step (past the schedule's end: its floor) and new batches, instead of
     * warming up to the full rate again and replaying the batches of step 1 (issue 24). RL resets
     * the Adam state at its first step either way.
     */
    async checkpointFromRun(input: CheckpointFromRunInput): Promise<CheckpointInfo> {
      const steps = await checkpointSteps(store, input.fromRun);
      heartbeatIfActivity('listed');
      if (steps.length === 0) {
        throw ApplicationFailure.nonRetryable(`init.fromRun: no checkpoints of run '${input.fromRun}' in the blob store`, 'ConfigError');
      }
      const step = input.step ?? Math.max(...steps);
      const ref = await store.getName(names.checkpoint(input.fromRun, step));
      if (!ref) {
        throw ApplicationFailure.nonRetryable(`init.step: run '${input.fromRun}' has no checkpoint at step ${step} (it has ${steps.join(', ')})`, 'ConfigError');
      }
      const ckpt = decodeCheckpoint(await store.get(ref));
      heartbeatIfActivity('decoded');
      asConfigFailure('init.fromRun', () => refuseOtherShape(input.model, ckpt.config, `'${input.fromRun}'`));
      const madeFrom = { activity: 'checkpointFromRun', checkpoint: `${ref.sha256} (step ${step} of workflow id '${input.fromRun}')` };
      return refuseOtherInputs(() => saveCheckpoint(input.runId, ckpt, madeFrom, true));
    },

    /**
     * Starts this run from a Hugging Face directory (init.fromHf): its weights become step 0. The
     * directory's shape must be the config's and its tokenizer the project's, or every prompt and
     * demonstration would mean other tokens to it.
     */
    async checkpointFromHf(input: CheckpointFromHfInput): Promise<CheckpointInfo> {
      const imported = asConfigFailure('init.fromHf', () => readHfStartingPolicy(input.dir, input.model));
      heartbeatIfActivity('read');
      const ckpt: Checkpoint = { config: imported.config, weights: imported.weights, step: 0 };
      const bytes = encodeCheckpoint(ckpt);
      const madeFrom = { activity: 'checkpointFromHf', checkpoint: `${sha256Hex(bytes)} (step 0 of ${input.dir})` };
      return refuseOtherInputs(() => saveCheckpoint(input.runId, ckpt, madeFrom, true, bytes));
    },

    async publishWeights(input: PublishWeightsInput): Promise<WeightsInfo> {
      // Heartbeats between the steps, so a worker killed while publishing is noticed after
      // timeouts.heartbeatSec rather than at the start-to-close timeout (trainSec).
      const spec = {
        name: names.weights(input.runId, input.version),
        what: `published weights v${input.version} of workflow id '${input.runId}'`,
        madeFrom: { checkpoint: checkpointText(input.checkpoint) },
        // Weights published before made-from records name their checkpoint's step in the ONNX metadata.
        checkUnrecorded: async (held: BlobRef) => {
          const step = readOnnxMetadata(await store.get(held)).step;
          return step === undefined || Number(step) === input.checkpoint.step
            ? undefined
            : `was exported from a checkpoint of step ${step} (its ONNX metadata; published before made-from records); this start's checkpoint is ${checkpointText(input.checkpoint)}`;
        },
      };
      const onnx = await refuseOtherInputs(() =>
        namedResult(store, spec, async () => {
          heartbeatIfActivity('read');
          const ckpt = decodeCheckpoint(await store.get(input.checkpoint.ref));
          heartbeatIfActivity('decoded');
          const bytes = exportOnnx(ckpt.config, ckpt.weights, {
            weight_version: String(input.version),
            step: String(ckpt.step),
            run_id: input.runId,
          });
          heartbeatIfActivity('exported');
          return store.put(bytes, 'onnx');
        }),
      );
      await store.setName(names.latestWeights(input.runId), onnx);
      return { version: input.version, step: input.checkpoint.step, onnx };
    },
  };
}

/** A checkpoint named before made-from records is adopted only if it holds the bytes these inputs make. */
function sameBytes(held: BlobRef, bytes: Uint8Array, kind: string): string | undefined {
  const mine = sha256Hex(bytes);
  return held.sha256 === mine ? undefined : `holds ${kind} ${held.sha256} (named before made-from records), not ${mine}, which this start's inputs make`;
}

/** A heartbeat when running as an activity; tests also call the activities as plain functions. */
function heartbeatIfActivity(details: string): void {
  let ctx: Context;
  try {
    ctx = Context.current();
  } catch {
    return;
  }
  ctx.heartbeat(details);
}

/** `check`'s result; a StartingPolicyError (src/model/starting-policy.ts) as a non-retryable ConfigError naming `key`. */
function asConfigFailure<T>(key: string, check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof StartingPolicyError) throw ApplicationFailure.nonRetryable(`${key}: ${err.message}`, 'ConfigError');
    throw err;
  }
}

export type TrainingActivities = ReturnType<typeof createTrainingActivities>;
