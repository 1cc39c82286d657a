/** A gateway on a free loopback port for a test, and official `openai` clients for it. */
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { createGateway, type GatewayOptions } from '../../src/gateway/server';

export async function listenGateway(options: GatewayOptions) {
  const app = createGateway(options);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1`;
  /** A client (holding the gateway's key, if it has one); with an episode id, every call it makes is recorded under it. */
  const client = (episode?: string) => new OpenAI({ apiKey: options.apiKey ?? 'none', baseURL: base, maxRetries: 0, ...(episode ? { defaultHeaders: { 'x-episode-id': episode } } : {}) });
  return { app, base, client };
}
