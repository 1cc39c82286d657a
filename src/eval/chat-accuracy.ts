/**
 * Held-out accuracy of a chat policy (task.chat, docs/chat.md): the same chat episodes the rollout
 * plays (src/tasks/arith playChatEpisode, the conversation kept token-in/token-out by
 * advanceKeptEpisode), in-process on one engine, greedy and optionally sampled with a seed per episode.
 */
import type { Completion, SamplingParams } from '../domain/types';
import { advanceKeptEpisode, type KeptEpisode } from '../chat/kept-episode';
import type { ChatModel, ConversationOptions } from '../chat';
import { episodeSeed } from '../planact/sampling-seed';
import { fnv1a32 } from '../domain/rng';
import { calcOrRefusal, chatProblemMessages, playChatEpisode, type ArithProblem, type ChatEpisodeOutcome } from '../tasks/arith';
import { accuracyOf, clusteredAccuracy, passAtK } from './accuracy';
import type { EpisodeAccuracyReport } from './episode-accuracy';

export interface ChatEngine {
  readonly weightVersion: number;
  /** A completion of these prompt ids (the embedded engine takes ids as a prompt). */
  complete(prompt: readonly number[], params: SamplingParams): Promise<Completion>;
}

export interface ChatAccuracyOptions {
  seed: number;
  maxTurns: number;
  maxNewTokens: number;
  sampled?: { temperature: number; topP: number };
  samplesPerProblem?: number;
  part?: 'validation' | 'test';
  onEpisode?: () => void;
  /** Episodes played at once (default CHAT_EVAL_CONCURRENCY). */
  concurrency?: number;
}

/**
 * A chat prompt is long (Qwen3's tool system text alone is about 150 ids) and a chat vocabulary large
 * (151,669 for Qwen3): the embedded engine's prefill holds rows x length x vocabulary logits, about
 * 3.9 GB for 32 rows of 200 ids, and onnxruntime's arena keeps that peak per loaded engine. A few
 * episodes at a time keep an evaluation within a few hundred MB (measured: 32 at once ran the main
 * job out of 24 GiB).
 */
export const CHAT_EVAL_CONCURRENCY = 4;

/** Runs `work` over the items, at most `limit` at once, results in order. */
async function pooled<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await work(items[i]!, i);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

/** One chat episode on an engine, kept in memory; `seed` undefined: greedy. */
export async function playChatOnEngine(engine: ChatEngine, model: ChatModel, opts: ConversationOptions, problem: ArithProblem, limits: { maxTurns: number; maxNewTokens: number }, sampling?: { temperature: number; topP: number; seed: number }): Promise<{ outcome: ChatEpisodeOutcome; episode: KeptEpisode | undefined }> {
  let kept: KeptEpisode | undefined;
  let turn = 0;
  const outcome = await playChatEpisode(
    problem,
    {
      turn: async (env) => {
        turn++;
        const params: SamplingParams = sampling
          ? { maxNewTokens: limits.maxNewTokens, temperature: sampling.temperature, topP: sampling.topP, stop: [], seed: fnv1a32(`chat:${sampling.seed}:${turn}`) }
          : { maxNewTokens: limits.maxNewTokens, temperature: 0, topP: 1, stop: [] };
        const step = await advanceKeptEpisode(model, opts, kept, kept ? env : chatProblemMessages(problem.expression), async (ids) => ({ completion: await engine.complete(ids, params), weightVersion: engine.weightVersion }));
        kept = step.episode;
        return { parsed: step.parsed, finishReason: step.finishReason === 'length' ? 'length' : 'stop' };
      },
      calc: async (expression) => calcOrRefusal(expression),
    },
    limits,
  );
  return { outcome, episode: kept };
}

export async function evaluateChatAccuracy(engine: ChatEngine, model: ChatModel, conv: ConversationOptions, problems: readonly ArithProblem[], opts: ChatAccuracyOptions): Promise<EpisodeAccuracyReport> {
  const samples = Math.max(1, opts.samplesPerProblem ?? 1);
  const limits = { maxTurns: opts.maxTurns, maxNewTokens: opts.maxNewTokens };
  const play = async (problem: ArithProblem, index: number, sampling?: { temperature: number; topP: number }, sample = 0) => {
    const seed = sample === 0 ? episodeSeed(opts.seed, 'chat-eval', index) : episodeSeed(opts.seed, `chat-eval-s${sample}`, index);
    const r = await playChatOnEngine(engine, model, conv, problem, limits, sampling ? { ...sampling, seed } : undefined);
    opts.onEpisode?.();
    return r;
  };
  const limit = opts.concurrency ?? CHAT_EVAL_CONCURRENCY;
  const greedy = await pooled(problems, limit, (p, i) => play(p, i));
  const sampling = opts.sampled;
  const sampled = sampling ? await pooled(problems, Math.max(1, Math.floor(limit / samples)), (p, i) => Promise.all(Array.from({ length: samples }, (_, j) => play(p, i, sampling, j)))) : undefined;
  const failures: Record<string, number> = {};
  for (const { outcome } of greedy) if (outcome.failure) failures[outcome.failure] = (failures[outcome.failure] ?? 0) + 1;
  const malformed = greedy.reduce((n, g) => n + g.outcome.malformedToolCalls, 0);
  if (malformed > 0) failures['malformed-tool-calls'] = malformed;
  const correct = (o: ChatEpisodeOutcome) => o.reward > 0;
  const first = greedy[0];
  const withTool = greedy.filter((g) => g.outcome.toolCalls > 0);
  const without = greedy.filter((g) => g.outcome.toolCalls === 0);
  return {
    greedy: accuracyOf(greedy.filter((g) => correct(g.outcome)).length, greedy.length),
    ...(sampled ? { sampled: samples === 1 ? accuracyOf(sampled.filter((s) => correct(s[0]!.outcome)).length, sampled.length) : clusteredAccuracy(sampled.map((s) => s.filter((x) => correct(x.outcome)).length), samples) } : {}),
    ...(sampled && samples > 1 ? { passAtK: passAtK(sampled.map((s) => s.filter((x) => correct(x.outcome)).length), samples) } : {}),
    // An episode is one act here: "every act used the tool" is "the episode called calc".
    tools: {
      acts: greedy.length,
      actToolRate: greedy.length === 0 ? 0 : withTool.length / greedy.length,
      everyActUsedTool: accuracyOf(withTool.filter((g) => correct(g.outcome)).length, withTool.length),
      someActWithoutTool: accuracyOf(without.filter((g) => correct(g.outcome)).length, without.length),
    },
    ...(opts.part === 'test' ? { perProblem: greedy.map((g) => (correct(g.outcome) ? '1' : '0')).join('') } : {}),
    failures,
    example: first && first.episode ? `${problems[0]!.expression} = ${problems[0]!.answer}: ${JSON.stringify(model.tokenizer.decode(first.episode.conversation.ids).slice(-300))}` : '',
  };
}
