/**
 * The tools workers' gateways for rollout.kind: agent: one OpenAI-compatible gateway per weight
 * version, on loopback, serving the embedded engine of those weights and recording every call that
 * names an episode in the blob store. The newest two versions are kept (as inference workers keep
 * their engines); an older one is closed once a newer one is asked for and no episode uses it any
 * more (asynchronous RL plays episodes of several versions at once). Each requires the worker's own
 * random API key, which only the agents it starts are given: another process on the machine cannot
 * write training data through them.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { WeightsInfo } from '../src/contracts/weights';
import { blobStoreRecorder } from '../src/gateway/recorder';
import { createGateway } from '../src/gateway/server';
import { weightsKey } from '../src/model/hf-checkpoint';
import { loadTokenizer } from '../src/model/tokenizer';
import type { BlobStore } from '../src/store/blob-store';
import type { BatchingEngine } from '../src/engine/batcher';
import { loadBatchingEngine } from './engine-cache';

/** The model name agents ask the gateway for. */
export const AGENT_GATEWAY_MODEL = 'policy';
/** Versions kept open: asynchronous RL (rl.async.maxStaleness ≤ 3) plays up to four at once. */
const KEEP_VERSIONS = 4;

interface Served {
  app: FastifyInstance;
  engine: BatchingEngine;
  baseUrl: string;
}

interface Entry {
  version: number;
  served: Promise<Served>;
  /** Episodes playing against it now. */
  users: number;
  evicted: boolean;
}

export class AgentGateways {
  private readonly gateways = new Map<string, Entry>();
  /** The key every gateway of this worker requires; agents get it (OPENAI_API_KEY). */
  readonly apiKey = randomBytes(32).toString('base64url');

  constructor(private readonly store: BlobStore) {}

  /** Runs `use` with the base URL of a gateway serving these weights (a model of maxSeq positions), and the key it requires. */
  async with<T>(weights: WeightsInfo, maxSeq: number, use: (baseUrl: string, apiKey: string) => Promise<T>): Promise<T> {
    const key = weightsKey(weights);
    let entry = this.gateways.get(key);
    if (!entry) {
      const opened: Entry = { version: weights.version, served: this.open(weights, maxSeq), users: 0, evicted: false };
      opened.served.catch(() => this.gateways.delete(key));
      this.gateways.set(key, opened);
      entry = opened;
      // The oldest versions go first (not the first opened: a version may be reopened later).
      const live = [...this.gateways.values()].filter((e) => !e.evicted).sort((a, b) => a.version - b.version);
      for (const old of live.slice(0, Math.max(0, live.length - KEEP_VERSIONS))) {
        old.evicted = true;
        this.closeIfUnused(old);
      }
    }
    entry.users++;
    try {
      return await use((await entry.served).baseUrl, this.apiKey);
    } finally {
      entry.users--;
      this.closeIfUnused(entry);
    }
  }

  private closeIfUnused(entry: Entry): void {
    if (!entry.evicted || entry.users > 0) return;
    for (const [k, e] of this.gateways) if (e === entry) this.gateways.delete(k);
    entry.served
      .then(async (g) => {
        await g.app.close();
        await g.engine.release();
      })
      .catch(() => undefined);
  }

  private async open(weights: WeightsInfo, maxSeq: number): Promise<Served> {
    const engine = await loadBatchingEngine(this.store, weights, 64);
    const tokenizer = loadTokenizer();
    const app = createGateway({ engine, tokenizer, model: AGENT_GATEWAY_MODEL, maxSeq, recorder: blobStoreRecorder(this.store), apiKey: this.apiKey });
    try {
      await app.listen({ port: 0, host: '127.0.0.1' });
    } catch (err) {
      await engine.release();
      throw err;
    }
    // The worker keeps its process alive; a gateway left open must not keep it from exiting.
    app.server.unref();
    return { app, engine, baseUrl: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1` };
  }
}
