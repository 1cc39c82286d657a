/**
 * The tools workers' gateways for rollout.kind: agent: one OpenAI-compatible gateway per weight
 * version, on loopback, serving the embedded engine of those weights and recording every call that
 * names an episode in the blob store. The newest two versions are kept (as inference workers keep
 * their engines); an older one is closed once a newer one is asked for.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { WeightsInfo } from '../src/contracts/weights';
import { blobStoreRecorder } from '../src/gateway/recorder';
import { createGateway } from '../src/gateway/server';
import { loadTokenizer } from '../src/model/tokenizer';
import type { BlobStore } from '../src/store/blob-store';
import { EngineCache } from './engine-cache';

/** The model name agents ask the gateway for. */
export const AGENT_GATEWAY_MODEL = 'policy';
const KEEP_VERSIONS = 2;

interface Served {
  app: FastifyInstance;
  baseUrl: string;
}

export class AgentGateways {
  private readonly engines: EngineCache;
  private readonly gateways = new Map<string, Promise<Served>>();

  constructor(private readonly store: BlobStore) {
    this.engines = new EngineCache(store, 64);
  }

  /** The base URL of a gateway serving these weights (a model of maxSeq positions). */
  async baseUrl(weights: WeightsInfo, maxSeq: number): Promise<string> {
    const key = weights.onnx.sha256;
    let served = this.gateways.get(key);
    if (!served) {
      served = this.open(weights, maxSeq);
      served.catch(() => this.gateways.delete(key));
      this.gateways.set(key, served);
      while (this.gateways.size > KEEP_VERSIONS) {
        const oldest = this.gateways.keys().next().value as string;
        const evicted = this.gateways.get(oldest);
        this.gateways.delete(oldest);
        evicted?.then((g) => g.app.close()).catch(() => undefined);
      }
    }
    return (await served).baseUrl;
  }

  private async open(weights: WeightsInfo, maxSeq: number): Promise<Served> {
    const engine = await this.engines.get(weights);
    const tokenizer = loadTokenizer();
    const app = createGateway({ engine: { complete: (p, params, o) => engine.complete(p, params, o) }, tokenizer, model: AGENT_GATEWAY_MODEL, maxSeq, recorder: blobStoreRecorder(this.store) });
    await app.listen({ port: 0, host: '127.0.0.1' });
    // The worker keeps its process alive; a gateway left open must not keep it from exiting.
    app.server.unref();
    return { app, baseUrl: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1` };
  }
}
