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

/** The agent exited with an error or was killed (it may do better on a retry, e.g. on another worker). */
export class AgentProcessError extends Error {
  override readonly name = 'AgentProcessError';
}

/** The agent ran past rollout.agent.timeoutSec, or its command could not be started: a retry would do the same. */
export class AgentCommandError extends Error {
  override readonly name = 'AgentCommandError';
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
  if (input.signal?.aborted) return Promise.reject(new AgentProcessError('the agent was not started: its activity was cancelled'));
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd: input.cwd, env: { ...process.env, ...input.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let err = '';
    let why: { text: string; final: boolean } | undefined;
    // The agent and whatever it started (its process group).
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const kill = (reason: string, final: boolean) => {
      why ??= { text: reason, final };
      killGroup();
    };
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (text: string) => (out = (out + text).slice(-64 * 1024)));
    child.stderr.on('data', (text: string) => (err = (err + text).slice(-TAIL)));
    const beat = setInterval(() => input.onBeat?.(), 5_000);
    const timer = setTimeout(() => kill(`ran past rollout.agent.timeoutSec (${input.timeoutMs / 1000} s)`, true), input.timeoutMs);
    const onAbort = () => kill('its activity was cancelled', false);
    input.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (e) => {
      why ??= { text: `could not start ${JSON.stringify(file)}: ${e.message}`, final: true };
    });
    child.on('close', (code, sig) => {
      clearInterval(beat);
      clearTimeout(timer);
      input.signal?.removeEventListener('abort', onAbort);
      // Anything the agent left running goes with it.
      killGroup();
      const stderr = err.trim() === '' ? '' : `; its stderr ends: ${err.trim().slice(-TAIL)}`;
      if (why) return reject(why.final ? new AgentCommandError(`the agent ${why.text}${stderr}`) : new AgentProcessError(`the agent ${why.text}${stderr}`));
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
