/**
 * The main job's progress: a bar redrawn in place on a terminal; elsewhere (a log file, a pipe, CI)
 * plain lines, one when the phase changes and otherwise at most one every PLAIN_EVERY_MS while the
 * text changes, never the same line twice. Messages (the server is unreachable, a signal) go above
 * the bar, or between the lines.
 */
import cliProgress from 'cli-progress';
import type { RunProgress } from '../../src/contracts/training-run';

export interface ProgressDisplay {
  update(p: RunProgress): void;
  /** A line of its own, the bar kept below it. */
  log(line: string): void;
  /** Ends the bar (a last plain line if the state changed since the last one); idempotent. */
  stop(): void;
}

/** Off a terminal, a changed state within one phase is printed at most this often. */
export const PLAIN_EVERY_MS = 30_000;

/** The fields of the progress text, for the bar's format and the plain line alike. */
function progressFields(p: RunProgress): { phase: string; loss: string; rlText: string; evalText: string } {
  /** Asynchronous RL: the last step's staleness (versions: samples) and how idle trainer and inference were. */
  const scheduleText = (s: NonNullable<RunProgress['lastSchedule']>): string =>
    `stale {${Object.entries(s.staleness).map(([k, n]) => `${k}:${n}`).join(' ')}} idle trainer ${pct(s.trainerIdle)} inference ${pct(s.inferenceIdle)}${s.droppedStale > 0 ? ` dropped ${s.droppedStale}` : ''}${s.partial ? ` partial ${s.partial}` : ''}`;
  return {
    phase: p.phase,
    loss: p.lastLoss === undefined ? '-' : p.lastLoss.toFixed(3),
    rlText: p.rlStep !== undefined ? `rl ${p.rlStep}: reward ${p.lastReward?.toFixed(2)} acc ${pct(p.lastAccuracy ?? 0)}${p.lastSchedule ? ` ${scheduleText(p.lastSchedule)}` : ''} | ` : '',
    evalText: p.lastRlEval
      ? `rl@${p.lastRlEval.step}: greedy ${pct(p.lastRlEval.greedy.accuracy)}${p.lastRlEval.sampled ? ` sampled ${pct(p.lastRlEval.sampled.accuracy)}` : ''}`
      : p.lastEval
        ? `@${p.lastEval.step}: planner ${pct(p.lastEval.plannerAccuracy)} actor ${pct(p.lastEval.actorAccuracy)} episode ${pct(p.lastEval.episodeAccuracy)}`
        : '-',
  };
}

/** The progress as one plain line (what the bar shows, without the bar). */
export function progressLine(p: RunProgress): string {
  const f = progressFields(p);
  return `trainingRun ${p.step}/${p.totalSteps} steps | ${f.phase} | loss ${f.loss} | ${f.rlText}eval ${f.evalText}`;
}

/** Plain progress lines: on a phase change, else a changed line at most every `everyMs`; never a repeat. */
export class PlainProgress implements ProgressDisplay {
  private printed: { line: string; phase: string; at: number } | undefined;
  private latest: { line: string; phase: string } | undefined;
  private stopped = false;

  constructor(
    private readonly write: (line: string) => void,
    private readonly now: () => number = Date.now,
    private readonly everyMs: number = PLAIN_EVERY_MS,
  ) {}

  update(p: RunProgress): void {
    if (this.stopped) return;
    this.latest = { line: progressLine(p), phase: p.phase };
    const last = this.printed;
    if (!last || last.phase !== p.phase || (last.line !== this.latest.line && this.now() - last.at >= this.everyMs)) this.print();
  }

  log(line: string): void {
    this.write(line);
  }

  stop(): void {
    if (this.stopped) return;
    if (this.latest && this.latest.line !== this.printed?.line) this.print();
    this.stopped = true;
  }

  private print(): void {
    const { line, phase } = this.latest!;
    this.write(line);
    this.printed = { line, phase, at: this.now() };
  }
}

/** A bar redrawn in place (cli-progress); messages are printed above it. */
class TerminalProgress implements ProgressDisplay {
  private readonly bars = new cliProgress.MultiBar(
    { format: 'trainingRun [{bar}] {value}/{total} steps | {phase} | loss {loss} | {rlText}eval {evalText}', hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  private bar: cliProgress.SingleBar | undefined;
  private stopped = false;

  update(p: RunProgress): void {
    if (this.stopped) return;
    const payload = progressFields(p);
    if (!this.bar) {
      this.bar = this.bars.create(p.totalSteps, p.step, payload);
      return;
    }
    // The total is known only once the run has its starting checkpoint (init.fromRun counts on from its step).
    if (this.bar.getTotal() !== p.totalSteps) this.bar.setTotal(p.totalSteps);
    this.bar.update(p.step, payload);
  }

  log(line: string): void {
    if (this.bar && !this.stopped) this.bars.log(`${line}\n`);
    else console.log(line);
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.bars.stop();
  }
}

/** The display for `stream` (process.stdout): a bar on a terminal, plain lines elsewhere. */
export function progressDisplay(stream: NodeJS.WriteStream = process.stdout): ProgressDisplay {
  return stream.isTTY ? new TerminalProgress() : new PlainProgress((line) => stream.write(`${line}\n`));
}

/**
 * Polls `poll` once a second into `display` until the returned function is called. The query
 * fails until the workflow's first task has run, and while the server is away: tried again.
 * Stopping with `lastPoll` polls once more first, so the last line shows where an ended run
 * ended (it can finish its last steps between two polls); that poll failing leaves the display as
 * it was. Without it (a signal, a stuck run) the display stops at once.
 */
export function followProgress(poll: () => Promise<RunProgress>, display: ProgressDisplay): (lastPoll?: boolean) => Promise<void> {
  let stopped = false;
  let inFlight = false;
  const timer = setInterval(() => {
    if (inFlight) return;
    inFlight = true;
    poll()
      .then((p) => {
        if (!stopped) display.update(p);
      }, () => undefined)
      .finally(() => (inFlight = false));
  }, 1000);
  return async (lastPoll = false) => {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    const last = lastPoll ? await poll().catch(() => undefined) : undefined;
    if (last) display.update(last);
    display.stop();
  };
}

function pct(x: number | undefined): string {
  if (x === undefined) return '–';
  return `${(100 * x).toFixed(0)}%`;
}
