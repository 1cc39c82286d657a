/** Niceness helpers for the processes a run or benchmark starts. */
import fs from 'node:fs';
import os from 'node:os';

function checkNice(nice: number): void {
  if (!Number.isInteger(nice) || nice < 1 || nice > 19) throw new Error(`nice must be a whole number from 1 to 19, got ${nice}`);
}

/**
 * The command line that runs `binary args` under `nice -n N` (coreutils), for benchmarks that favour
 * one process (bench:async keeps the trainer's core): nice execs the binary, so the pid is the
 * program's and every thread it starts inherits the niceness, which setpriority on a running pid
 * would not give (on Linux it reaches only the one thread). N is added to this process's niceness.
 */
export function niced(nice: number | undefined, binary: string, args: string[]): [string, string[]] {
  if (!nice) return [binary, args];
  checkNice(nice);
  return ['nice', ['-n', String(nice), binary, ...args]];
}

/**
 * Lowers the CPU priority of every thread of a running process (Linux: niceness is per thread, and a
 * thread starts with its creator's, so the threads it starts later inherit it too). For a process
 * that must yield to one started before it: the main job's rollouts to its trainer (asynchronous RL,
 * docs/async-rl.md). Raising niceness needs no privilege; threads that end meanwhile are skipped.
 * Returns how many threads it reached (0 where /proc is missing).
 */
export function reniceProcess(pid: number, nice: number): number {
  checkNice(nice);
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  let reached = 0;
  for (const tid of tids) {
    try {
      // Niceness is absolute here; never lower a thread that already yields more.
      if (os.getPriority(Number(tid)) < nice) os.setPriority(Number(tid), nice);
      reached++;
    } catch {
      // The thread ended between the listing and the call.
    }
  }
  return reached;
}
