/**
 * The command line that runs `binary args` under `nice -n N` (coreutils), for benchmarks that favour
 * one process (bench:async keeps the trainer's core): nice execs the binary, so the pid is the
 * program's and every thread it starts inherits the niceness, which setpriority on a running pid
 * would not give (on Linux it reaches only the one thread). N is added to this process's niceness.
 */
export function niced(nice: number | undefined, binary: string, args: string[]): [string, string[]] {
  if (!nice) return [binary, args];
  if (!Number.isInteger(nice) || nice < 1 || nice > 19) throw new Error(`nice must be a whole number from 1 to 19, got ${nice}`);
  return ['nice', ['-n', String(nice), binary, ...args]];
}
