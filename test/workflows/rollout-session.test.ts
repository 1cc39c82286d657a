/**
 * Dual mode on the real dev server: two planActJob workflows (planner, actor) started separately
 * meet per rollout id in a rolloutSession. Episodes use the oracle stand-in for generate on task
 * queues of this file's own (fast and slow), so timings are controlled; one test uses the embedded
 * policy end to end.
 */
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { GenerateInput } from '../../activities/inference';
import { createOracleInferenceActivities } from '../../activities/oracle-inference';
import { names } from '../../src/store/run-names';
import { readSamples } from '../../src/contracts/sample-set';
import type { RunConfigInput } from '../../src/config/schema';
import type { FsBlobStore } from '../../src/store/fs-blob-store';
import type { JobRole, PlanActJobInput, PlanActJobResult } from '../../src/contracts/plan-act-job';
import type { RolloutSessionResult, RolloutSessionState } from '../../src/contracts/rollout-session';
import { FELL_BACK, ROLE, ROLLOUT_ID } from '../../workflows/search-attributes';
import { jobStateQuery, sessionStateQuery, sessionWorkflowId } from '../../workflows/messages';
import { TASK_QUEUES } from '../../workflows/task-queues';
import type { WeightsInfo } from '../../src/contracts/weights';
import { tinyPlanActConfig } from '../../scripts/lib/scenarios';
import { testEnv, uniqueId, type TestEnv } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';

const FAST_MS = 40;
const SLOW_MS = 600;
const weightsV = (version: number): WeightsInfo => ({ version, step: 0, onnx: { sha256: String(version).repeat(64).slice(0, 64), bytes: 0, kind: 'onnx' } });
const PLANNER_WEIGHTS = weightsV(3);
const ACTOR_WEIGHTS = weightsV(5);

let ctx: TestEnv;
let env: TestWorkflowEnvironment;
let store: FsBlobStore;
const fastQueue = uniqueId('oracle-fast');
const slowQueue = uniqueId('oracle-slow');
/**
 * The oracle, except that about half of the episodes' planners answer 0 at once (by the seed of
 * their first request): episodes of one prompt then earn different rewards, so GRPO has advantages.
 */
const mixedQueue = uniqueId('oracle-mixed');
/** Planners that answer at once and never write an ACT line, as an untrained planner does. */
const noActQueue = uniqueId('oracle-no-act');

beforeAll(async () => {
  ctx = await testEnv('rollout-session');
  ({ env, store } = ctx);
  for (const [taskQueue, latencyMs] of [[fastQueue, FAST_MS], [slowQueue, SLOW_MS]] as const) {
    await ctx.addWorker({ taskQueue, activities: createOracleInferenceActivities({ store, latencyMs }), maxConcurrentActivityTaskExecutions: 256 });
  }
  const script = (input: GenerateInput) =>
    input.role === 'planner' && !input.prompt.includes('<|eos|>') && (input.params.seed ?? 0) % 2 === 1 ? { text: 'ANSWER: 0\n', finishReason: 'eos' as const } : undefined;
  await ctx.addWorker({ taskQueue: mixedQueue, activities: createOracleInferenceActivities({ store, latencyMs: FAST_MS, script }), maxConcurrentActivityTaskExecutions: 256 });
  const noAct = (input: GenerateInput) => (input.role === 'planner' ? { text: 'ANSWER: 0\n', finishReason: 'eos' as const } : undefined);
  await ctx.addWorker({ taskQueue: noActQueue, activities: createOracleInferenceActivities({ store, latencyMs: FAST_MS, script: noAct }), maxConcurrentActivityTaskExecutions: 256 });
});

afterAll(async () => {
  await ctx?.stop();
});

/** The recorder's tiny dual-mode run, with timeouts short enough for tests to wait them out. */
function dualConfig(experiment: string, rollout: RunConfigInput['rollout'] = {}): RunConfigInput {
  return {
    ...tinyPlanActConfig(experiment, 'dual', { barrierTimeoutSec: 3, rolloutTimeoutSec: 30, fallbackOnTimeout: true, ...rollout }),
    seed: 11,
  };
}

