/**
 * `nice` for benchmark processes (bench:async favours the trainer): every thread of the started
 * program runs at the niceness, not only its first (setpriority on a pid reaches one thread on Linux).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDevServerOnFreePort } from '../../scripts/lib/dev-server';
import { niced } from '../../scripts/lib/niced';

/** Niceness of every thread of a process, from /proc (field 19 of stat). */
function threadNiceness(pid: number): number[] {
  return fs.readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[16]);
  });
}

it('starts the dev server with every thread niced by the amount asked for', async () => {
  const logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'niced-server-')), 'server.log');
  const server = await startDevServerOnFreePort({ logFile, detached: false, nice: 7 });
  try {
    const nices = threadNiceness(server.pid);
    expect(nices.length).toBeGreaterThan(1);
    // nice adds to the niceness this test runs at.
    expect(new Set(nices)).toEqual(new Set([Math.min(19, os.getPriority() + 7)]));
  } finally {
    await server.stop();
  }
}, 90_000);

it('leaves the command as it is without a niceness, and refuses one outside 1-19', () => {
  expect(niced(undefined, '/bin/x', ['a'])).toEqual(['/bin/x', ['a']]);
  expect(niced(0, '/bin/x', ['a'])).toEqual(['/bin/x', ['a']]);
  expect(niced(5, '/bin/x', ['a'])).toEqual(['nice', ['-n', '5', '/bin/x', 'a']]);
  expect(() => niced(20, '/bin/x', [])).toThrow(/1 to 19, got 20/);
  expect(() => niced(2.5, '/bin/x', [])).toThrow(/1 to 19/);
});
