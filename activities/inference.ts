/**
 * Inference-queue activities. Concurrent generate activities share one engine per weight version,
 * which batches them (see BatchingEngine); token ids, logprobs and entropy go to the blob store and
 * the history keeps the text and a few numbers a person can read.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { AgentRole, BlobRef, Completion, FinishReason, SamplingParams } from '../src/domain/types';
import { RemoteEngineRequestError, RemoteOpenAIEngine } from '../src/engine/openai-engine';
import { putJson, type BlobStore } from '../src/store/blob-store';
import { evaluateArithPolicy } from '../src/eval/arith-eval';
import { evaluateHorizonPolicy, type HorizonEvalOptions, type HorizonEvalReport } from '../src/eval/horizon-eval';
import { evaluateEpisodeAccuracy, type EpisodeAccuracyOptions, type EpisodeAccuracyReport } from '../src/eval/episode-accuracy';
import type { RunConfig } from '../src/config/schema';
import type { WeightsInfo } from '../workflows/training-run-types';
import { loadTokenizer } from '../src/model/tokenizer';
import type { TextTokenizer } from '../src/model/tokenizer-types';
import { closeTurn } from '../src/planact/protocol';
import { splitPrompt } from '../src/timeline/capture';
import { EngineCache } from './engine-cache';
import type { CompletionTokens } from './samples';
import type { EvalReport } from './evaluation-types';

export interface GenerateInput {
  weights: WeightsInfo;
  role: AgentRole;
  prompt: string;
  params: SamplingParams;
  /** Character offsets where the prompt's messages begin (GenerateMeta.messageStarts); default one message. */
  messageStarts?: number[];
  /** Generate on this OpenAI-compatible server instead of the embedded policy (weights then only label the samples). */
  remote?: RemoteEngineRef;
}

export interface RemoteEngineRef {
  baseUrl: string;
  model: string;
}

export interface GenerateResult {
  text: string;
  finishReason: FinishReason;
  promptTokens: number;
  responseTokens: number;
  /** Mean normalized entropy of the generated tokens (0 = certain, 1 = uniform). */
  meanEntropy: number;
  /** Prompt tokens the engine's prefix cache served (not prefilled again); absent from older results. */
  cachedPromptTokens?: number;
  weightVersion: number;
  /** Prompt/response token ids, logprobs and entropy, by reference. */
  tokens: BlobRef;
}

export interface EvaluatePolicyInput {
  runId: string;
  weights: WeightsInfo;
  task: RunConfig['task'];
  rollout: RunConfig['rollout'];
  seed: number;
  maxNewTokens: number;
  /** task.kind grid: the run's plan horizons (the grid evaluation plays each held-out layout at each H). */
  horizon?: RunConfig['horizon'];
}

export interface EvaluateHorizonsInput extends Omit<HorizonEvalOptions, 'onEpisode'> {
  weights: WeightsInfo;
}

export interface EvaluateEpisodesInput extends Omit<EpisodeAccuracyOptions, 'onEpisode'> {
  weights: WeightsInfo;
}

