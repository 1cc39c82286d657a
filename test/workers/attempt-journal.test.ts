/**
 * The attempt journal's start-up sweep (workers/attempt-journal.ts) on what a folder can hold: only a
 * dead process's attempts for this server and namespace are failed; live processes' entries, other
 * namespaces' and unreadable files stay, and nothing in the folder stops a worker from starting.
 * The sweep failing a real attempt for its retry: test/workflows/worker-crash.test.ts.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { failOrphanedAttempts, type JournalScope } from '../../workers/attempt-journal';
import { testAddress, testEnv, type TestEnv } from '../helpers/temporal';

let ctx: TestEnv;

beforeAll(async () => {
  ctx = await testEnv('attempt-journal', []);
});

afterAll(async () => {
  await ctx?.stop();
});

/** The pid of a process that has exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '']).pid!;
}

it('fails only dead processes\' attempts for its own server and namespace, and never throws at start', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-journal-test-'));
  const scope: JournalScope = { dir, address: testAddress(), namespace: ctx.namespace };
  const dead = deadPid();
  const pidNamespace = fs.readlinkSync('/proc/self/ns/pid');
  const entry = (pid: number, over: Record<string, unknown> = {}) =>
    JSON.stringify({ host: os.hostname(), pidNamespace, pid, address: scope.address, namespace: scope.namespace, taskToken: Buffer.from('not a token').toString('base64'), activityType: 'trainGrpo', workflowId: 'w', attempt: 1, ...over });
  const files: Record<string, string> = {
    [`${dead}-half.json.tmp`]: '{"host"',
    [`${process.pid}-half.json.tmp`]: '{"host"',
    [`${process.pid}-live.json`]: entry(process.pid),
    [`${dead}-other-namespace.json`]: entry(dead, { namespace: 'someone-else' }),
    [`${dead}-other-host.json`]: entry(dead, { host: 'another-host' }),
    [`${dead}-null.json`]: 'null',
    [`${dead}-bad-token.json`]: entry(dead),
  };
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);

  const lines = await failOrphanedAttempts(ctx.env.nativeConnection, scope);

  const left = fs.readdirSync(dir).sort();
  // Gone: the dead process's half-written entry. Kept: the live process's, other namespaces' and
  // hosts', and files the sweep could not act on (for the next start, the heartbeat timeout holding).
  expect(left).toEqual([`${dead}-bad-token.json`, `${dead}-null.json`, `${dead}-other-host.json`, `${dead}-other-namespace.json`, `${process.pid}-half.json.tmp`, `${process.pid}-live.json`].sort());
  expect(lines).toHaveLength(2);
  expect(lines.every((l) => /left for the next start/.test(l))).toBe(true);
  expect(await failOrphanedAttempts(ctx.env.nativeConnection, { ...scope, dir: path.join(dir, 'absent') })).toEqual([]);
});
