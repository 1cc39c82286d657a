/**
 * Parses what the planner wrote. The policy is being trained, so malformed output is expected;
 * every way of being wrong has its own code so metrics can show which mistake the policy makes.
 */
import { stripEos, type PlannedAct } from './protocol';

export type PlanParseErrorCode =
  /** Nothing but whitespace. */
  | 'empty'
  /** Text, but not a single ACT or ANSWER line. */
  | 'no-plan'
  /** A line that starts like an ACT but is not "ACT <id>: <expression>". */
  | 'bad-act'
  /** "ANSWER:" with no value, or more than one ANSWER line. */
  | 'bad-answer'
  /** An act id used twice in this turn or already used in an earlier turn. */
  | 'duplicate-act-id'
  | 'too-many-acts'
  /** ACT and ANSWER lines in the same turn. */
  | 'mixed'
  /** A non-empty line that is neither ACT nor ANSWER, next to valid ones. */
  | 'stray-text';

export class PlanParseError extends Error {
  override readonly name = 'PlanParseError';
  constructor(
    readonly code: PlanParseErrorCode,
    message: string,
    /** 1-based line of the offending text, when one line is to blame. */
    readonly line?: number,
  ) {
    super(message);
  }
}

export type ParsedPlan = { kind: 'acts'; acts: PlannedAct[] } | { kind: 'answer'; value: string };

export interface ParsePlanOptions {
  maxActs?: number;
  /** Act ids of earlier turns: reusing one would make its RESULT line ambiguous. */
  usedIds?: Iterable<string>;
}

const ACT_LINE = /^ACT (\d{1,4}): (\S(?:.*\S)?)$/;
const ANSWER_LINE = /^ANSWER: (\S(?:.*\S)?)$/;
const MAX_SHOWN = 40;

function show(text: string): string {
  return JSON.stringify(text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}...` : text);
}

export function parsePlan(text: string, opts: ParsePlanOptions = {}): ParsedPlan {
  const lines = stripEos(text)
    .split('\n')
    .map((l, i) => ({ text: l.trim(), line: i + 1 }))
    .filter((l) => l.text !== '');
  if (lines.length === 0) throw new PlanParseError('empty', 'planner output is empty');

  const acts: PlannedAct[] = [];
  const answers: string[] = [];
  const stray: Array<{ text: string; line: number }> = [];
  const seen = new Set<string>(opts.usedIds ?? []);
  for (const l of lines) {
    if (l.text.startsWith('ACT')) {
      const m = ACT_LINE.exec(l.text);
      if (!m) throw new PlanParseError('bad-act', `line ${l.line} is not "ACT <id>: <expression>": ${show(l.text)}`, l.line);
      const id = m[1]!;
      if (seen.has(id)) throw new PlanParseError('duplicate-act-id', `line ${l.line} reuses act id ${id}`, l.line);
      seen.add(id);
      acts.push({ id, expression: m[2]! });
    } else if (l.text.startsWith('ANSWER')) {
      const m = ANSWER_LINE.exec(l.text);
      if (!m) throw new PlanParseError('bad-answer', `line ${l.line} is not "ANSWER: <value>": ${show(l.text)}`, l.line);
      answers.push(m[1]!);
    } else {
      stray.push(l);
    }
  }

  if (acts.length === 0 && answers.length === 0) {
    throw new PlanParseError('no-plan', `no ACT or ANSWER line in planner output: ${show(lines[0]!.text)}`, lines[0]!.line);
  }
  if (stray.length > 0) {
    const s = stray[0]!;
    throw new PlanParseError('stray-text', `line ${s.line} is neither an ACT nor an ANSWER line: ${show(s.text)}`, s.line);
  }
  if (acts.length > 0 && answers.length > 0) {
    throw new PlanParseError('mixed', `planner output mixes ${acts.length} ACT line(s) with an ANSWER line`);
  }
  if (answers.length > 1) throw new PlanParseError('bad-answer', `planner output has ${answers.length} ANSWER lines`);
  if (answers.length === 1) return { kind: 'answer', value: answers[0]! };
  if (opts.maxActs !== undefined && acts.length > opts.maxActs) {
    throw new PlanParseError('too-many-acts', `planner output has ${acts.length} acts (at most ${opts.maxActs} per turn)`);
  }
  return { kind: 'acts', acts };
}
