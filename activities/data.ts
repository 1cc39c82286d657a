/**
 * Orchestration-queue activities that build datasets. The dataset goes to the blob store; the
 * history keeps its reference, counts and one readable example.
 */
import type { BlobRef } from '../src/domain/types';
import { putJson, type BlobStore } from '../src/store/blob-store';
import { namedResult } from '../src/store/named-results';
import { loadTokenizer, tokenizeSegments } from '../src/model/tokenizer';
import type { RunConfig } from '../src/config/schema';
import type { SftExample as TokenizedExample } from '../src/sft/sft';
import { chatDemonstration, drawProblems, oracleSftExamples, sftExampleText } from '../src/tasks/arith';
import { chatConversationOptions, chatModelOf } from './chat-episodes';
import { splitSchemeOf } from '../src/config/recorded';
import { TOOL_CALL_OPEN } from '../src/planact/protocol';
import { names } from '../src/store/run-names';
import { refuseOtherInputs } from './named-results';
import { ApplicationFailure } from '@temporalio/activity';
import { generateLayouts, gridSftExamples } from '../src/tasks/grid';

export interface PrepareSftDatasetInput {
  runId: string;
  seed: number;
  task: RunConfig['task'];
  maxSeq: number;
  /** task.kind grid: the plan horizons demonstrations are written for. */
  horizon?: RunConfig['horizon'];
  /** tool-using: only the planner's demonstrations and the actor acts that call the calculator (compare.filteredSft; arithmetic only). */
  filter?: 'tool-using';
}

export interface SftDatasetInfo {
  ref: BlobRef;
  examples: number;
  plannerExamples: number;
  actorExamples: number;
  /** Examples dropped because they do not fit in maxSeq tokens. */
  tooLong: number;
  meanTokens: number;
  preview: string;
}

/** A demonstration before tokenizing: who wrote it, and its segments (train = model-written). */
interface Demonstration {
  role: string;
  segments: Array<{ text: string; train: boolean }>;
}

export function createDataActivities({ store }: { store: BlobStore }) {
  return {
    async prepareSftDataset(input: PrepareSftDatasetInput): Promise<SftDatasetInfo> {
      if (input.task.chat?.tokenizer !== undefined) return writeDataset(store, input, [], chatExamples(input));
      return writeDataset(store, input, input.task.kind === 'grid' ? gridDemonstrations(input) : arithDemonstrations(input));
    },
  };
}

/** The arithmetic task's demonstrations: the oracle's planner conversations and acts. */
function* arithDemonstrations(input: PrepareSftDatasetInput): Iterable<Demonstration> {
  const scheme = splitSchemeOf(input.task);
  const problems = drawProblems({ seed: input.seed, count: input.task.trainProblems, scheme, part: 'sft', difficulty: input.task.difficulty });
  const extra = input.task.extraDemonstrations;
  // A stream of its own, so adding extra demonstrations leaves the main ones unchanged.
  if (extra) problems.push(...drawProblems({ seed: input.seed ^ 0x0e_c7a5, count: extra.problems, scheme, part: 'sft', difficulty: extra.difficulty }));
  for (const problem of problems) {
    for (const ex of oracleSftExamples(problem, { toolUseRate: input.task.demoToolUseRate })) {
      // compare.filteredSft: the planner's demonstrations and the acts that call the calculator.
      if (input.filter === 'tool-using' && ex.role === 'actor' && !ex.segments.some((seg) => seg.train && seg.text.includes(TOOL_CALL_OPEN))) continue;
      yield ex;
    }
  }
}

/** Chat mode's demonstrations (task.chat): each SFT problem as a chat episode, tokenized by the rollout's own rules. */
function* chatExamples(input: PrepareSftDatasetInput): Iterable<TokenizedExample & { preview: string }> {
  const chat = input.task.chat!;
  const model = chatModelOf({ tokenizer: chat.tokenizer! });
  const opts = chatConversationOptions(chat);
  const problems = drawProblems({ seed: input.seed, count: input.task.trainProblems, scheme: splitSchemeOf(input.task), part: 'sft', difficulty: input.task.difficulty });
  for (const problem of problems) {
    const demo = chatDemonstration(problem, model, opts, input.task.demoToolUseRate);
    // compare.filteredSft: the demonstrations that call the calculator.
    if (input.filter === 'tool-using' && !demo.usesTool) continue;
    yield { role: 'single', tokens: demo.tokens, lossMask: demo.lossMask, preview: model.tokenizer.decode(demo.tokens) };
  }
}

/** Grid-world demonstrations: the oracle's plans on the training layouts, for every horizon of the pattern. */
function* gridDemonstrations(input: PrepareSftDatasetInput): Iterable<Demonstration> {
  if (!input.task.grid || !input.horizon) throw ApplicationFailure.nonRetryable('a grid dataset needs task.grid and horizon', 'ConfigError');
  for (const layout of generateLayouts({ seed: input.seed, count: input.task.trainProblems, split: 'train', shape: input.task.grid })) {
    for (const ex of gridSftExamples(layout, input.horizon.actionHorizonsPattern)) yield { role: 'single', segments: ex.segments };
  }
}

/** Tokenizes the demonstrations (dropping those longer than maxSeq), stores the dataset and names it for the run. */
async function writeDataset(store: BlobStore, input: PrepareSftDatasetInput, demonstrations: Iterable<Demonstration>, tokenized: Iterable<TokenizedExample & { preview: string }> = []): Promise<SftDatasetInfo> {
  const tokenizer = loadTokenizer();
  const examples: TokenizedExample[] = [];
  let tooLong = 0;
  let preview = '';
  const keep = (ex: TokenizedExample) => {
    if (ex.tokens.length > input.maxSeq) tooLong += 1;
    else examples.push(ex);
  };
  for (const ex of demonstrations) {
    preview ||= sftExampleText(ex);
    keep({ role: ex.role, ...tokenizeSegments(tokenizer, ex.segments) });
  }
  for (const { preview: text, ...ex } of tokenized) {
    preview ||= text;
    keep(ex);
  }
  const ref = await putJson(store, { examples }, 'sft-dataset');
  // Keyed by its content: a start under the id whose demonstrations came out otherwise (other code) is refused.
  const spec = {
    name: names.dataset(input.runId),
    what: `SFT dataset of workflow id '${input.runId}'`,
    madeFrom: { dataset: ref.sha256 },
    checkUnrecorded: async (held: BlobRef) => (held.sha256 === ref.sha256 ? undefined : `holds dataset ${held.sha256} (named before made-from records); this start's dataset is ${ref.sha256}`),
  };
  await refuseOtherInputs(() => namedResult(store, spec, async () => ref));
  return {
    ref,
    examples: examples.length,
    plannerExamples: examples.filter((e) => e.role === 'planner').length,
    actorExamples: examples.filter((e) => e.role === 'actor').length,
    tooLong,
    meanTokens: Math.round(examples.reduce((a, e) => a + e.tokens.length, 0) / Math.max(1, examples.length)),
    preview,
  };
}

export type DataActivities = ReturnType<typeof createDataActivities>;
