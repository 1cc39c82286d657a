/**
 * Small runs shared by the tests and the history recorder: real workflows and real activities,
 * sized to finish in seconds on two cores.
 */
import { parseRunConfig } from '../../src/config/parse';
import type { RunConfigInput } from '../../src/config/schema';
import { ORACLE_TASK_QUEUE } from '../../activities/oracle-inference';
import { sessionWorkflowId } from '../../workflows/messages';
import { resolveLimits } from '../../src/planact/episode';
import type { PlanActEpisodeInput } from '../../src/contracts/plan-act-episode';

export function tinyRunConfig(overrides: Partial<RunConfigInput> = {}): RunConfigInput {
  return {
    experiment: 'test-tiny',
    seed: 7,
    task: { trainProblems: 40, evalProblems: 4, rl: { testProblems: 0 } },
    model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 192 },
    sft: { steps: 4, batchSize: 4, stepsPerActivity: 2, warmupSteps: 1 },
    eval: { everySteps: 0, maxNewTokens: 12 },
    rollout: { maxTurns: 2 },
    timeouts: { heartbeatSec: 10 },
    ...overrides,
  };
}

export interface RecordedScenario {
  /** File name under test/histories (without .json). */
  name: string;
  workflowType: string;
  args: unknown[];
  /** Workflow id; default history-<name>. */
  workflowId?: string;
  /** Start it and go on without waiting: the next scenario runs alongside (the two jobs of a dual-mode rollout). */
  concurrent?: boolean;
  /** Started by another scenario (a child workflow, a rollout session): only waited for and exported. */
  startedByOthers?: boolean;
}

/**
 * Plan/Act runs for the recorder: a fresh tiny policy (initPolicy/publishWeights on the training
 * queue) and the oracle stand-in for generate on ORACLE_TASK_QUEUE, so the histories go through
 * real acts, calculator calls and concurrent actors rather than an untrained model's first-turn
 * failure.
 */
export function tinyPlanActConfig(experiment: string, mode: 'shared' | 'dual', rollout: RunConfigInput['rollout'] = {}): RunConfigInput {
  return {
    experiment,
    seed: 3,
    task: { difficulty: { minTerms: 4, maxTerms: 4, minDigits: 1, maxDigits: 2 } },
    model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 128 },
    rl: { promptsPerStep: 1, groupSize: 2, maxNewTokens: 16 },
    // The barrier's timeout is dual mode's (a shared job refuses it).
    rollout: { mode, maxTurns: 4, ...(mode === 'dual' ? { barrierTimeoutSec: 60 } : {}), rolloutTimeoutSec: 120, ...rollout },
    timeouts: { heartbeatSec: 10 },
  };
}

/** A two-step RL run of the tiny config, evaluated at every RL step (the training-run-rl-v* scenarios). */
const tinyRlRun = (extra: Partial<RunConfigInput> = {}) =>
  tinyRunConfig({
    task: { trainProblems: 40, evalProblems: 4, demoToolUseRate: 0.5, rl: { evalProblems: 4, testProblems: 0 } },
    eval: { everySteps: 2, rlEverySteps: 1, maxNewTokens: 8 },
    rl: { steps: 2, promptsPerStep: 2, groupSize: 2, maxNewTokens: 12 },
    ...extra,
  });
const planActJob = (role: 'shared' | 'planner' | 'actor', config: RunConfigInput) => [{ role, config, rolloutIds: [1], inferenceQueue: ORACLE_TASK_QUEUE }];

/** The oracle ignores weights; this reference is never loaded. */
const ORACLE_POLICY = { weights: { version: 0, step: 0, onnx: { sha256: '0'.repeat(64), bytes: 0, kind: 'onnx' } }, inferenceQueue: ORACLE_TASK_QUEUE };

/**
 * A group of Plan/Act episodes with rollout.batchRequests 'local': their calls run by the
 * orchestration worker itself (the recorder gives it the oracle and the calculator).
 */
const localCallsGroup = (runId: string): PlanActEpisodeInput[] =>
  [0, 1].map((i) => ({
    runId,
    episodeId: `${runId}/e${i}`,
    expression: '12+34+56+78',
    groupId: 'g0',
    policies: { planner: { weights: ORACLE_POLICY.weights }, actor: { weights: ORACLE_POLICY.weights } },
    limits: resolveLimits({ maxTurns: 4, maxActsPerTurn: 4, maxToolCallsPerAct: 2, plannerMaxNewTokens: 48, actorMaxNewTokens: 48 }),
    sampling: { temperature: 1, topP: 1 },
    seed: 3 + i,
    timeouts: { generateSec: 60, trainSec: 600, toolSec: 10, heartbeatSec: 10 },
    batchRequests: 'local',
  }));

