/**
 * `npm run gateway` as a user starts it (the built script, a fresh policy, a temporary store, its key
 * from VLLM_API_KEY): the per-request options reach its engine, so a forced tool call is constrained
 * and a stream arrives token by token (the script once dropped them on the way to its batcher); a
 * request without the key is refused; a server that would be open to other hosts never starts.
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
let base: string;
const KEY = 'sk-cli-test';
const SCRIPT = path.join(REPO_ROOT, 'dist', 'scripts', 'gateway.js');
/** The environment without the keys a developer's shell may hold. */
const { VLLM_API_KEY: _k, DURABLE_RL_UPSTREAM_API_KEY: _u, ...cleanEnv } = process.env;

beforeAll(async () => {
  const port = await freePort();
  const store = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-gateway-cli-'));
  child = spawn(process.execPath, [SCRIPT, '--port', String(port)], { env: { ...cleanEnv, DURABLE_RL_STORE: store, VLLM_API_KEY: KEY }, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('gateway: http://')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`gateway exited with ${code}: ${out}`)));
  });
  base = `http://127.0.0.1:${port}/v1`;
  client = new OpenAI({ apiKey: KEY, baseURL: base, maxRetries: 0 });
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

test('the key comes from VLLM_API_KEY: a request without it or with another is a 401', async () => {
  const ask = (apiKey: string) => new OpenAI({ apiKey, baseURL: base, maxRetries: 0 }).completions.create({ model: 'durable-rl', prompt: '1+2', max_tokens: 2 });
  await expect(ask('none')).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  expect((await fetch(`${base}/models`)).status).toBe(401);
  expect((await ask(KEY)).choices).toHaveLength(1);
});

/** The gateway started with these arguments and environment: its exit code and stderr (it must not start). */
function refusedStart(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [SCRIPT, '--port', '0', ...args], { env: { ...cleanEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let stdout = '';
    p.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    p.stdout!.on('data', (b: Buffer) => {
      stdout += b.toString();
      // Started after all: stop it, and let the test fail on what it printed.
      if (stdout.includes('gateway: http://')) p.kill('SIGKILL');
    });
    p.once('exit', (code) => resolve({ code, stderr: stderr + stdout }));
  });
}

test('refuses at start, naming the flag: a keyless bind beyond loopback (gateway and proxy), an empty key, an upstream key or tokenizer directory without --upstream, a tokenizer directory it cannot use', async () => {
  const upstream = ['--upstream', 'http://127.0.0.1:1/v1'];
  const cases: Array<[string[], Record<string, string>, RegExp]> = [
    [['--host', '0.0.0.0'], {}, /--host 0\.0\.0\.0 lets other hosts reach this server.*give a key with --api-key or VLLM_API_KEY/],
    [['--host', '::', ...upstream], {}, /--host :: lets other hosts reach this server/],
    [['--api-key', ''], {}, /^--api-key is empty/],
    [['--host', '0.0.0.0'], { VLLM_API_KEY: '' }, /^VLLM_API_KEY is empty/],
    [[...upstream, '--upstream-api-key', ''], {}, /^--upstream-api-key is empty/],
    [['--upstream-api-key', 'k'], {}, /--upstream-api-key is the key of the engine --upstream names/],
    [['--tokenizer-dir', REPO_ROOT], {}, /--tokenizer-dir is the tokenizer of the engine --upstream names/],
    [[...upstream, '--tokenizer-dir', path.join(REPO_ROOT, 'no-such-dir')], {}, /^--tokenizer-dir ".*no-such-dir": no such directory; token-in\/token-out needs the served model's tokenizer directory/],
    [[...upstream, '--tokenizer-dir', REPO_ROOT], {}, /^--tokenizer-dir ".*": it has no tokenizer\.json/],
  ];
  const results = await Promise.all(cases.map(([args, env]) => refusedStart(args, env)));
  results.forEach((r, i) => {
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(cases[i]![2]);
  });
}, 60_000);
