/**
 * Clients that misbehave at the HTTP level, for the embedded gateway and the recording proxy alike
 * (both serve through src/gateway/http-server.ts): raw connections that stall, dribble or stay
 * silent, and oversized bodies posted by Node's fetch and the official openai client from a process
 * of their own, as agents run.
 */
import { execFile } from 'node:child_process';
import net from 'node:net';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../src/paths';

/** A raw connection to a server: what it answered and when it closed, in ms after connecting (given up after 10 s). */
export function rawConnection(port: number, script: (socket: net.Socket) => void): Promise<{ closedAfter: number; answer: string }> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let answer = '';
    const socket = net.connect(port, '127.0.0.1', () => script(socket));
    const giveUp = setTimeout(() => socket.destroy(), 10_000);
    socket.on('close', () => clearTimeout(giveUp));
    socket.on('data', (d) => (answer += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve({ closedAfter: performance.now() - t0, answer }));
  });
}

/** A connection that writes `first`, then `drip` every 100 ms until it is closed. */
export const dribbling = (port: number, first: string, drip?: string) =>
  rawConnection(port, (s) => {
    s.write(first);
    if (drip === undefined) return;
    const timer = setInterval(() => (s.writable ? s.write(drip) : undefined), 100);
    s.on('close', () => clearInterval(timer));
  });

const head = (length: number) => `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;

/**
 * Five slow clients at once: a stalled body, a body and headers dribbled, a silent connection, and
 * one silent after a response. Each should end when the server's request timeout is up.
 */
export async function slowClients(port: number) {
  const [stalled, slowBody, slowHeaders, silent, idle] = await Promise.all([
    dribbling(port, `${head(100)}{"model":`),
    dribbling(port, head(1_000), ' '),
    dribbling(port, 'POST /v1/chat/completions HTTP/1.1\r\nx-slow: ', 'a'),
    dribbling(port, ''),
    dribbling(port, 'GET /health HTTP/1.1\r\nhost: x\r\n\r\n'),
  ]);
  return { stalled, slowBody, slowHeaders, silent, idle };
}

/** A request whose body is declared `bytes` long, of which only `{` is sent. */
export const declared = (port: number, bytes: number) =>
  rawConnection(port, (s) => s.write(`${head(bytes)}{`));

/**
 * Posts an oversized chat request (one user message of `mib` MiB) from a client process of its own,
 * with Node's fetch and with the official openai client (no retries): per try, what each got.
 */
export async function oversizedFromAnotherProcess(base: string, model: string, mib: number, tries: number): Promise<Array<{ client: string; status?: number; error?: string; message?: string }>> {
  const script = `
    const OpenAI = require('openai').default;
    const [base, model, mib, tries] = [process.argv[1], process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
    const messages = [{ role: 'user', content: 'x'.repeat(mib << 20) }];
    (async () => {
      const out = [];
      for (let i = 0; i < tries; i++) {
        out.push(await fetch(base + '/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages }) })
          .then(async (r) => ({ client: 'fetch', status: r.status, message: (await r.json()).error?.message }), (e) => ({ client: 'fetch', error: String(e.cause?.code ?? e.message) })));
        out.push(await new OpenAI({ apiKey: 'none', baseURL: base, maxRetries: 0 }).chat.completions.create({ model, messages })
          .then(() => ({ client: 'openai', status: 200 }), (e) => (e instanceof OpenAI.APIConnectionError ? { client: 'openai', error: e.constructor.name + ': ' + String(e.cause?.cause?.code ?? e.cause?.message) } : { client: 'openai', status: e.status, message: e.message })));
      }
      console.log(JSON.stringify(out));
    })();`;
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', script, base, model, String(mib), String(tries)], { cwd: REPO_ROOT, maxBuffer: 1 << 20 });
  return JSON.parse(stdout) as Array<{ client: string; status?: number; error?: string; message?: string }>;
}

/** A chunked (no content-length) JSON body of a chat with one user message of `bytes` characters. */
export function chunkedChat(model: string, bytes: number): ReadableStream<Uint8Array> {
  const data = new TextEncoder().encode(JSON.stringify({ model, messages: [{ role: 'user', content: 'x'.repeat(bytes) }] }));
  return new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < data.length; i += 64 << 10) c.enqueue(data.subarray(i, i + (64 << 10)));
      c.close();
    },
  });
}
