/**
 * planActEpisode: one arithmetic problem solved by a planner and concurrent actors, as a child
 * workflow. The turn loop itself is src/planact's runPlanActEpisode; this workflow gives it
 * activity-backed deps (generate on each role's inference queue, the calculator on the tools
 * queue), measures acts and tool calls in workflow time, and has the episode's samples written.
 *
 * Malformed model output ends the episode with reward 0 and a recorded failure (the driver's
 * contract); only infrastructure failures that outlast their retries fail this workflow.
 */
import { RetryState } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, isCancellation, workflowInfo } from '@temporalio/workflow';
import type { GenerateResult } from '../activities/inference';
import type { EpisodeSamplesInput, WriteSamplesInput } from '../activities/samples';
import { runPlanActEpisode } from '../src/planact/episode';
import type { EpisodeDeps } from '../src/planact/episode-types';
import { errorMessage } from '../src/planact/error-message';
import { generationSeed } from '../src/planact/sampling-seed';
import { problemFromExpression, type ArithProblem } from '../src/tasks/arith/problem';
import { arithTask } from '../src/tasks/arith/task';
import { evaluateExpression } from '../src/tasks/arith/calc';
import { actorResultsCorrect } from '../src/planact/planner-credit';
import { emptyToolMetrics } from './tool-metrics';
import { preview } from './web-ui-format';
import { workflowNow } from './clock';
import { CALC_MAX_ATTEMPTS, planActProxies } from './activity-proxies';
import { attemptOf, episodeCalls, type CalcAnswer, type EpisodeCalls } from './episode-calls';
import type { ActDigest, PlanActEpisodeDigest, PlanActEpisodeInput, PlanActEpisodeResult, PlanActGroupResult } from '../src/contracts/plan-act-episode';
import type { ToolMetrics } from '../src/contracts/rollout-summary';

export async function planActEpisode(input: PlanActEpisodeInput): Promise<PlanActEpisodeResult> {
  const { episode, samplesInput } = await playEpisode(input, episodeCalls(input.timeouts, input.batchRequests ?? true));
  const { samples } = planActProxies(input.timeouts);
  return { ...episode, samples: await samples.writeEpisodeSamples({ episodes: [samplesInput], ...timelineOf(input) }) };
}

/**
 * planActEpisodes: several episodes in one workflow (a GRPO group: the same prompt groupSize
 * times). They share workflow tasks and one samples write, so the orchestration cost per episode
 * drops; every episode's turns are still in this workflow's result.
 */
export async function planActEpisodes(inputs: PlanActEpisodeInput[]): Promise<PlanActGroupResult> {
  if (inputs.length === 0) throw ApplicationFailure.nonRetryable('planActEpisodes needs at least one episode', 'BadInputError');
  // One set of calls for the group: the requests its episodes make together go as one activity.
  const calls = episodeCalls(inputs[0]!.timeouts, inputs[0]!.batchRequests ?? true);
  const played = await Promise.all(inputs.map((i) => playEpisode(i, calls)));
  const { samples } = planActProxies(inputs[0]!.timeouts);
  return { episodes: played.map((p) => p.episode), samples: await samples.writeEpisodeSamples({ episodes: played.map((p) => p.samplesInput), ...timelineOf(inputs[0]!) }) };
}

/** The run's timeline config for the samples write, when the rollout passed one. */
function timelineOf(input: PlanActEpisodeInput): Pick<WriteSamplesInput, 'timeline'> {
  return input.timeline !== undefined ? { timeline: input.timeline } : {};
}