interface JobOptions {
  config: RunConfigInput;
  rolloutIds?: number[];
  queue?: string;
  weights?: WeightsInfo | null;
}

async function startJob(role: Exclude<JobRole, 'shared'>, opts: JobOptions): Promise<WorkflowHandle> {
  const input: PlanActJobInput = {
    role,
    config: opts.config,
    rolloutIds: opts.rolloutIds ?? [1],
    // Scripted (oracle) weights have no checkpoint to train: those jobs only collect samples.
    ...(opts.weights === null ? {} : { weights: opts.weights ?? (role === 'planner' ? PLANNER_WEIGHTS : ACTOR_WEIGHTS), train: false }),
    ...(opts.queue === undefined ? { inferenceQueue: fastQueue } : opts.queue === '' ? {} : { inferenceQueue: opts.queue }),
  };
  return env.client.workflow.start('planActJob', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId(`${opts.config.experiment}-${role}`), args: [input] });
}

const sessionHandle = (experiment: string, rolloutId = 1) => env.client.workflow.getHandle(sessionWorkflowId(experiment, rolloutId));

const sessionInPhase = (experiment: string, phase: RolloutSessionState['phase'], rolloutId = 1) =>
  waitFor(`session phase ${phase}`, async () => {
    const s = await sessionHandle(experiment, rolloutId).query(sessionStateQuery);
    return s.phase === phase ? s : undefined;
  });

async function failureOf(handle: WorkflowHandle): Promise<ApplicationFailure> {
  const err = await handle.result().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  return cause as ApplicationFailure;
}

