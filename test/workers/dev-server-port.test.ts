/**
 * startDevServerOnFreePort: a port taken between the free-port answer and the server's bind costs
 * one more try on another port, not a failed suite (a bench smoke test failed this way beside experiments).
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort, startDevServerOnFreePort } from '../../scripts/lib/dev-server';

/**
 * A port another process holds. It drops every connection: the start polls the port, and a
 * connection left open would keep a gRPC connect attempt (and this test file) alive.
 */
const holder = () => net.createServer((socket) => socket.destroy());

it('starts again on another port when the first is taken before the server binds it', async () => {
  const taken = holder();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const takenPort = (taken.address() as net.AddressInfo).port;
  const logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'dev-server-port-')), 'server.log');
  const offered: number[] = [];
  // The first answer is a port another process holds, as in the race; the second a free one.
  const pickPort = async () => {
    const port = offered.length === 0 ? takenPort : await freePort();
    offered.push(port);
    return port;
  };
  try {
    const server = await startDevServerOnFreePort({ logFile, detached: false }, { pickPort });
    try {
      expect(offered).toHaveLength(2);
      expect(server.address).toBe(`127.0.0.1:${offered[1]}`);
      expect(fs.readFileSync(logFile, 'utf8')).toContain('address already in use');
    } finally {
      await server.stop();
    }
  } finally {
    taken.close();
  }
});

it('gives up after its attempts, and at once on any other failure', async () => {
  const taken = holder();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const takenPort = (taken.address() as net.AddressInfo).port;
  const logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'dev-server-port-')), 'server.log');
  let picks = 0;
  try {
    await expect(startDevServerOnFreePort({ logFile, detached: false }, { attempts: 2, pickPort: async () => (picks++, takenPort) })).rejects.toThrow(/exited/);
    expect(picks).toBe(2);
    // Not a port clash (a directory as the database file), logged after the clashes above: no second try.
    picks = 0;
    await expect(startDevServerOnFreePort({ logFile, detached: false, dbFile: os.tmpdir() }, { pickPort: async () => (picks++, freePort()) })).rejects.toThrow(/exited/);
    expect(picks).toBe(1);
  } finally {
    taken.close();
  }
});
