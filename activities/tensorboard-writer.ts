/**
 * The TensorBoard writer process an orchestration worker keeps (scripts/python/tensorboard_writer.py,
 * TensorBoard's own record writer, in TensorBoard's environment from scripts/setup-python.sh): started
 * by the first request and kept, so Python and its imports are paid once, not per RL step. One JSON
 * request per line, answered in order. A process that dies or hangs fails the requests it held (their
 * activities are retried) and the next request starts another. It never holds the worker's process
 * open: idle, its pipes are unreferenced, and it exits when the worker's end of its stdin closes.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { REPO_ROOT, tensorboardEnvDir } from '../src/paths';
import type { TensorboardPoint } from '../src/tracking/tensorboard';

export const TENSORBOARD_WRITER_SCRIPT = path.join(REPO_ROOT, 'scripts', 'python', 'tensorboard_writer.py');

/** The environment is missing (scripts/setup.sh builds it) or the process failed: a retry on a worker that has it may do better. */
export class TensorboardWriterError extends Error {
  override readonly name = 'TensorboardWriterError';
}

interface Answer {
  id: number;
  ok: boolean;
  error?: string;
  written?: number;
  skipped?: number;
}

/** TensorBoard environment's python; throws, naming the setup script, when it was not built. */
export function tensorboardPython(): string {
  const dir = tensorboardEnvDir();
  if (!fs.existsSync(path.join(dir, '.complete'))) throw new TensorboardWriterError(`no TensorBoard environment at ${dir}; run scripts/setup.sh (scripts/setup-python.sh builds it once)`);
  return path.join(dir, 'bin', 'python');
}

export class TensorboardWriter {
  private child?: ChildProcessWithoutNullStreams;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (a: Answer) => void; reject: (e: Error) => void }>();

  constructor(private readonly timeoutMs = 30_000) {}

  /** The run's folder checked writable by the writer itself (its lock and state files made). */
  async open(runDir: string): Promise<void> {
    await this.request({ op: 'open', runDir });
  }

  /** Appends the points beyond what the run's event file holds; how many were written and skipped. */
  async write(runDir: string, points: TensorboardPoint[]): Promise<{ written: number; skipped: number }> {
    const a = await this.request({ op: 'write', runDir, points });
    return { written: a.written ?? 0, skipped: a.skipped ?? 0 };
  }

  /** Ends the process (tests; a worker's ends with it). */
  close(): void {
    this.child?.kill('SIGTERM');
    this.child = undefined;
  }

  private request(body: Record<string, unknown>): Promise<Answer> {
    const child = this.process();
    const id = this.nextId++;
    return new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => {
        // Hung: killed, which fails whatever else it held too.
        child.kill('SIGKILL');
        reject(new TensorboardWriterError(`the TensorBoard writer did not answer within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.waiting.delete(id);
        if (this.waiting.size === 0) this.refPipes(false);
      };
      this.waiting.set(id, {
        resolve: (a) => {
          done();
          if (a.ok) resolve(a);
          else reject(new TensorboardWriterError(a.error ?? 'the TensorBoard writer failed'));
        },
        reject: (e) => {
          done();
          reject(e);
        },
      });
      this.refPipes(true);
      child.stdin.write(`${JSON.stringify({ id, ...body })}\n`);
    });
  }

  private process(): ChildProcessWithoutNullStreams {
    if (this.child) return this.child;
    const child = spawn(tensorboardPython(), ['-u', TENSORBOARD_WRITER_SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString()).slice(-2_000)));
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      let a: Answer;
      try {
        a = JSON.parse(line) as Answer;
      } catch {
        return;
      }
      this.waiting.get(a.id)?.resolve(a);
    });
    // A write to a process that died is answered by its exit below.
    child.stdin.on('error', () => undefined);
    const fail = (why: string) => {
      if (this.child === child) this.child = undefined;
      for (const w of [...this.waiting.values()]) w.reject(new TensorboardWriterError(`the TensorBoard writer ${why}${stderr ? `: ${stderr.trim()}` : ''}`));
    };
    child.on('error', (err) => fail(`could not start (${err.message})`));
    child.on('exit', (code, signal) => fail(`exited (${signal ?? code})`));
    this.refPipes(false);
    return child;
  }

  /** Pipes keep Node's event loop alive: only while a request waits for its answer. */
  private refPipes(on: boolean): void {
    const c = this.child;
    if (!c) return;
    for (const s of [c.stdin, c.stdout, c.stderr] as unknown as Array<{ ref?: () => void; unref?: () => void }>) (on ? s.ref : s.unref)?.call(s);
    if (on) c.ref();
    else c.unref();
  }
}