/** Keeps a long activity visibly alive while it awaits the engine. */
async function withHeartbeat<T>(work: Promise<T>, details: () => unknown): Promise<T> {
  const ctx = Context.current();
  const timer = setInterval(() => ctx.heartbeat(details()), 1000);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

export function createInferenceActivities({ store, maxBatch = 64 }: { store: BlobStore; maxBatch?: number }) {
  const engines = new EngineCache(store, maxBatch);
  let loaded: TextTokenizer | undefined;
  const tokenizer = (): TextTokenizer => (loaded ??= loadTokenizer());
  const remotes = new Map<string, RemoteOpenAIEngine>();
  /** The completion from the embedded engine of these weights, or from the remote server the input names. */
  const complete = async (input: GenerateInput): Promise<Completion> => {
    if (!input.remote) return (await engines.get(input.weights)).complete(input.prompt, input.params);
    const key = `${input.remote.baseUrl} ${input.remote.model}`;
    let remote = remotes.get(key);
    if (!remote) remotes.set(key, (remote = new RemoteOpenAIEngine({ ...input.remote, tokenizer: tokenizer(), apiKey: process.env.DURABLE_RL_OPENAI_API_KEY })));
    try {
      return await remote.complete(input.prompt, input.params);
    } catch (err) {
      // A 4xx (unknown model, bad parameters) fails the same on every retry.
      if (err instanceof RemoteEngineRequestError) throw ApplicationFailure.nonRetryable(err.message, 'RemoteEngineRequestError');
      throw err;
    }
  };

  return {
    async generate(input: GenerateInput): Promise<GenerateResult> {
      const c = await withHeartbeat(complete(input), () => ({ role: input.role }));
      // The request as timeline capture needs it (activities/samples.ts): the prompt's messages with
      // their ids, and the output's text as it reads in later contexts (an EOS-ended turn closes
      // with the EOS text, whose id is the last of tokenIds).
      const messages = splitPrompt(input.prompt, input.messageStarts ?? [0], c.promptTokenIds, (t) => tokenizer().encode(t));
      const tokens = await putJson(
        store,
        {
          promptTokenIds: c.promptTokenIds,
          tokenIds: c.tokenIds,
          logprobs: c.logprobs,
          entropy: c.entropy,
          messages,
          outputText: c.finishReason === 'eos' ? closeTurn(c.text) : c.text,
        } satisfies CompletionTokens,
        'completion-tokens',
      );
      return {
        text: c.text,
        finishReason: c.finishReason,
        promptTokens: c.promptTokenIds.length,
        responseTokens: c.tokenIds.length,
        meanEntropy: c.entropy.length ? round(c.entropy.reduce((a, b) => a + b, 0) / c.entropy.length) : 0,
        cachedPromptTokens: c.cachedPromptTokens ?? 0,
        weightVersion: input.weights.version,
        tokens,
      };
    },

    /** End-to-end accuracy on held-out problems of a distribution, greedy and sampled (how RL is judged). */
    async evaluateEpisodes(input: EvaluateEpisodesInput): Promise<EpisodeAccuracyReport> {
      const engine = await engines.get(input.weights);
      let done = 0;
      const { weights: _weights, ...opts } = input;
      const work = evaluateEpisodeAccuracy(engine, { ...opts, onEpisode: () => (done += 1) });
      return withHeartbeat(work, () => ({ episodesDone: done }));
    },

    /** Grid world: success per plan horizon on held-out layouts, greedy and sampled. */
    async evaluateHorizons(input: EvaluateHorizonsInput): Promise<HorizonEvalReport> {
      const engine = await engines.get(input.weights);
      let done = 0;
      const { weights: _weights, ...opts } = input;
      return withHeartbeat(evaluateHorizonPolicy(engine, { ...opts, onEpisode: () => (done += 1) }), () => ({ episodesDone: done }));
    },

    async evaluatePolicy(input: EvaluatePolicyInput): Promise<EvalReport> {
      const engine = await engines.get(input.weights);
      let done = 0;
      if (input.task.kind === 'grid') {
        // SFT's evaluation of the grid world: greedy success on held-out layouts, per horizon.
        const report = await withHeartbeat(
          evaluateHorizonPolicy(engine, { seed: input.seed, layouts: input.task.evalProblems, grid: input.task.grid!, horizon: input.horizon!, onEpisode: () => (done += 1) }),
          () => ({ episodesDone: done }),
        );
        return { problems: report.greedy.total, episodeAccuracy: report.greedy.accuracy, byHorizon: report.byHorizon, examples: [report.example] };
      }
      const work = evaluateArithPolicy(engine, {
        seed: input.seed,
        problems: input.task.evalProblems,
        difficulty: input.task.difficulty,
        rollout: input.rollout,
        maxNewTokens: input.maxNewTokens,
        onEpisode: () => (done += 1),
      });
      return withHeartbeat(work, () => ({ episodesDone: done }));
    },
  };
}

function round(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}

export type InferenceActivities = ReturnType<typeof createInferenceActivities>;