/** One episode, in whichever workflow calls it, through its calls to the queues; the caller writes its samples. */
export async function playEpisode(input: PlanActEpisodeInput, calls: EpisodeCalls): Promise<{ episode: PlanActEpisodeDigest; samplesInput: EpisodeSamplesInput }> {
  const problem = parseProblem(input.expression);
  const started = workflowNow();
  const actSpans = new Map<string, { startMs: number; endMs: number }>();
  const toolMetrics = emptyToolMetrics();

  const deps: EpisodeDeps<GenerateResult> = {
    async generate(role, prompt, meta) {
      const at = workflowNow() - started;
      const output = await calls.generate({
        weights: input.policies[role].weights,
        role,
        prompt,
        params: {
          maxNewTokens: meta.maxNewTokens,
          temperature: input.sampling.temperature,
          topP: input.sampling.topP,
          stop: meta.stop,
          ...(input.seed !== undefined ? { seed: generationSeed(input.seed, role, meta) } : {}),
        },
        messageStarts: meta.messageStarts,
        ...(input.policies[role].remote ? { remote: input.policies[role].remote } : {}),
      }, input.policies[role].inferenceQueue);
      if (meta.actId !== undefined) {
        // An act ends on a generation (its answer, or the output that broke a limit), so the span
        // from its first request to its last reply is the act's duration.
        const span = actSpans.get(meta.actId) ?? { startMs: at, endMs: at };
        span.endMs = workflowNow() - started;
        actSpans.set(meta.actId, span);
      }
      return output;
    },
    calc: (expression) => meteredCalc(calls.calc, expression, toolMetrics),
  };

  let episode;
  try {
    episode = await runPlanActEpisode(problem, deps, { task: arithTask, episodeId: input.episodeId, ...input.limits });
  } catch (err) {
    if (err instanceof RangeError) throw ApplicationFailure.nonRetryable(err.message, 'ConfigError');
    throw err;
  }

  // rollout.plannerCredit: an episode an actor's wrong RESULT decided does not train the planner.
  const plannerNotTrained = input.plannerCredit === 'correct-results' && !actorResultsCorrect(episode.turns, evaluateExpression);
  const samplesInput: EpisodeSamplesInput = {
    episodeId: input.episodeId,
    ...(input.groupId !== undefined ? { groupId: input.groupId } : {}),
    reward: episode.reward,
    generations: episode.generations.filter((g) => !(plannerNotTrained && g.role === 'planner')).map((g) => ({
      role: g.role,
      turn: g.turn,
      ...(g.actId !== undefined ? { actId: g.actId } : {}),
      step: g.step,
      tokens: g.output.tokens,
      weightVersion: g.output.weightVersion,
    })),
  };

  const turns = episode.turns.map((t) => ({
    turn: t.turn,
    plan: preview(t.planText),
    kind: t.kind,
    acts: t.acts.map(
      (a): ActDigest => ({
        id: a.id,
        expression: a.expression,
        ...(a.result !== undefined ? { result: a.result } : {}),
        ...(a.failure ? { failure: `${a.failure.code}: ${a.failure.message}` } : {}),
        toolCalls: a.toolCalls,
        toolFailures: a.toolFailures,
        ...(actSpans.get(a.id) ?? { startMs: 0, endMs: 0 }),
      }),
    ),
    results: t.resultsText,
  }));
  const acts = turns.flatMap((t) => t.acts);
  const digest: PlanActEpisodeDigest = {
    episodeId: input.episodeId,
    expression: problem.expression,
    expected: problem.answer,
    status: episode.status,
    answer: episode.finalAnswer,
    reward: episode.reward,
    ...(episode.failure ? { failure: episode.failure } : {}),
    turns,
    ...(plannerNotTrained ? { plannerNotTrained: true as const } : {}),
    metrics: {
      turns: episode.metrics.turns,
      acts: episode.metrics.acts,
      generations: episode.metrics.generations,
      maxConcurrentActs: episode.metrics.maxConcurrentActs,
      tools: toolMetrics,
      episodeMs: workflowNow() - started,
      actMsTotal: acts.reduce((ms, a) => ms + (a.endMs - a.startMs), 0),
    },
  };
  return { episode: digest, samplesInput };
}

function parseProblem(expression: string): ArithProblem {
  try {
    return problemFromExpression(expression);
  } catch (err) {
    throw ApplicationFailure.nonRetryable(`episode ${workflowInfo().workflowId}: ${(err as Error).message}`, 'BadInputError');
  }
}

/**
 * The driver's calc contract: resolve with the tool's text, or reject with an Error whose message
 * the actor reads. Bad input (CalcInputError) is the actor's mistake and gets its reason back; a
 * calculator still failing after its retries is reported as unavailable, so the act can go on.
 */
export async function meteredCalc(calc: EpisodeCalls['calc'], expression: string, m: ToolMetrics): Promise<string> {
  const t0 = workflowNow();
  m.calls++;
  try {
    let answer: CalcAnswer;
    try {
      answer = await calc(expression);
    } catch (err) {
      if (isCancellation(err)) throw err;
      m.failures++;
      if (err instanceof ActivityFailure && err.retryState === RetryState.MAXIMUM_ATTEMPTS_REACHED) m.retries += CALC_MAX_ATTEMPTS - 1;
      // A call through an exchange fails with the calculator's last failure, which names its attempt.
      else if (err instanceof ApplicationFailure) m.retries += attemptOf(err) - 1;
      throw new Error(`calculator unavailable: ${errorMessage(err)}`);
    }
    m.retries += answer.attempt - 1;
    if ('inputError' in answer) {
      m.failures++;
      throw new Error(answer.inputError);
    }
    return answer.value;
  } finally {
    m.ms += workflowNow() - t0;
  }
}
