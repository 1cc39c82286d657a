/**
 * The rollout viewer's HTTP server: the page (assets/viewer) and a read-only JSON API over a runs
 * folder and a blob store. Bad query parameters are 400s naming them; a missing or corrupt blob is a
 * 502 naming the blob, which the page shows as an error panel.
 */
import fs from 'node:fs';
import path from 'node:path';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { BlobStore } from '../store/blob-store';
import type { RolloutRecord } from '../contracts/rollout-record';
import type { TextTokenizer } from '../model/tokenizer-types';
import { REPO_ROOT } from '../paths';
import { badRequest, notFound, ViewerError } from './errors';
import { checkRunId, RunData, tokenizerOf, type WorkflowStateLookup } from './run-data';
import { byEpisode, stepView, type LinkSettings } from './step-view';
import { episodeView } from './episode-view';
import { chatView } from './chat-view';
import type { ChatView } from './view-types';

export interface ViewerOptions {
  store: BlobStore;
  runsDir: string;
  tokenizer: TextTokenizer;
  links: LinkSettings;
  /** The runs' workflow states (scripts/lib/workflow-state.ts asks the Temporal server); without it, only result files tell a finished run. */
  workflowState?: WorkflowStateLookup;
}

const ASSETS = path.join(REPO_ROOT, 'assets', 'viewer');
const STATIC: Record<string, string> = {
  '/': 'index.html',
  '/app.js': 'app.js',
  '/style.css': 'style.css',
};
const CONTENT_TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

type Query = Record<string, string | string[] | undefined>;

/** Refuses query parameters the route does not take: a misspelt one would otherwise be silently ignored. */
function onlyParams(query: Query, allowed: readonly string[]): void {
  const unknown = Object.keys(query).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) throw badRequest(`unknown query parameter${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `'${k}'`).join(', ')} (this route takes ${allowed.length > 0 ? allowed.map((k) => `'${k}'`).join(', ') : 'none'})`);
}

function single(query: Query, name: string): string | undefined {
  const v = query[name];
  if (Array.isArray(v)) throw badRequest(`${name}: given ${v.length} times; give it once`);
  return v;
}

function intParam(query: Query, name: string, fallback: number, min: number, max: number): number {
  const raw = single(query, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw badRequest(`${name}: expected a whole number from ${min} to ${max}, got '${raw}'`);
  const n = Number(raw);
  if (n < min || n > max) throw badRequest(`${name}: expected a whole number from ${min} to ${max}, got ${n}`);
  return n;
}

function stepParam(raw: string): number {
  if (!/^\d{1,9}$/.test(raw)) throw badRequest(`step: expected the update's global step (a whole number), got '${raw}'`);
  return Number(raw);
}

export function createViewer(opts: ViewerOptions): FastifyInstance {
  const data = new RunData(opts.store, opts.runsDir, undefined, opts.workflowState);
  // The record names the workflow that trained (planActJob: its single-agent episodes are fallbacks).
  const linksFor = (record: RolloutRecord): LinkSettings => ({ ...opts.links, planActJob: record.workflowType === 'planActJob' });
  // Run ids are workflow ids: longer than find-my-way's default 100-character parameters.
  const app = Fastify({ logger: false, forceCloseConnections: true, routerOptions: { maxParamLength: 1000 } });
  const assets = Object.fromEntries(Object.entries(STATIC).map(([route, file]) => [route, { body: fs.readFileSync(path.join(ASSETS, file)), type: CONTENT_TYPES[path.extname(file)]! }]));

  app.setErrorHandler((err: unknown, _req, reply: FastifyReply) => {
    if (err instanceof ViewerError) return reply.status(err.status).send({ error: err.code, message: err.message });
    const status = (err as { statusCode?: number }).statusCode;
    if (status !== undefined && status >= 400 && status < 500) return reply.status(status).send({ error: 'bad-request', message: (err as Error).message });
    return reply.status(500).send({ error: 'internal', message: (err as Error).message });
  });
  // Only pages this server served may call it: a page elsewhere whose name resolves to 127.0.0.1
  // (DNS rebinding) sends its own Host header and is refused.
  app.addHook('onRequest', async (req, reply) => {
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : undefined;
    const allowed = [`127.0.0.1:${port}`, `localhost:${port}`];
    if (!allowed.includes(req.headers.host ?? '')) {
      return reply.status(403).send({ error: 'bad-request', message: `Host ${JSON.stringify(req.headers.host ?? '')} is not this viewer's (${allowed.join(' or ')})` });
    }
  });
  app.setNotFoundHandler((req, reply) => reply.status(404).send({ error: 'not-found', message: `no such page: ${req.url}` }));

  for (const [route, asset] of Object.entries(assets)) {
    app.get(route, async (_req, reply) => reply.type(asset.type).header('cache-control', 'no-cache').send(asset.body));
  }
  app.get('/api/health', async () => ({ ok: true }));

  app.get('/api/runs', async (req) => {
    const q = req.query as Query;
    onlyParams(q, ['offset', 'limit']);
    return data.listRuns(intParam(q, 'offset', 0, 0, 1e9), intParam(q, 'limit', 50, 1, 500));
  });

  app.get<{ Params: { run: string } }>('/api/runs/:run', async (req) => {
    const q = req.query as Query;
    onlyParams(q, ['offset', 'limit']);
    return data.runView(checkRunId(req.params.run), intParam(q, 'offset', 0, 0, 1e9), intParam(q, 'limit', 50, 1, 500));
  });

  app.get<{ Params: { run: string; step: string } }>('/api/runs/:run/steps/:step', async (req) => {
    const q = req.query as Query;
    onlyParams(q, ['groupOffset', 'groupLimit']);
    const runId = checkRunId(req.params.run);
    const step = stepParam(req.params.step);
    const groupOffset = intParam(q, 'groupOffset', 0, 0, 1e9);
    const groupLimit = intParam(q, 'groupLimit', 8, 1, 64);
    const record = await data.record(runId, step);
    const samples = await data.samples(record);
    const { rlStep, rlStepKnown } = await data.rlStep(runId, step);
    const line = rlStepKnown ? (await data.metrics(runId)).metrics?.rl.find((p) => p.step === rlStep) : undefined;
    const links = linksFor(record);
    return stepView(record, samples, tokenizerOf(samples, opts.tokenizer), { rlStep, groupOffset, groupLimit, links, ...(line ? { metrics: line } : {}) });
  });

  app.get<{ Params: { run: string; step: string } }>('/api/runs/:run/steps/:step/episode', async (req) => {
    const q = req.query as Query;
    onlyParams(q, ['id']);
    const runId = checkRunId(req.params.run);
    const step = stepParam(req.params.step);
    const id = single(q, 'id');
    if (!id) throw badRequest("id: give the episode's id (?id=...)");
    const record = await data.record(runId, step);
    const samples = byEpisode(await data.samples(record)).get(id);
    if (!samples) throw notFound(`step ${step} of run '${runId}' has no episode '${id}'`);
    const links = linksFor(record);
    const tok = tokenizerOf(samples, opts.tokenizer);
    // Chat samples as their conversations, from the kept episode and check they name.
    const chats = new Map<number, ChatView>();
    for (const n of samples) {
      const ref = n.sample.metadata.chat;
      if (ref === undefined) continue;
      const { kept, check } = await data.chatParts(id, ref);
      chats.set(n.index, chatView(n.sample, ref, kept, check, tok));
    }
    const view = episodeView(record, id, samples, tok, links, await data.partnerSamples(record, id), chats);
    return view.summary.shape === 'agent' ? { ...view, calls: await data.recordedCalls(id) } : view;
  });

  return app;
}
