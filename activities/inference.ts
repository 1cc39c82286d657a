/**
 * Inference-queue activities. Concurrent generate activities share one engine per weight version,
 * which batches them (see BatchingEngine); token ids, logprobs and entropy go to the blob store and
 * the history keeps the text and a few numbers a person can read.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { AgentRole, BlobRef, Completion, FinishReason, RemoteEngineRef, SamplingParams } from '../src/domain/types';
import { RemoteEngineRequestError, RemoteOpenAIEngine } from '../src/engine/openai-engine';
import { loadVllmLora, loraModelName, reloadVllmWeights, servedWeightVersion, serverTokenize } from '../src/engine/vllm-weights';
import { writeServedWeights } from '../src/engine/served-weights';
import type { Prompt } from '../src/engine/types';
import { tokenizerOfWeights } from '../src/model/hf-checkpoint';
import { createChatActivities, evaluateChatPolicy } from './chat-episodes';
import { putJson, type BlobStore } from '../src/store/blob-store';
import { evaluateArithPolicy } from '../src/eval/arith-eval';
import { splitSchemeOf } from '../src/config/recorded';
import { evaluateHorizonPolicy, type HorizonEvalOptions, type HorizonEvalReport } from '../src/eval/horizon-eval';
import { evaluateEpisodeAccuracy, type EpisodeAccuracyOptions, type EpisodeAccuracyReport } from '../src/eval/episode-accuracy';
import type { RunConfig } from '../src/config/schema';
import type { CheckpointInfo, WeightsInfo } from '../src/contracts/weights';
import { loadServedTokenizer, loadTokenizer } from '../src/model/tokenizer';
import type { TextTokenizer } from '../src/model/tokenizer-types';
import { describeTokenMismatch } from '../src/model/token-mismatch';
import { closeTurn } from '../src/planact/protocol';
import { splitPrompt } from '../src/timeline/capture';
import { EngineCache } from './engine-cache';
import { settleBatch } from './batch';
import type { BatchOutcome } from '../src/contracts/batch';
import type { CompletionTokens } from '../src/contracts/generation';
import type { EvalReport } from '../src/eval/report';

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

/** generateBatch's input: requests one episode workflow made at once (each with its own weights and role). */
export interface GenerateBatchInput {
  requests: GenerateInput[];
}

export interface SyncRemoteWeightsInput {
  runId: string;
  /** The published weights (their ONNX serves the check) and the checkpoint they were made from. */
  weights: WeightsInfo;
  checkpoint: CheckpointInfo;
  remote: RemoteEngineRef;
  /** A directory the server can read; each version is exported to <dir>/<run>/v<version>. */
  dir: string;
}

export interface SyncRemoteWeightsResult {
  version: number;
  /** Seconds from the request to the server serving the new weights (export excluded). */
  reloadSeconds: number;
  exportSeconds: number;
  /** Largest |server logprob − embedded logprob| over the check's tokens on the new weights. */
  maxLogprobDiff: number;
}

/** Tries of a synced request inside one activity attempt when syncs keep landing mid-request. */
const STRADDLE_RETRIES = 3;

/** The check after a sync: the server's logprobs on these weights agree with the embedded engine's this closely. */
export const SYNC_LOGPROB_TOLERANCE = 1e-3;
const SYNC_CHECK_PROMPT = 'Evaluate: 12+34\n';

export interface GenerateResult {
  text: string;
  finishReason: FinishReason;
  promptTokens: number;
  responseTokens: number;
  /** Mean normalized entropy of the generated tokens (0 = certain, 1 = uniform). */
  meanEntropy: number;
  /** Prompt tokens the engine's prefix cache served (not prefilled again); absent from older results. */
  cachedPromptTokens?: number;
  /**
   * The weights that generated it: the input's, or on a synced remote server the version it served,
   * which in an asynchronous run may be newer than the input's (the rollout's).
   */
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
  /** The policy that plays both roles, or the planner when actorWeights is given. */
  weights: WeightsInfo;
  /** Dual mode's joint evaluation: the actor plays with these weights, the planner with `weights`. */
  actorWeights?: WeightsInfo;
}

