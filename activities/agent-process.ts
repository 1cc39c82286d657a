/**
 * Runs an outside agent's command for one episode: its environment says where the gateway is and what
 * the problem is, its last line of output is the result. The activity heartbeats while it runs, and a
 * cancelled or timed-out activity kills it (and whatever it started: it gets a process group).
 */
import { spawn } from 'node:child_process';
import { z } from 'zod';

/** What an agent prints last: its answer (null when it gave none) and, optionally, its calls. */
const AgentOutput = z.object({ answer: z.string().nullable(), requests: z.number().int().min(0).optional() });
export type AgentOutput = z.infer<typeof AgentOutput>;

/** The agent ran but its output is not a result: retrying the same agent would not help. */
export class AgentOutputError extends Error {
  override readonly name = 'AgentOutputError';
}

/** The agent exited with an error, was killed, or ran out of time (it may do better on a retry). */
export class AgentProcessError extends Error {
  override readonly name = 'AgentProcessError';
}

export interface AgentProcessInput {
  argv: readonly string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Called every few seconds while the agent runs (an activity heartbeat). */
  onBeat?: () => void;
}

const TAIL = 2_000;

export function runAgentProcess(input: AgentProcessInput): Promise<AgentOutput> {
  const [file, ...args] = input.argv;
  if (!file) return Promise.reject(new AgentOutputError('rollout.agent.command is empty'));
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd: input.cwd, env: { ...process.env, ...input.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let err = '';
    let why: string | undefined;
    const kill = (reason: string) => {
      why ??= reason;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    child.stdout.on('data', (b: Buffer) => (out = (out + b.toString('utf8')).slice(-64 * 1024)));
    child.stderr.on('data', (b: Buffer) => (err = (err + b.toString('utf8')).slice(-TAIL)));
    const beat = setInterval(() => input.onBeat?.(), 5_000);
    const timer = setTimeout(() => kill(`ran past rollout.agent.timeoutSec (${input.timeoutMs / 1000} s)`), input.timeoutMs);
    const onAbort = () => kill('its activity was cancelled');
    input.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (e) => {
      why ??= `could not start ${JSON.stringify(file)}: ${e.message}`;
    });
    child.on('close', (code, sig) => {
      clearInterval(beat);
      clearTimeout(timer);
      input.signal?.removeEventListener('abort', onAbort);
      const stderr = err.trim() === '' ? '' : `; its stderr ends: ${err.trim().slice(-TAIL)}`;
      if (why) return reject(new AgentProcessError(`the agent ${why}${stderr}`));
      if (code !== 0) return reject(new AgentProcessError(`the agent exited with ${code ?? sig}${stderr}`));
      const last = out.trim().split('\n').pop() ?? '';
      let parsed: unknown;
      try {
        parsed = JSON.parse(last);
      } catch {
        return reject(new AgentOutputError(`the agent's last line is not JSON: ${JSON.stringify(last.slice(0, 200))}; it must print {"answer": ...}`));
      }
      const r = AgentOutput.safeParse(parsed);
      if (!r.success) return reject(new AgentOutputError(`the agent's last line is not {"answer": string | null, "requests"?: number}: ${r.error.issues[0]!.path.join('.') || 'value'} ${r.error.issues[0]!.message}`));
      resolve(r.data);
    });
  });
}