describe('rolloutSession (dual mode)', () => {
  it.each(['planner', 'actor'] as const)('meets when the %s job arrives first, runs the episodes once and hands each job only its own samples', async (first) => {
    const experiment = uniqueId(`${first}-first`);
    const second = first === 'planner' ? 'actor' : 'planner';
    const cfg = dualConfig(experiment);
    const h1 = await startJob(first, { config: cfg });
    const waiting = await waitFor('first arrival', async () => {
      const s = await sessionHandle(experiment).query(sessionStateQuery);
      return s.arrivals[first] ? s : undefined;
    });
    expect(waiting).toMatchObject({ phase: 'waiting', rolloutId: 1 });
    expect(waiting.arrivals[second]).toBeUndefined();
    const h2 = await startJob(second, { config: cfg });

    const results = { [first]: (await h1.result()) as PlanActJobResult, [second]: (await h2.result()) as PlanActJobResult };
    const session = (await sessionHandle(experiment).result()) as RolloutSessionResult;
    expect(session.outcome).toBe('completed');
    expect(session.arrivals[first]!.arrivedAt).toBeLessThanOrEqual(session.arrivals[second]!.arrivedAt);
    expect(session.summary).toMatchObject({ episodes: 2, meanReward: 1, mode: 'dual' });

    for (const role of ['planner', 'actor'] as const) {
      const r = results[role]!;
      expect(r.fallbacks).toBe(0);
      expect(r.rollouts).toHaveLength(1);
      expect(r.rollouts[0]).toMatchObject({ rolloutId: 1, outcome: 'joint', episodes: 2, meanReward: 1, sessionWorkflowId: sessionWorkflowId(experiment, 1) });
      expect(Object.keys(r.rollouts[0]!.samples)).toEqual([role]);
      const samples = await readSamples(store, r.rollouts[0]!.samples[role]!.ref);
      expect(samples.length).toBeGreaterThan(0);
      const version = role === 'planner' ? 3 : 5;
      expect(samples.every((s) => s.metadata.role === role && s.reward === 1 && s.metadata.weightVersion === version)).toBe(true);
    }
    // One set of episodes: both jobs' samples come from the same two episodes.
    const episodesOf = async (role: 'planner' | 'actor') =>
      new Set((await readSamples(store, results[role]!.rollouts[0]!.samples[role]!.ref)).map((s) => s.metadata.episodeId));
    expect([...(await episodesOf('planner'))].sort()).toEqual([...(await episodesOf('actor'))].sort());
    expect((await episodesOf('planner')).size).toBe(2);
    expect((await sessionHandle(experiment).query(sessionStateQuery)).phase).toBe('done');
    const d = await h1.describe();
    expect(d.typedSearchAttributes.get(ROLE)).toBe(first);
    expect(d.typedSearchAttributes.get(ROLLOUT_ID)).toBe(1);
    expect(d.typedSearchAttributes.get(FELL_BACK)).toBe(false);
  });

  it('falls back to a single-agent rollout when the partner never arrives, and records it', async () => {
    const experiment = uniqueId('alone-fallback');
    const h = await startJob('planner', { config: dualConfig(experiment, { barrierTimeoutSec: 1.5 }) });
    const result = (await h.result()) as PlanActJobResult;
    expect(result.fallbacks).toBe(1);
    expect(result.rollouts[0]).toMatchObject({ rolloutId: 1, outcome: 'fell-back', reason: 'partner-missing', episodes: 2, meanReward: 1 });
    expect(result.rollouts[0]!.message).toMatch(/no actor job arrived at rollout 1 within barrierTimeoutSec=1.5/);
    const single = await readSamples(store, result.rollouts[0]!.samples.single!.ref);
    expect(single.every((s) => s.metadata.role === 'single' && s.reward === 1)).toBe(true);
    const d = await h.describe();
    expect(d.typedSearchAttributes.get(FELL_BACK)).toBe(true);
    expect(d.memo?.lastFallback).toMatchObject({ rolloutId: 1, reason: 'partner-missing' });
    expect((await sessionHandle(experiment).result()) as RolloutSessionResult).toMatchObject({ outcome: 'partner-missing' });
  });

  it('fails with a typed, readable error when the partner never arrives and fallback is off', async () => {
    const experiment = uniqueId('alone-strict');
    const h = await startJob('actor', { config: dualConfig(experiment, { barrierTimeoutSec: 1.5, fallbackOnTimeout: false }) });
    const failure = await failureOf(h);
    expect(failure.type).toBe('BarrierTimeout');
    expect(failure.message).toMatch(/actor job .*rollout 1: no planner job arrived at rollout 1 within barrierTimeoutSec=1.5.*fallbackOnTimeout is false/);
  });

  it('refuses a second job whose rollout terms differ, naming what differs', async () => {
    const experiment = uniqueId('mismatch');
    const planner = await startJob('planner', { config: dualConfig(experiment, { barrierTimeoutSec: 1.5 }) });
    await waitFor('planner arrival', async () => ((await sessionHandle(experiment).query(sessionStateQuery)).arrivals.planner ? true : undefined));
    const actor = await startJob('actor', { config: { ...dualConfig(experiment, { barrierTimeoutSec: 1.5 }), rl: { promptsPerStep: 1, groupSize: 3, maxNewTokens: 16 } } });
    const failure = await failureOf(actor);
    expect(failure.type).toBe('SessionRejected');
    expect(failure.message).toMatch(/refused the actor job: .*differs from the first job's in rl/);
    // The planner is not left waiting for a partner that was turned away.
    expect(((await planner.result()) as PlanActJobResult).rollouts[0]).toMatchObject({ outcome: 'fell-back', reason: 'partner-missing' });
  });

  it('falls back when the partner is terminated mid-session', async () => {
    const experiment = uniqueId('terminated');
    const cfg = dualConfig(experiment);
    const planner = await startJob('planner', { config: cfg, queue: slowQueue });
    const actor = await startJob('actor', { config: cfg, queue: slowQueue });
    await sessionInPhase(experiment, 'running');
    // The session tells each job when the episodes start.
    await waitFor('planner told', async () => ((await planner.query(jobStateQuery)).sessionPhase === 'running' ? true : undefined));
    await actor.terminate('test: the actor job crashed');

    const result = (await planner.result()) as PlanActJobResult;
    expect(result.rollouts[0]).toMatchObject({ outcome: 'fell-back', reason: 'partner-lost', meanReward: 1 });
    expect(result.rollouts[0]!.message).toMatch(/the actor job .* stopped running during the episodes of rollout 1/);
    const session = (await sessionHandle(experiment).result()) as RolloutSessionResult;
    expect(session.outcome).toBe('partner-lost');
    expect(session.arrivals.actor).toMatchObject({ unreachable: true, delivered: false });
    expect(session.arrivals.planner).toMatchObject({ delivered: true });
  });

  it('gives up on a session past rolloutTimeout: fallback where enabled, a typed error where not', async () => {
    const experiment = uniqueId('slow-rollout');
    // fallbackOnTimeout is each job's own choice; the two jobs still agree on every rollout term.
    const planner = await startJob('planner', { config: dualConfig(experiment, { rolloutTimeoutSec: 1.5 }), queue: slowQueue });
    const actor = await startJob('actor', { config: dualConfig(experiment, { rolloutTimeoutSec: 1.5, fallbackOnTimeout: false }), queue: slowQueue });
    const failure = await failureOf(actor);
    expect(failure.type).toBe('RolloutTimeout');
    expect(failure.message).toMatch(/rollout 1 did not finish within rolloutTimeoutSec=1.5/);
    const result = (await planner.result()) as PlanActJobResult;
    expect(result.rollouts[0]).toMatchObject({ outcome: 'fell-back', reason: 'rollout-timeout' });
    expect(((await sessionHandle(experiment).result()) as RolloutSessionResult).outcome).toBe('rollout-timeout');
  });

  it('runs two rollout ids at once, independently, each job getting its own rollout', async () => {
    const experiment = uniqueId('two-rollouts');
    const cfg = dualConfig(experiment);
    const jobs = await Promise.all(
      [1, 2].flatMap((id) => (['planner', 'actor'] as const).map(async (role) => ({ id, role, handle: await startJob(role, { config: cfg, rolloutIds: [id], queue: slowQueue }) }))),
    );
    for (const j of jobs) {
      const r = (await j.handle.result()) as PlanActJobResult;
      expect(r.rollouts[0]).toMatchObject({ rolloutId: j.id, outcome: 'joint', meanReward: 1 });
      const samples = await readSamples(store, r.rollouts[0]!.samples[j.role]!.ref);
      expect(samples.every((s) => s.metadata.episodeId.includes(`/r${j.id}/`) && s.metadata.role === j.role)).toBe(true);
    }
    const spans = await Promise.all(
      [1, 2].map(async (id) => {
        const h = sessionHandle(experiment, id);
        // The jobs may finish before their session closes: wait for it, so it has a close time.
        expect(((await h.result()) as RolloutSessionResult).outcome).toBe('completed');
        const [state, d] = await Promise.all([h.query(sessionStateQuery), h.describe()]);
        return { start: state.barrierMetAt!, end: d.closeTime!.getTime() };
      }),
    );
    // In flight at the same time: each session's episodes ran while the other's did.
    expect(Math.min(spans[0]!.end, spans[1]!.end) - Math.max(spans[0]!.start, spans[1]!.start)).toBeGreaterThan(1000);
  });

  it('does not wait forever on a session that was terminated', async () => {
    const experiment = uniqueId('session-gone');
    const cfg = dualConfig(experiment, { barrierTimeoutSec: 1, rolloutTimeoutSec: 2 });
    const planner = await startJob('planner', { config: cfg, queue: slowQueue });
    const actor = await startJob('actor', { config: cfg, queue: slowQueue });
    await sessionInPhase(experiment, 'running');
    await sessionHandle(experiment).terminate('test: session lost');
    for (const h of [planner, actor]) {
      const r = (await h.result()) as PlanActJobResult;
      expect(r.rollouts[0]).toMatchObject({ outcome: 'fell-back', reason: 'session-unresponsive' });
    }
  });

  it('the same two job ids started again run a fresh rollout (a re-run of the README commands)', async () => {
    const experiment = uniqueId('rerun');
    const cfg = dualConfig(experiment, { barrierTimeoutSec: 30 });
    const ids = { planner: uniqueId(`${experiment}-planner`), actor: uniqueId(`${experiment}-actor`) };
    const startBoth = () =>
      Promise.all(
        (['planner', 'actor'] as const).map((role) =>
          env.client.workflow.start('planActJob', {
            taskQueue: TASK_QUEUES.orchestration,
            workflowId: ids[role],
            args: [{ role, config: cfg, rolloutIds: [1], weights: role === 'planner' ? PLANNER_WEIGHTS : ACTOR_WEIGHTS, train: false, inferenceQueue: fastQueue }],
          }),
        ),
      );
    const runs: PlanActJobResult[][] = [];
    const sessionRuns: string[] = [];
    for (let attempt = 0; attempt < 2; attempt++) {
      const started = Date.now();
      const handles = await startBoth();
      runs.push((await Promise.all(handles.map((h) => h.result()))) as PlanActJobResult[]);
      // Both jobs finish quickly: the second time nobody waits on a timer for an old session.
      expect(Date.now() - started).toBeLessThan(25_000);
      sessionRuns.push((await env.client.workflow.getHandle(sessionWorkflowId(experiment, 1)).describe()).runId);
    }
    for (const results of runs) for (const r of results) expect(r.rollouts[0]).toMatchObject({ outcome: 'joint', episodes: 2 });
    // A new session run served the second pair.
    expect(sessionRuns[1]).not.toBe(sessionRuns[0]);
  });

  it("a job refuses trainingRun's keys it would ignore (asynchronous RL, SFT), naming them, before it runs anything", async () => {
    const cfg = { ...tinyPlanActConfig(uniqueId('job-keys'), 'shared'), rl: { promptsPerStep: 1, groupSize: 2, async: { maxStaleness: 1 } }, sft: { steps: 10 } };
    const handle = await env.client.workflow.start('planActJob', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('job-keys'), args: [{ role: 'shared', config: cfg, rolloutIds: [1], inferenceQueue: mixedQueue }] });
    const failure = await failureOf(handle);
    expect(failure).toMatchObject({ type: 'ConfigError', message: expect.stringMatching(/rl\.async\.maxStaleness: a job trains each rollout[^]*sft: a job runs no SFT/) });
  });

  it('a training job under a workflow id used before with another config fails at once, naming the id', async () => {
    const experiment = uniqueId('claimed');
    const cfg = { ...tinyPlanActConfig(experiment, 'shared'), rl: { promptsPerStep: 1, groupSize: 2, maxNewTokens: 16 } };
    const workflowId = uniqueId('claimed-job');
    const run = (config: RunConfigInput) =>
      env.client.workflow.start('planActJob', { taskQueue: TASK_QUEUES.orchestration, workflowId, args: [{ role: 'shared', config, rolloutIds: [1], inferenceQueue: mixedQueue }] });
    const first = (await (await run(cfg)).result()) as PlanActJobResult;
    expect(first.weights.version).toBe(1);
    // The same id again with another seed: its checkpoints would be the first job's; refused before any training.
    const again = await run({ ...cfg, seed: 12 });
    const failure = await failureOf(again);
    expect(failure).toMatchObject({ type: 'ConfigError', message: expect.stringContaining(`workflow id '${workflowId}' was used by a run with another config or other starting weights`) });
    const history = await again.fetchHistory();
    const scheduled = (history.events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes?.activityType?.name ? [e.activityTaskScheduledEventAttributes.activityType.name] : []));
    expect(scheduled).not.toContain('initPolicy');
    expect(scheduled).not.toContain('trainGrpo');
  });

  it('a rollout whose planner wrote no ACT gives the actor job no samples, and the actor job says so and why', async () => {
    const experiment = uniqueId('no-act-dual');
    const [planner, actor] = await Promise.all((['planner', 'actor'] as const).map((role) => startJob(role, { config: dualConfig(experiment), queue: noActQueue })));
    const p = (await planner!.result()) as PlanActJobResult;
    const a = (await actor!.result()) as PlanActJobResult;
    expect(a.rollouts[0]!.outcome).toBe('joint');
    expect(a.rollouts[0]!.samples).toEqual({});
    expect((await actor!.query(jobStateQuery)).warnings).toEqual([
      expect.stringMatching(/^rollout 1 gave this actor job no samples to train on \(\d+ episodes\): no planner turn wrote an ACT line.*start both jobs from an SFT run with "weightsFromRun"/),
    ]);
    // The planner's turns were there: no warning for it.
    expect(p.rollouts[0]!.samples.planner!.samples).toBeGreaterThan(0);
    expect((await planner!.query(jobStateQuery)).warnings).toBeUndefined();
  });

  it('each job trains its own weights on its own samples; the session serves each job\'s latest', async () => {
    const experiment = uniqueId('trained-dual');
    // Embedded policies of their own (initialised, trained, published); generation by the mixed oracle.
    const cfg = { ...dualConfig(experiment, { barrierTimeoutSec: 60 }), rl: { promptsPerStep: 2, groupSize: 4, maxNewTokens: 16 } };
    const start = (role: 'planner' | 'actor') => startJob(role, { config: cfg, queue: mixedQueue, weights: null, rolloutIds: [1, 2] });
    const [planner, actor] = await Promise.all([start('planner'), start('actor')]);
    const p = (await planner.result()) as PlanActJobResult;
    const a = (await actor.result()) as PlanActJobResult;
    for (const r of [p, a]) {
      expect(r.rollouts.map((x) => x.outcome)).toEqual(['joint', 'joint']);
      // Each rollout is followed by one update of this job's policy and a new weights version.
      expect(r.rollouts.map((x) => x.weightVersion)).toEqual([0, 1]);
      expect(r.rollouts.map((x) => x.training?.weightVersion)).toEqual([1, 2]);
      expect(r.rollouts.map((x) => x.training?.step)).toEqual([1, 2]);
      expect(r.weights.version).toBe(2);
      // A training job evaluates its own starting weights (eval.rlEverySteps: 10 rollouts later, the next).
      expect(r.evals?.map((e) => [e.afterRollouts, e.weightVersion])).toEqual([[0, 0]]);
    }
    // Two different models, each updated: four distinct ONNX exports per job, none shared.
    expect(p.weights.onnx!.sha256).not.toBe(a.weights.onnx!.sha256);
    const pVersions = await Promise.all([0, 1, 2].map((v) => store.getName(names.weights(planner.workflowId, v))));
    const aVersions = await Promise.all([0, 1, 2].map((v) => store.getName(names.weights(actor.workflowId, v))));
    expect(new Set([...pVersions, ...aVersions].map((r) => r!.sha256)).size).toBe(6);
    // The planner trained on planner samples only, the actor on actor samples only.
    const planned = await readSamples(store, p.rollouts[0]!.samples.planner!.ref);
    expect(planned.every((s) => s.metadata.role === 'planner' && s.metadata.weightVersion === 0)).toBe(true);
    expect(new Set(planned.map((s) => s.reward)).size).toBe(2);
    expect(p.rollouts[0]!.samples.actor).toBeUndefined();
    expect(a.rollouts[0]!.samples.planner).toBeUndefined();
    // Rollout 2's session ran each role with the weights its job published after rollout 1.
    const session2 = await env.client.workflow.getHandle(sessionWorkflowId(experiment, 2)).query(sessionStateQuery);
    expect(session2.arrivals.planner?.weightsVersion).toBe(1);
    expect(session2.arrivals.actor?.weightsVersion).toBe(1);
    const planned2 = await readSamples(store, p.rollouts[1]!.samples.planner!.ref);
    expect(planned2.every((s) => s.metadata.weightVersion === 1)).toBe(true);
    // Two jobs that each initialise, train and publish a policy: 31 s alone, and past the default
    // 120 s beside a main job on the same two cores, when the timed-out test's teardown then shut the
    // shared runtime under the next suite.
  }, 300_000);
});
