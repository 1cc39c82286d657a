/**
 * The per-episode check: the kept ids against the tokenized full render of the same conversation
 * (verl's tokenization_sanity_check, but every difference is returned, classified and counted, and
 * nothing is shifted). Kinds:
 *  - thinking-rewrite: the template rewrote thinking in the history (Qwen3 drops earlier turns'
 *    <think> blocks, and the empty block of a non-thinking prompt): expected, the model's ids stay
 *    trained as generated;
 *  - whitespace-rewrite: the texts differ in whitespace only, around model ids (Qwen3 re-renders a parsed turn's
 *    "C\n" content before its tool call as "C\n\n<tool_call>"): expected, trained as generated;
 *  - model-tokenization: same text, but the model's ids are not the tokenizer's split of it: kept as
 *    generated (re-tokenizing is the bug this module exists to avoid);
 *  - env-tokenization: same text, environment ids tokenized differently from the full render;
 *  - text: the texts differ otherwise (a template that is not append-only, a lossy parse): the
 *    model's ids there get loss mask 0.
 */
import { diffIds, type Hunk } from './ids-diff';
import type { TokenConversation } from './token-conversation';

export type MismatchKind = 'thinking-rewrite' | 'whitespace-rewrite' | 'model-tokenization' | 'env-tokenization' | 'text';
export const MISMATCH_KINDS: readonly MismatchKind[] = ['thinking-rewrite', 'whitespace-rewrite', 'model-tokenization', 'env-tokenization', 'text'];

export interface Mismatch {
  kind: MismatchKind;
  /** [start, end) in the kept ids. */
  kept: [number, number];
  /** [start, end) in the full render's ids. */
  expected: [number, number];
  keptText: string;
  expectedText: string;
  /** How many of the kept ids there the model wrote. */
  modelIds: number;
}

export interface ConversationCheck {
  /** The tokenized full render the kept ids were compared with. */
  expected: number[];
  mismatches: Mismatch[];
  counts: Record<MismatchKind, number>;
  /** The model mask with 'text' mismatches masked out: what to train on. */
  lossMask: number[];
  /** Model-written ids masked out because they could not be aligned. */
  unalignedModelIds: number;
}

/** Common runs this short between two differences are read as part of one difference. */
const MERGE_GAP = 2;
const THINK_BLOCK = /<think>[\s\S]*?<\/think>/g;

export function checkConversation(conv: TokenConversation): ConversationCheck {
  const tok = conv.model.tokenizer;
  const endsWithModel = conv.endsWithModelTurn;
  let full = conv.render(conv.messages, !endsWithModel);
  // After a final model turn the render goes on with the template's text between turns (ChatML's "\n"), which no one generated.
  const trailing = conv.trailingText();
  if (endsWithModel && trailing !== '' && full.endsWith(trailing)) full = full.slice(0, -trailing.length);
  const expected = tok.encode(full);
  const texts = (h: Hunk): [string, string] => [tok.decode(conv.ids.slice(h.aStart, h.aEnd)), tok.decode(expected.slice(h.bStart, h.bEnd))];
  const hunks = mergeOpenThinking(mergeClose(diffIds(conv.ids, expected)), texts);
  const lossMask = [...conv.modelMask];
  const counts = Object.fromEntries(MISMATCH_KINDS.map((k) => [k, 0])) as Record<MismatchKind, number>;
  let unaligned = 0;
  const mismatches = hunks.map((h): Mismatch => {
    const [keptText, expectedText] = texts(h);
    const modelIds = conv.modelMask.slice(h.aStart, h.aEnd).reduce((a, b) => a + b, 0);
    const kind = classify(keptText, expectedText, modelIds);
    counts[kind]++;
    if (kind === 'text') {
      for (let i = h.aStart; i < h.aEnd; i++) lossMask[i] = 0;
      unaligned += modelIds;
    }
    return { kind, kept: [h.aStart, h.aEnd], expected: [h.bStart, h.bEnd], keptText, expectedText, modelIds };
  });
  return { expected, mismatches, counts, lossMask, unalignedModelIds: unaligned };
}

function classify(kept: string, expected: string, modelIds: number): MismatchKind {
  if (kept === expected) return modelIds > 0 ? 'model-tokenization' : 'env-tokenization';
  const thinking = /<\/?think>/.test(kept) || /<\/?think>/.test(expected);
  const strip = (s: string) => s.replace(THINK_BLOCK, '').replace(/\s/g, '');
  if (thinking && strip(kept) === strip(expected)) return 'thinking-rewrite';
  // Only around the model's own text: a missing newline between environment turns is a delta bug.
  return modelIds > 0 && kept.replace(/\s/g, '') === expected.replace(/\s/g, '') ? 'whitespace-rewrite' : 'text';
}

/**
 * A dropped think block can match the render by accident inside (a shared newline) and come out as
 * two differences, neither a whole block: a difference that opens a block more often than it
 * closes one takes in the next, so each block is judged whole.
 */
function mergeOpenThinking(hunks: Hunk[], texts: (h: Hunk) => [string, string]): Hunk[] {
  const opens = (s: string) => (s.match(/<think>/g)?.length ?? 0) > (s.match(/<\/think>/g)?.length ?? 0);
  const out: Hunk[] = [];
  for (const h of hunks) {
    const last = out.at(-1);
    if (last !== undefined && texts(last).some(opens)) {
      last.aEnd = h.aEnd;
      last.bEnd = h.bEnd;
    } else out.push({ ...h });
  }
  return out;
}

function mergeClose(hunks: Hunk[]): Hunk[] {
  const out: Hunk[] = [];
  for (const h of hunks) {
    const last = out.at(-1);
    if (last !== undefined && h.aStart - last.aEnd <= MERGE_GAP && h.bStart - last.bEnd <= MERGE_GAP) {
      last.aEnd = h.aEnd;
      last.bEnd = h.bEnd;
    } else out.push({ ...h });
  }
  return out;
}
