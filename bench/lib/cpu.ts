/**
 * CPU accounting for benchmarks: how many core-seconds a process has used, read from /proc (the
 * dev server and worker processes are separate processes; this one is process.cpuUsage()).
 */
import fs from 'node:fs';
import { CLOCK_TICKS_PER_SECOND, readProcStat } from '../../src/system/proc-stat';

/** CPU seconds a process has used (user + system, all its threads), from /proc; NaN once it is gone. */
export function processCpuSeconds(pid: number): number {
  const stat = readProcStat(pid);
  return stat ? (stat.utimeTicks + stat.stimeTicks) / CLOCK_TICKS_PER_SECOND : NaN;
}

/** CPU seconds this process has used (user + system, all its threads). */
export function ownCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** Busy core-seconds of the whole machine (every CPU, user + nice + system + irq + softirq + steal), from /proc/stat. */
export function machineBusySeconds(): number {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / 100;
}

/** CPU seconds a process and every process below it have used (a server's worker processes, say), from /proc. */
export function processTreeCpuSeconds(pid: number): number {
  let children: number[] = [];
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      children = children.concat(fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
    }
  } catch {
    // Gone meanwhile.
  }
  const own = processCpuSeconds(pid);
  return (Number.isNaN(own) ? 0 : own) + children.reduce((n, c) => n + processTreeCpuSeconds(c), 0);
}

/** CPU seconds each thread of a process has used, by thread id, from /proc/<pid>/task; empty once it is gone. */
export function threadCpuSeconds(pid: number): Map<number, number> {
  const threads = new Map<number, number>();
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return threads;
  }
  for (const tid of tids) {
    const stat = readProcStat(Number(tid));
    if (stat) threads.set(Number(tid), (stat.utimeTicks + stat.stimeTicks) / CLOCK_TICKS_PER_SECOND);
  }
  return threads;
}

/** A process's CPU between two snapshots of its threads: its main thread, its busiest other thread, and the rest. */
export interface ThreadSplit {
  main: number;
  busiest: number;
  rest: number;
}

export function threadSplit(pid: number, before: Map<number, number>, after: Map<number, number>): ThreadSplit {
  const used = [...after].map(([tid, s]) => [tid, s - (before.get(tid) ?? 0)] as const);
  const main = used.find(([tid]) => tid === pid)?.[1] ?? 0;
  const others = used.filter(([tid]) => tid !== pid).map(([, s]) => s);
  const busiest = others.length > 0 ? Math.max(...others) : 0;
  return { main, busiest, rest: others.reduce((a, s) => a + s, 0) - busiest };
}
