/**
 * The tools workers' recording proxies for rollout.kind: agent on a remote server (inference.engine
 * openai): one recording proxy (src/gateway/upstream-proxy.ts) per upstream base URL, on loopback,
 * recording every call that names an episode in the blob store, as the worker's gateways do on the
 * embedded engine (agent-gateways.ts). Each requires the worker's own random API key, which only the
 * agents it starts are given; the upstream gets DURABLE_RL_OPENAI_API_KEY, the key inference workers
 * send the same server, or no Authorization at all. Given the served model's tokenizer directory, a
 * proxy keeps each recorded chat conversation token-in/token-out (src/gateway/upstream-tito.ts).
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { blobStoreRecorder } from '../src/gateway/recorder';
import { createRecordingProxy } from '../src/gateway/upstream-proxy';
import { loadTokenInTokenOut } from '../src/gateway/upstream-tito';
import type { BlobStore } from '../src/store/blob-store';

/** The key a remote server's clients send it (activities/inference.ts sends the same). */
export const UPSTREAM_API_KEY_ENV = 'DURABLE_RL_OPENAI_API_KEY';

export class AgentProxies {
  private readonly proxies = new Map<string, Promise<{ app: FastifyInstance; baseUrl: string }>>();
  /** The key every proxy of this worker requires; agents get it (OPENAI_API_KEY). */
  readonly apiKey = randomBytes(32).toString('base64url');

  constructor(private readonly store: BlobStore) {}

  /**
   * The base URL of this worker's recording proxy in front of `upstream` (an OpenAI base URL), opened
   * on first use; with `tokenizerDir` (the served model's tokenizer directory) it keeps conversations
   * token-in/token-out, and a directory it cannot use is refused by name.
   */
  baseUrl(upstream: string, tokenizerDir?: string): Promise<string> {
    const key = JSON.stringify([upstream, tokenizerDir ?? null]);
    let proxy = this.proxies.get(key);
    if (!proxy) {
      proxy = this.open(upstream, tokenizerDir);
      proxy.catch(() => this.proxies.delete(key));
      this.proxies.set(key, proxy);
    }
    return proxy.then((p) => p.baseUrl);
  }

  /** Closes every proxy (a worker's shutdown, and tests). */
  async close(): Promise<void> {
    const open = [...this.proxies.values()];
    this.proxies.clear();
    await Promise.all(open.map((p) => p.then((x) => x.app.close(), () => undefined)));
  }

  private async open(upstream: string, tokenizerDir: string | undefined): Promise<{ app: FastifyInstance; baseUrl: string }> {
    const upstreamApiKey = process.env[UPSTREAM_API_KEY_ENV];
    const app = createRecordingProxy({
      upstream,
      recorder: blobStoreRecorder(this.store),
      apiKey: this.apiKey,
      ...(upstreamApiKey !== undefined && upstreamApiKey !== '' ? { upstreamApiKey } : {}),
      ...(tokenizerDir !== undefined ? { tokenInTokenOut: loadTokenInTokenOut(tokenizerDir, 'the tokenizer directory') } : {}),
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    // The worker keeps its process alive; a proxy left open must not keep it from exiting.
    app.server.unref();
    return { app, baseUrl: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1` };
  }
}
