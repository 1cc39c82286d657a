/**
 * SIGINT (Ctrl-C) and SIGTERM as a request to stop cleanly: the first resolves `received` (the main
 * job then drains its workers and leaves the run on the server for --resume); a second one, while
 * that is under way, exits at once. The Temporal Runtime must not listen too (Runtime.install with
 * shutdownSignals: []): it would shut the workers down and leave the process waiting on a run that
 * no worker serves.
 */
import os from 'node:os';

export const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

export interface StopSignals {
  /** The first signal. */
  received: Promise<StopSignal>;
  /** The first signal, once there was one. */
  signal(): StopSignal | undefined;
}

/** The shell's convention for a process ended by a signal: 128 + its number (130 for SIGINT, 143 for SIGTERM). */
export function signalExitCode(signal: StopSignal): number {
  return 128 + os.constants.signals[signal];
}

export function listenForStopSignals(onSecond: (signal: StopSignal) => void = (s) => process.exit(signalExitCode(s))): StopSignals {
  let first: StopSignal | undefined;
  let resolve!: (s: StopSignal) => void;
  const received = new Promise<StopSignal>((r) => (resolve = r));
  for (const signal of STOP_SIGNALS) {
    process.on(signal, () => {
      if (first === undefined) {
        first = signal;
        resolve(signal);
      } else {
        onSecond(signal);
      }
    });
  }
  return { received, signal: () => first };
}
