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