/** A tree rollout on the oracle (a calculator call, then the answer): all four phases, real tools and samples. */
const treeRolloutOnOracle = (runId: string) => ({
  runId,
  rolloutId: 1,
  config: parseRunConfig({
    seed: 3,
    task: { difficulty: { minTerms: 2, maxTerms: 3, minDigits: 1, maxDigits: 2 } },
    rl: { promptsPerStep: 2, groupSize: 4, maxNewTokens: 32 },
    rollout: { kind: 'tree' },
    tree: { initialRollouts: 2, expansionIterations: 2, beamSize: 2, samplesPerRoot: 4 },
    timeouts: { heartbeatSec: 10 },
  }),
  policy: ORACLE_POLICY,
});

export const RECORDED_SCENARIOS: RecordedScenario[] = [
  { name: 'training-run-sft', workflowType: 'trainingRun', args: [tinyRunConfig({ eval: { everySteps: 2, maxNewTokens: 8 } })] },
  {
    name: 'training-run-grpo',
    workflowType: 'trainingRun',
    args: [tinyRunConfig({ rollout: { kind: 'plan-act', maxTurns: 2 }, rl: { steps: 2, promptsPerStep: 2, groupSize: 2, maxNewTokens: 12 } })],
  },
  // Shared mode: the job, its rollout child and one child with a GRPO group of episodes.
  { name: 'plan-act-shared', workflowType: 'planActJob', args: planActJob('shared', tinyPlanActConfig('history-shared', 'shared')) },
  { name: 'plan-act-shared-rollout', workflowType: 'planActRollout', args: [], workflowId: 'history-plan-act-shared/rollout-1', startedByOthers: true },
  { name: 'plan-act-shared-episodes', workflowType: 'planActEpisodes', args: [], workflowId: 'history-plan-act-shared/rollout-1/episodes-0', startedByOthers: true },
  // Dual mode: planner and actor jobs started together, and the session they met in.
  { name: 'plan-act-dual-planner', workflowType: 'planActJob', args: planActJob('planner', tinyPlanActConfig('history-dual', 'dual')), concurrent: true },
  { name: 'plan-act-dual-actor', workflowType: 'planActJob', args: planActJob('actor', tinyPlanActConfig('history-dual', 'dual')), concurrent: true },
  { name: 'plan-act-dual-session', workflowType: 'rolloutSession', args: [], workflowId: sessionWorkflowId('history-dual', 1), startedByOthers: true },
  // A planner whose actor never comes: barrier timeout, then the single-agent fallback.
  { name: 'plan-act-dual-fallback', workflowType: 'planActJob', args: planActJob('planner', tinyPlanActConfig('history-alone', 'dual', { barrierTimeoutSec: 1 })) },
  { name: 'plan-act-fallback-rollout', workflowType: 'singleAgentRollout', args: [], workflowId: 'history-plan-act-dual-fallback/fallback-r1', startedByOthers: true },
  // Recorded after the 'training-run-v2' and 'plan-act-job-trains' patches.
  {
    name: 'training-run-rl-v2',
    workflowType: 'trainingRun',
    args: [
      tinyRunConfig({
        task: { trainProblems: 40, evalProblems: 4, demoToolUseRate: 0.5, rl: { evalProblems: 4, testProblems: 0 } },
        eval: { everySteps: 2, rlEverySteps: 1, maxNewTokens: 8 },
        rl: { steps: 2, promptsPerStep: 2, groupSize: 2, maxNewTokens: 12, ppoEpochs: 2, miniBatches: 2 },
        compare: { moreSft: true },
      }),
    ],
  },
  { name: 'plan-act-dual-trained-planner', workflowType: 'planActJob', args: planActJob('planner', tinyPlanActConfig('history-dual-trained', 'dual')), concurrent: true },
  // The pair's last job ends its batch (its partner started alongside it), so later scenarios are not recorded with it.
  { name: 'plan-act-dual-trained-actor', workflowType: 'planActJob', args: planActJob('actor', tinyPlanActConfig('history-dual-trained', 'dual')) },  // Recorded after the 'config-resolved-once' patch and timeline merging (samples written from merged timelines).
  {
    name: 'training-run-rl-v3',
    workflowType: 'trainingRun',
    args: [
      tinyRlRun({ timeline: { snapDetection: true } }),
    ],
  },
  {
    name: 'plan-act-shared-merged',
    workflowType: 'planActJob',
    args: planActJob('shared', { ...tinyPlanActConfig('history-shared-merged', 'shared'), model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 256 } }),
  },
  // A training job that claims its workflow id first (patched 'plan-act-job-claims-run-id').
  {
    name: 'plan-act-shared-claimed',
    workflowType: 'planActJob',
    args: planActJob('shared', { ...tinyPlanActConfig('history-shared-claimed', 'shared'), model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 256 } }),
  },
  // Asynchronous RL (rl.async.maxStaleness 1): step N+1's rollout child starts while step N trains.
  {
    name: 'training-run-async',
    workflowType: 'trainingRun',
    args: [
      tinyRunConfig({
        task: { trainProblems: 40, evalProblems: 4, rl: { evalProblems: 4, testProblems: 0 } },
        eval: { everySteps: 0, rlEverySteps: 0, maxNewTokens: 8 },
        rollout: { maxTurns: 2 },
        rl: { steps: 3, promptsPerStep: 2, groupSize: 2, maxNewTokens: 12, async: { maxStaleness: 1 } },
      }),
    ],
  },
  // A tree rollout on the oracle (a calculator call, then the answer): all four phases, real tools and samples.
  { name: 'tree-rollout', workflowType: 'treeRollout', args: [treeRolloutOnOracle('history-tree')] },
  // Grid-world episodes with plan horizons 2, 3 and 15 (chunks of 2) on the oracle: plans, chunks on
  // the real grid environment, replans, plan reward, per-chunk samples.
  {
    name: 'horizon-rollout',
    workflowType: 'horizonRollout',
    args: [
      {
        runId: 'history-horizon',
        rolloutId: 1,
        config: parseRunConfig({
          seed: 5,
          task: { kind: 'grid', grid: { rows: 5, cols: 5, walls: 4, maxSteps: 16 } },
          horizon: { actionHorizonsPattern: [2, 3, 15], numActionChunks: 2, baseH: 5, usePlanReward: true, planRewardCoef: 0.1 },
          rl: { promptsPerStep: 1, groupSize: 3 },
          rollout: { kind: 'horizon' },
          timeouts: { heartbeatSec: 10 },
        }),
        policy: ORACLE_POLICY,
      },
    ],
  },
  { name: 'horizon-episode', workflowType: 'horizonEpisode', args: [], workflowId: 'history-horizon-rollout/ep-0', startedByOthers: true },
  // A dual-mode session after the 'session-record' patch: it writes both roles' samples for the rollout viewer.
  { name: 'plan-act-dual-recorded-planner', workflowType: 'planActJob', args: planActJob('planner', tinyPlanActConfig('history-dual-recorded', 'dual')), concurrent: true },
  { name: 'plan-act-dual-recorded-actor', workflowType: 'planActJob', args: planActJob('actor', tinyPlanActConfig('history-dual-recorded', 'dual')) },
  { name: 'plan-act-dual-recorded-session', workflowType: 'rolloutSession', args: [], workflowId: sessionWorkflowId('history-dual-recorded', 1), startedByOthers: true },
  // An RL run after the 'publish-weights-heartbeat' and 'start-checkpoint-heartbeat' patches: both
  // markers in the history, so replay runs their new branches too.
  {
    name: 'training-run-rl-v4',
    workflowType: 'trainingRun',
    args: [
      tinyRlRun(),
    ],
  },
  // After the 'batched-requests' patch: an episode workflow's requests of one activation go as one
  // generateBatch / calcBatch activity. A shared job's group of two 4-term episodes (concurrent acts),
  // a tree rollout and a single-agent rollout, all on the oracle.
  { name: 'plan-act-batched', workflowType: 'planActJob', args: planActJob('shared', tinyPlanActConfig('history-batched', 'shared')) },
  { name: 'plan-act-batched-rollout', workflowType: 'planActRollout', args: [], workflowId: 'history-plan-act-batched/rollout-1', startedByOthers: true },
  { name: 'plan-act-batched-episodes', workflowType: 'planActEpisodes', args: [], workflowId: 'history-plan-act-batched/rollout-1/episodes-0', startedByOthers: true },
  { name: 'tree-rollout-batched', workflowType: 'treeRollout', args: [treeRolloutOnOracle('history-tree-batched')] },
  {
    name: 'single-agent-batched',
    workflowType: 'singleAgentRollout',
    args: [
      {
        runId: 'history-single-batched',
        rolloutId: 1,
        config: parseRunConfig({ seed: 4, rl: { promptsPerStep: 2, groupSize: 2, maxNewTokens: 16 }, rollout: { kind: 'standard' }, timeouts: { heartbeatSec: 10 } }),
        policy: ORACLE_POLICY,
        reason: 'rollout.kind: standard',
      },
    ],
  },
  // rollout.batchRequests 'local': a local activity per call (recorded before exchanges, at b711bd5),
  // then through exchanges (the 'coalesced-local-calls' patch).
  { name: 'plan-act-local-per-call', workflowType: 'planActEpisodes', args: [localCallsGroup('history-local-per-call')] },
  { name: 'plan-act-local-exchanged', workflowType: 'planActEpisodes', args: [localCallsGroup('history-local-exchanged')] },
];
