/**
 * A scripted stand-in for the inference queue's generate, for benchmarks and tests only: it answers
 * every request with the oracle's text (src/tasks/arith oracle plan; actors call the calculator and
 * copy its result) after a fixed latency, so a measurement shows orchestration cost rather than
 * our tiny CPU model, and a test gets well-formed episodes. It is never registered by createWorkers;
 * whoever uses it runs it on a task queue of its own and points a job's inferenceQueue at it.
 *
 * Token ids are the text's UTF-8 bytes and logprobs are 0 (a scripted policy is certain), so the
 * samples it yields are structurally real but not for training a model.
 */
import type { FinishReason } from '../src/domain/types';
import { closeTurn, EOS_TEXT, TOOL_RESULT_OPEN, TOOL_RESULT_CLOSE, formatToolCall } from '../src/planact/protocol';
import { splitPrompt } from '../src/timeline/capture';
import { oracleGenerate } from '../src/tasks/arith/oracle-policy';
import { problemFromExpression } from '../src/tasks/arith/problem';
import { layoutFromId, oraclePlan, parseObservation } from '../src/tasks/grid';
import { putJson, type BlobStore } from '../src/store/blob-store';
import type { GenerateBatchInput, GenerateInput, GenerateResult } from './inference';
import type { BatchOutcome } from '../src/contracts/batch';
import { settleBatch } from './batch';
import type { CompletionTokens } from '../src/contracts/generation';

/** Task queue the recorder and benchmarks serve the oracle on; tests use queues of their own. */
export const ORACLE_TASK_QUEUE = 'durable-rl-oracle';

export interface ScriptedCompletion {
  text: string;
  finishReason: FinishReason;
}

export interface OracleCall {
  input: GenerateInput;
  /** Wall clock, ms since the epoch. */
  startedAt: number;
  endedAt: number;
  text: string;
}

export interface OracleInferenceOptions {
  store: BlobStore;
  /** Fixed time per generate call, standing in for a real engine's latency. */
  latencyMs?: number;
  /** Replaces the oracle's answer for some requests (malformed plans in tests); undefined keeps it. */
  script?: (input: GenerateInput) => ScriptedCompletion | undefined;
  /** Sees every call with its wall-clock span (overlap checks, barrier latency). */
  onCall?: (call: OracleCall) => void;
}

const TASK_PROMPT = /^(?:Compute|Evaluate): (\S+)\n/;
const encoder = new TextEncoder();

/** The oracle's completion for a request, derived from the prompt alone. */
export async function oracleCompletion(input: GenerateInput): Promise<ScriptedCompletion> {
  // Grid world: a shortest path of H moves from the agent's cell (src/tasks/grid/oracle.ts).
  const grid = parseObservation(input.prompt);
  if (grid) return { text: oraclePlan(layoutFromId(grid.layoutId), grid.at, grid.horizon).join('').slice(0, input.params.maxNewTokens), finishReason: 'length' };
  const expression = TASK_PROMPT.exec(input.prompt)?.[1];
  if (expression === undefined) return { text: '?', finishReason: 'eos' };
  if (input.role !== 'planner') {
    // Actor (or single agent): one calculator call on the whole expression, then copy its result.
    const open = input.prompt.lastIndexOf(TOOL_RESULT_OPEN);
    if (open < 0) return { text: formatToolCall(expression), finishReason: 'stop' };
    const close = input.prompt.indexOf(TOOL_RESULT_CLOSE, open);
    return { text: input.prompt.slice(open + TOOL_RESULT_OPEN.length, close < 0 ? undefined : close), finishReason: 'eos' };
  }
  // Each finished planner turn left one EOS in the context, so they count the turn.
  const turn = input.prompt.split(EOS_TEXT).length;
  return oracleGenerate(problemFromExpression(expression))('planner', input.prompt, {
    episodeId: 'oracle',
    turn,
    step: 0,
    stop: input.params.stop,
    maxNewTokens: input.params.maxNewTokens,
    messageStarts: input.messageStarts ?? [0],
  });
}

export function createOracleInferenceActivities(opts: OracleInferenceOptions) {
  const activities = {
    async generate(input: GenerateInput): Promise<GenerateResult> {
      const startedAt = Date.now();
      if (opts.latencyMs) await new Promise((r) => setTimeout(r, opts.latencyMs));
      const c = opts.script?.(input) ?? (await oracleCompletion(input));
      const promptTokenIds = [...encoder.encode(input.prompt)];
      // Like a real engine, an EOS-ended output's ids end with the end-of-turn token (here its bytes).
      const outputText = c.finishReason === 'eos' ? closeTurn(c.text) : c.text;
      const tokenIds = [...encoder.encode(outputText)];
      const tokens = await putJson(
        opts.store,
        {
          promptTokenIds,
          tokenIds,
          logprobs: tokenIds.map(() => 0),
          entropy: tokenIds.map(() => 0),
          messages: splitPrompt(input.prompt, input.messageStarts ?? [0], promptTokenIds, (t) => [...encoder.encode(t)]),
          outputText,
        } satisfies CompletionTokens,
        'completion-tokens',
      );
      opts.onCall?.({ input, startedAt, endedAt: Date.now(), text: c.text });
      return {
        text: c.text,
        finishReason: c.finishReason,
        promptTokens: promptTokenIds.length,
        responseTokens: tokenIds.length,
        meanEntropy: 0,
        weightVersion: input.weights.version,
        tokens,
      };
    },

    /** The batched form, as the inference queue answers it: each request after the latency, all at once. */
    async generateBatch({ requests }: GenerateBatchInput): Promise<Array<BatchOutcome<GenerateResult>>> {
      return settleBatch(requests, (r) => activities.generate(r));
    },
  };
  return activities;
}
