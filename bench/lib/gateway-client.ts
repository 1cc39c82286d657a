/**
 * One client process of `npm run bench:gateway` (bench/gateway.ts forks several from dist/, so the
 * clients' HTTP and JSON work runs outside the gateway's process, as real agents' does). It waits for
 * orders over Node's IPC channel (bench/lib/load.ts's ToClient): run a number of closed-loop chat
 * clients with the official `openai` client in a given window and send back their latencies, or send
 * one big /v1/completions request and say when it ended. It exits when the bench disconnects.
 */
import OpenAI from 'openai';
import { closedLoop, LoadStop, nowMs, smallChat, type FromClient, type ToClient } from './load';

function tell(msg: FromClient): void {
  process.send?.(msg);
}

function clientFor(baseURL: string): OpenAI {
  // No retries: a failed request counts as failed. Node's fetch keeps connections alive.
  return new OpenAI({ apiKey: 'none', baseURL, maxRetries: 0, timeout: 600_000 });
}

let stop = new LoadStop();
let big: AbortController | undefined;

async function chat(msg: Extract<ToClient, { kind: 'chat' }>): Promise<void> {
  const cpu = process.cpuUsage();
  const client = clientFor(msg.baseURL);
  stop = new LoadStop();
  const result = await closedLoop(
    async (i) => {
      const r = await client.chat.completions.create({ model: msg.model, messages: smallChat(i), max_tokens: msg.maxTokens, temperature: 1, seed: i });
      return r.usage?.completion_tokens ?? 0;
    },
    msg.clients,
    msg.window,
    msg.firstIndex,
    stop,
  );
  const used = process.cpuUsage(cpu);
  tell({ kind: 'result', result, cpuMs: (used.user + used.system) / 1000 });
}

async function bigRequest(msg: Extract<ToClient, { kind: 'big' }>): Promise<void> {
  const ctl = new AbortController();
  big = ctl;
  const t0 = nowMs();
  try {
    const r = await clientFor(msg.baseURL).completions.create({ model: msg.model, prompt: msg.prompts, max_tokens: msg.maxTokens, temperature: 1, seed: 1 }, { signal: ctl.signal });
    tell({ kind: 'big-done', ok: true, aborted: false, seconds: (nowMs() - t0) / 1000, choices: r.choices.length });
  } catch (err) {
    tell({ kind: 'big-done', ok: false, aborted: ctl.signal.aborted, seconds: (nowMs() - t0) / 1000, choices: 0, error: err instanceof Error ? err.message : String(err) });
  }
}

if (!process.send) {
  console.error('bench/lib/gateway-client.js is a client process of bench/gateway.js, which starts it; run `npm run bench:gateway`');
  process.exit(2);
}
process.on('message', (raw) => {
  const msg = raw as ToClient;
  switch (msg.kind) {
    case 'chat':
      void chat(msg);
      break;
    case 'stop':
      stop.at = Math.min(stop.at, msg.at);
      break;
    case 'big':
      void bigRequest(msg);
      break;
    case 'abort':
      big?.abort();
      break;
  }
});
process.on('disconnect', () => process.exit(0));
tell({ kind: 'ready' });
