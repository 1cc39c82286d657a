/**
 * Orchestration-queue activities that build datasets. The dataset goes to the blob store; the
 * history keeps its reference, counts and one readable example.
 */
import type { BlobRef } from '../src/domain/types';
import { putJson, type BlobStore } from '../src/store/blob-store';
import { loadTokenizer, tokenizeSegments } from '../src/model/tokenizer';
import type { RunConfig } from '../src/config/schema';
import type { SftExample as TokenizedExample } from '../src/rl/sft';
import { generateProblems, oracleSftExamples, sftExampleText } from '../src/tasks/arith';
import { names } from './names';
import { ApplicationFailure } from '@temporalio/activity';
import type { TextTokenizer } from '../src/model/tokenizer-types';
import { generateLayouts, gridSftExamples } from '../src/tasks/grid';

export interface PrepareSftDatasetInput {
  runId: string;
  seed: number;
  task: RunConfig['task'];
  maxSeq: number;
  /** task.kind grid: the plan horizons demonstrations are written for. */
  horizon?: RunConfig['horizon'];
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

export function createDataActivities({ store }: { store: BlobStore }) {
  return {
    async prepareSftDataset(input: PrepareSftDatasetInput): Promise<SftDatasetInfo> {
      const tokenizer = loadTokenizer();
      if (input.task.kind === 'grid') return prepareGridDataset(store, input, tokenizer);
      const problems = generateProblems({ seed: input.seed, count: input.task.trainProblems, split: 'train', difficulty: input.task.difficulty });
      const extra = input.task.extraDemonstrations;
      // A stream of its own, so adding extra demonstrations leaves the main ones unchanged.
      if (extra) problems.push(...generateProblems({ seed: input.seed ^ 0x0e_c7a5, count: extra.problems, split: 'train', difficulty: extra.difficulty }));
      const examples: TokenizedExample[] = [];
      let tooLong = 0;
      let preview = '';
      for (const problem of problems) {
        for (const ex of oracleSftExamples(problem, { toolUseRate: input.task.demoToolUseRate })) {
          preview ||= sftExampleText(ex);
          const { tokens, lossMask } = tokenizeSegments(tokenizer, ex.segments);
          if (tokens.length > input.maxSeq) {
            tooLong += 1;
            continue;
          }
          examples.push({ role: ex.role, tokens, lossMask });
        }
      }
      const ref = await putJson(store, { examples }, 'sft-dataset');
      await store.nameIfAbsent(names.dataset(input.runId), ref);
      return {
        ref,
        examples: examples.length,
        plannerExamples: examples.filter((e) => e.role === 'planner').length,
        actorExamples: examples.filter((e) => e.role === 'actor').length,
        tooLong,
        meanTokens: Math.round(examples.reduce((a, e) => a + e.tokens.length, 0) / Math.max(1, examples.length)),
        preview,
      };
    },
  };
}

/** Grid-world demonstrations: the oracle's plans on the training layouts, for every horizon of the pattern. */
async function prepareGridDataset(store: BlobStore, input: PrepareSftDatasetInput, tokenizer: TextTokenizer): Promise<SftDatasetInfo> {
  if (!input.task.grid || !input.horizon) throw ApplicationFailure.nonRetryable('a grid dataset needs task.grid and horizon', 'ConfigError');
  const layouts = generateLayouts({ seed: input.seed, count: input.task.trainProblems, split: 'train', shape: input.task.grid });
  const examples: TokenizedExample[] = [];
  let tooLong = 0;
  let preview = '';
  for (const layout of layouts) {
    for (const ex of gridSftExamples(layout, input.horizon.actionHorizonsPattern)) {
      preview ||= ex.segments.map((s) => s.text).join('');
      const { tokens, lossMask } = tokenizeSegments(tokenizer, ex.segments);
      if (tokens.length > input.maxSeq) {
        tooLong += 1;
        continue;
      }
      examples.push({ role: 'single', tokens, lossMask });
    }
  }
  const ref = await putJson(store, { examples }, 'sft-dataset');
  await store.nameIfAbsent(names.dataset(input.runId), ref);
  return {
    ref,
    examples: examples.length,
    plannerExamples: 0,
    actorExamples: 0,
    tooLong,
    meanTokens: Math.round(examples.reduce((a, e) => a + e.tokens.length, 0) / Math.max(1, examples.length)),
    preview,
  };
}

export type DataActivities = ReturnType<typeof createDataActivities>;