/**
 * The version a synced server's completion is labelled with, from the server's version read before
 * and after it: one version throughout, at least the one the request wanted (the rollout's); else
 * undefined (the server changed weights mid-request, or has not been given the wanted ones yet).
 */
export function acceptedServedVersion(before: string | null, after: string | null, wanted: number): number | undefined {
  if (before === null || before !== after || !/^\d+$/.test(before)) return undefined;
  const served = Number(before);
  return served >= wanted ? served : undefined;
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
  const remotes = new Map<string, Promise<RemoteOpenAIEngine>>();
  /**
   * The client of a remote server, once its tokenizer is known to be the server's: the file's ids
   * for a probe text must equal the server's /tokenize (where the server has it), or every prompt
   * sent as ids would mean other text to the model.
   */
  const remoteEngine = (ref: RemoteEngineRef, weightsTokenizer?: TextTokenizer): Promise<RemoteOpenAIEngine> => {
    const own = weightsTokenizer !== undefined && weightsTokenizer !== tokenizer() ? weightsTokenizer : undefined;
    const key = `${ref.baseUrl} ${ref.model} ${ref.tokenizer ?? ''} ${own ? `${own.eosToken} ${own.vocabSize}` : ''}`;
    let remote = remotes.get(key);
    if (!remote) {
      remote = (async () => {
        let tok: TextTokenizer;
        try {
          tok = own ?? (ref.tokenizer ? loadServedTokenizer(ref.tokenizer) : tokenizer());
        } catch (err) {
          throw new RemoteEngineRequestError(0, 'server-config', `inference.openai.tokenizer ${ref.tokenizer}: ${(err as Error).message}`);
        }
        const probe = `Compute: 17+25*3\nACT 1: 17+25\n<calc>17+25</calc>\n<result>42</result>\n${tok.eosToken}`;
        const served = await serverTokenize(ref.baseUrl, ref.model, probe);
        const mine = tok.encode(probe);
        if (served && JSON.stringify(served) !== JSON.stringify(mine)) {
          throw new RemoteEngineRequestError(0, 'server-config', `remote engine ${ref.baseUrl} tokenizes differently from ${ref.tokenizer ?? 'the project tokenizer'} (${describeTokenMismatch({ a: 'server', b: 'file' }, served, mine, (ids) => tok.decode(ids))}): set inference.openai.tokenizer to the served model's tokenizer.json`);
        }
        return new RemoteOpenAIEngine({ baseUrl: ref.baseUrl, model: ref.model, tokenizer: tok, apiKey: process.env.DURABLE_RL_OPENAI_API_KEY });
      })();
      remote.catch(() => remotes.delete(key));
      remotes.set(key, remote);
    }
    return remote;
  };
  /** A remote request's failure as Temporal should see it: a wrong request or server setting fails the same on every retry. */
  const asActivityFailure = (err: unknown): unknown =>
    err instanceof RemoteEngineRequestError ? ApplicationFailure.nonRetryable(err.message, 'RemoteEngineRequestError', { problem: err.problem, status: err.status }) : err;

  /**
   * The completion from the embedded engine of these weights, or from the remote server the input
   * names, with the weight version that produced it.
   */
  const complete = async (input: Omit<GenerateInput, 'prompt'>, prompt: Prompt): Promise<{ completion: Completion; weightVersion: number }> => {
    const labelled = (completion: Completion) => ({ completion, weightVersion: input.weights.version });
    if (!input.remote) return labelled(await (await engines.get(input.weights)).complete(prompt, input.params));
    try {
      // A synced server serves these weights, so it speaks their tokenizer (a chat model's own, model.tokenizer).
      const remote = await remoteEngine(input.remote, input.remote.synced ? await tokenizerOfWeights(store, input.weights) : undefined);
      if (!input.remote.synced) return labelled(await remote.complete(prompt, input.params, Context.current().cancellationSignal));
      // A LoRA policy: the adapter of exactly these weights, served under a name derived from them.
      if (input.weights.lora && input.weights.hf) {
        return labelled(await remote.complete(prompt, input.params, Context.current().cancellationSignal, loraModelName(input.remote.model, input.weights.hf.sha256)));
      }
      // The completion is labelled with the version the server served, read before and after the
      // request: weights change only while the server is paused between requests, so equal reads
      // mean one version made every token. A newer version than the rollout started with is the
      // run's own later weights, synced while an asynchronous rollout was in flight (a partial
      // rollout: this call continues on them); an older one, or none, is a sync not finished yet.
      // A request that straddled a sync (the reads differ) is sent again at once: the next is
      // clean unless another sync lands meanwhile. Anything else waits for Temporal's retry.
      for (let attempt = 1; ; attempt++) {
        const before = await servedWeightVersion(input.remote.baseUrl);
        const completion = await remote.complete(prompt, input.params, Context.current().cancellationSignal);
        const after = await servedWeightVersion(input.remote.baseUrl);
        const served = acceptedServedVersion(before, after, input.weights.version);
        if (served !== undefined) return { completion, weightVersion: served };
        const straddled = before !== after && acceptedServedVersion(after, after, input.weights.version) !== undefined;
        if (!straddled || attempt >= STRADDLE_RETRIES) {
          throw new Error(`remote engine ${input.remote.baseUrl} served weight version ${before}→${after}, wanted ${input.weights.version} or newer from one version; retrying once the sync is done`);
        }
      }
    } catch (err) {
      throw asActivityFailure(err);
    }
  };

  /** syncRemoteWeights' work: write the served files, load them (reload, or a LoRA adapter), then the logprob check. */
  const syncRemote = async (input: SyncRemoteWeightsInput): Promise<SyncRemoteWeightsResult> => {
    const t0 = Date.now();
    const served = await writeServedWeights(store, { runId: input.runId, weights: input.weights, checkpoint: input.checkpoint, root: input.dir, model: input.remote.model, tokenizer: tokenizer() });
    const t1 = Date.now();
    let t2: number;
    let probe: Completion;
    try {
      if (served.kind === 'full') await reloadVllmWeights(input.remote.baseUrl, served.dir, input.weights.version);
      else await loadVllmLora(input.remote.baseUrl, served);
      t2 = Date.now();
      const params: SamplingParams = { maxNewTokens: 8, temperature: 1, topP: 1, stop: [], seed: 1 };
      probe = await (await remoteEngine(input.remote, await tokenizerOfWeights(store, input.weights))).complete(SYNC_CHECK_PROMPT, params, undefined, served.kind === 'lora' ? served.name : undefined);
    } catch (err) {
      throw asActivityFailure(err);
    }
    // Leased: scoring bypasses the batch queue, which is what keeps an evicted engine alive for get().
    const local = await engines.lease(input.weights, (engine) => engine.scoreTokens(probe.promptTokenIds, probe.tokenIds));
    const maxLogprobDiff = Math.max(0, ...probe.logprobs.map((lp, i) => Math.abs(lp - (local[i] as number))));
    if (!(maxLogprobDiff <= SYNC_LOGPROB_TOLERANCE)) {
      throw ApplicationFailure.nonRetryable(
        `remote engine ${input.remote.baseUrl} does not serve weights v${input.weights.version} after the reload: its logprobs differ from the embedded engine's by ${maxLogprobDiff.toFixed(5)} (tolerance ${SYNC_LOGPROB_TOLERANCE}); is it running with --dtype float32 and --logprobs-mode processed_logprobs?`,
        'RemoteEngineRequestError',
      );
    }
    return { version: input.weights.version, exportSeconds: (t1 - t0) / 1000, reloadSeconds: (t2 - t1) / 1000, maxLogprobDiff };
  };

  /** One completion, its token ids, logprobs and entropy written to the blob store. */
  const generateOne = async (input: GenerateInput): Promise<GenerateResult> => {
    const { completion: c, weightVersion } = await complete(input, input.prompt);
    // The request as timeline capture needs it (src/timeline/episode-merge.ts): the prompt's messages with
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
      weightVersion,
      tokens,
    };
  };

  return {
    ...createChatActivities({ store, engines, complete }),

    async generate(input: GenerateInput): Promise<GenerateResult> {
      return withHeartbeat(generateOne(input), () => ({ role: input.role }));
    },

    /**
     * The requests an episode workflow made in one activation (workflows/request-batcher.ts), all
     * at once: the engine batches them as it batches concurrent generate activities. Each is
     * answered on its own (activities/batch.ts): a request the remote server refuses fails only
     * itself; anything else fails the attempt, and Temporal retries the batch.
     */
    async generateBatch({ requests }: GenerateBatchInput): Promise<Array<BatchOutcome<GenerateResult>>> {
      return withHeartbeat(settleBatch(requests, generateOne), () => ({ requests: requests.length }));
    },

    /**
     * Puts a checkpoint's weights on the remote server (vLLM): exports them as a Hugging Face
     * directory the server reads, reloads them in place, and checks the server now computes the
     * same logprobs as the embedded engine on the same weights (one greedy probe). Idempotent: a
     * retry exports the same bytes and reloads again.
     */
    async syncRemoteWeights(input: SyncRemoteWeightsInput): Promise<SyncRemoteWeightsResult> {
      return withHeartbeat(syncRemote(input), () => ({ version: input.weights.version }));
    },

    /** End-to-end accuracy on held-out problems of a distribution, greedy and sampled (how RL is judged). */
    async evaluateEpisodes(input: EvaluateEpisodesInput): Promise<EpisodeAccuracyReport> {
      let done = 0;
      const { weights: _weights, actorWeights: _actor, ...opts } = input;
      // Leased: an evaluation holds its engines across many requests (and tool calls between them).
      const work = engines.lease(input.weights, (engine) =>
        input.actorWeights
          ? engines.lease(input.actorWeights, (actor) => evaluateEpisodeAccuracy({ planner: engine, actor }, { ...opts, onEpisode: () => (done += 1) }))
          : evaluateEpisodeAccuracy({ planner: engine, actor: engine }, { ...opts, onEpisode: () => (done += 1) }),
      );
      return withHeartbeat(work, () => ({ episodesDone: done }));
    },

    /** Grid world: success per plan horizon on held-out layouts, greedy and sampled. */
    async evaluateHorizons(input: EvaluateHorizonsInput): Promise<HorizonEvalReport> {
      let done = 0;
      const { weights: _weights, ...opts } = input;
      return withHeartbeat(engines.lease(input.weights, (engine) => evaluateHorizonPolicy(engine, { ...opts, onEpisode: () => (done += 1) })), () => ({ episodesDone: done }));
    },

    async evaluatePolicy(input: EvaluatePolicyInput): Promise<EvalReport> {
      let done = 0;
      const work = engines.lease(input.weights, async (engine): Promise<EvalReport> => {
        if (input.task.kind === 'grid') {
          // SFT's evaluation of the grid world: greedy success on held-out layouts, per horizon.
          const grid = input.task.grid!;
          // The validation part when the run has a test part (grid configs recorded before it lack testLayouts: the whole held-out split).
          const part = (grid as Partial<typeof grid>).testLayouts ? { part: 'validation' as const } : {};
          const report = await evaluateHorizonPolicy(engine, { seed: input.seed, layouts: input.task.evalProblems, grid, horizon: input.horizon!, ...part, onEpisode: () => (done += 1) });
          return { problems: report.greedy.total, episodeAccuracy: report.greedy.accuracy, byHorizon: report.byHorizon, examples: [report.example] };
        }
        const chat = input.task.chat;
        if (chat?.tokenizer !== undefined) {
          return evaluateChatPolicy(engine, {
            chat: { tokenizer: chat.tokenizer, enableThinking: chat.enableThinking },
            seed: input.seed,
            problems: input.task.evalProblems,
            difficulty: input.task.difficulty,
            scheme: splitSchemeOf(input.task),
            maxTurns: input.rollout.maxTurns,
            maxNewTokens: input.maxNewTokens,
            onEpisode: () => (done += 1),
          });
        }
        return evaluateArithPolicy(engine, {
          seed: input.seed,
          problems: input.task.evalProblems,
          difficulty: input.task.difficulty,
          scheme: splitSchemeOf(input.task),
          rollout: input.rollout,
          maxNewTokens: input.maxNewTokens,
          onEpisode: () => (done += 1),
        });
      });
      return withHeartbeat(work, () => ({ episodesDone: done }));
    },
  };
}

function round(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}

export type InferenceActivities = ReturnType<typeof createInferenceActivities>;
