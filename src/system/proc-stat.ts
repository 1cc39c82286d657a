/**
 * A Linux process's /proc/<pid>/stat line, parsed. The command name (field 2) is in parentheses and
 * may itself hold spaces and parentheses, so the fields are counted after its last ')'.
 */
import fs from 'node:fs';

export interface ProcStat {
  /** Field 3: R, S, D, Z (zombie), T, ... */
  state: string;
  /** Fields 14 and 15: CPU time in user and kernel mode, in clock ticks. */
  utimeTicks: number;
  stimeTicks: number;
  /** Field 22: when the process started, in clock ticks since boot (as text: compared, never added). */
  startTicks: string;
}

/** Linux's USER_HZ, the unit of /proc's tick counts (100 on every mainstream architecture). */
export const CLOCK_TICKS_PER_SECOND = 100;

/** Parses the text of a /proc/<pid>/stat file; throws on a line that is not one. */
export function parseProcStat(text: string): ProcStat {
  const close = text.lastIndexOf(')');
  const fields = close < 0 ? [] : text.slice(close + 2).trim().split(' ');
  if (fields.length < 20) throw new Error(`not a /proc/<pid>/stat line: ${JSON.stringify(text.slice(0, 80))}`);
  return { state: fields[0]!, utimeTicks: Number(fields[11]), stimeTicks: Number(fields[12]), startTicks: fields[19]! };
}

/** The process's stat, or undefined when it is gone or unreadable. */
export function readProcStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}
