/**
 * `npm run gateway` as a user starts it (the built script, a fresh policy, a temporary store): the
 * per-request options reach its engine, so a forced tool call is constrained and a stream arrives
 * token by token (the script once dropped them on the way to its batcher).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { freePort } from '../../scripts/lib/dev-server';
import { REPO_ROOT } from '../../src/paths';

let child: ChildProcess;
let client: OpenAI;

beforeAll(async () => {
  const port = await freePort();
  const store = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-gateway-cli-'));
  child = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'scripts', 'gateway.js'), '--port', String(port)], { env: { ...process.env, DURABLE_RL_STORE: store }, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('gateway: http://')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`gateway exited with ${code}: ${out}`)));
  });
  client = new OpenAI({ apiKey: 'none', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
}, 60_000);

afterAll(() => {
  child?.kill('SIGKILL');
});

test('a forced tool call is constrained to a calculator call, and a stream comes token by token', async () => {
  const tools = [{ type: 'function' as const, function: { name: 'calc', parameters: { type: 'object', properties: { expression: { type: 'string' } } } } }];
  const r = await client.chat.completions.create({ model: 'durable-rl', messages: [{ role: 'user', content: 'Evaluate: 12+30\n' }], tools, tool_choice: 'required', n: 4, seed: 2, max_tokens: 100 });
  for (const c of r.choices) expect(['tool_calls', 'length']).toContain(c.finish_reason);
  for (const c of r.choices) if (c.finish_reason === 'length') expect(c.message.content ?? '').toMatch(/^(<calc>[-+* 0-9]*)?$/);
  let deltas = 0;
  let content = '';
  for await (const chunk of await client.chat.completions.create({ model: 'durable-rl', messages: [{ role: 'user', content: 'Evaluate: 1+2\n' }], stream: true, max_tokens: 30, seed: 1 })) {
    if (chunk.choices[0]?.delta.content) {
      deltas++;
      content += chunk.choices[0].delta.content;
    }
  }
  const plain = await client.chat.completions.create({ model: 'durable-rl', messages: [{ role: 'user', content: 'Evaluate: 1+2\n' }], max_tokens: 30, seed: 1 });
  expect(content).toBe(plain.choices[0]!.message.content ?? '');
  if (content.length > 1) expect(deltas).toBeGreaterThan(1);
});
