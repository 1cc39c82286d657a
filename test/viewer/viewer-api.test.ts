/**
 * The viewer's JSON API over a store written by the real trainer code path (rollout records as
 * trainGrpo writes them): paging, typed 400s for bad parameters, 404s, and a missing or corrupt
 * blob answered as a 502 that names it, while other requests keep being served.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { loadTokenizer } from '../../src/model/tokenizer';
import { createViewer } from '../../src/viewer/server';
import { checkRunId, rlStepOf } from '../../src/viewer/run-data';
import type { StepView, EpisodeView, RunView } from '../../src/viewer/view-types';
import { tempStore } from '../helpers/store';
import { FIXTURE_RUN, writeViewerFixture } from '../helpers/viewer-fixture';

const tok = loadTokenizer();
const RUN = FIXTURE_RUN;

let app: FastifyInstance;
let base = '';
let store: ReturnType<typeof tempStore>;
let runsDir: string;
let setSha = '';

beforeAll(async () => {
  store = tempStore('viewer-api');
  runsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-viewer-runs-'));
  setSha = await writeViewerFixture(store, runsDir);
  app = createViewer({ store, runsDir, tokenizer: tok, links: { uiUrl: 'http://localhost:8233', namespace: 'default' } });
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app?.close();
});

const getFrom = async (root: string, url: string) => {
  const res = await fetch(root + url);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const get = (url: string) => getFrom(base, url);

test('lists runs and a run\'s recorded steps, numbered from the step RL started at and joined with the metrics file', async () => {
  const runs = await get('/api/runs');
  expect(runs.body).toMatchObject({ runs: [{ id: RUN }], page: { total: 1 } });
  const run = (await get(`/api/runs/${RUN}`)).body as unknown as RunView;
  // RL started at global step 100: the records at 101 and 103 are RL steps 1 and 3, not 1 and 2.
  expect(run.steps.map((s) => [s.step, s.rlStep, s.metrics?.meanReward])).toEqual([[101, 1, 0.5], [103, 3, undefined]]);
  const paged = (await get(`/api/runs/${RUN}?offset=1&limit=1`)).body as unknown as RunView;
  expect(paged.steps.map((s) => s.step)).toEqual([103]);
  expect(paged.page).toEqual({ offset: 1, limit: 1, total: 2 });
});

test('a step shows its groups with each episode\'s reward, advantage, tool calls, versions and staleness; groups page', async () => {
  const step = (await get(`/api/runs/${RUN}/steps/101`)).body as unknown as StepView;
  expect(step.groups.map((g) => g.groupId)).toEqual(['r1-p0', 'r1-p1']);
  const [first, second] = step.groups[0]!.episodes;
  expect(first).toMatchObject({ reward: 1, advantage: 0.7071, toolCalls: 1, weightVersions: [3], staleness: 0, shape: 'standard', workflowId: `${RUN}/standard-rollout-1` });
  expect(first!.trainedTokens).toBeLessThan(first!.responseTokens);
  expect(second).toMatchObject({ reward: 0, advantage: -0.7071, toolCalls: 0, weightVersions: [2], staleness: 1 });
  expect(first!.workflowUrl).toBe(`http://localhost:8233/namespaces/default/workflows/${encodeURIComponent(`${RUN}/standard-rollout-1`)}`);
  const page2 = (await get(`/api/runs/${RUN}/steps/101?groupOffset=1&groupLimit=1`)).body as unknown as StepView;
  expect(page2.groups.map((g) => g.groupId)).toEqual(['r1-p1']);
  expect(page2.page).toEqual({ offset: 1, limit: 1, total: 2 });
});

test('an episode\'s tokens carry their text, logprob, mask and the environment text is marked', async () => {
  const ep = (await get(`/api/runs/${RUN}/steps/101/episode?id=${encodeURIComponent(`${RUN}/r1/single-0`)}`)).body as unknown as EpisodeView;
  const [s] = ep.samples;
  expect(s!.response.map((p) => p.t).join('')).toBe('<calc>17+25</calc>\n<result>42</result>\n');
  expect(s!.prompt.map((p) => p.t).join('')).toBe('Compute: 17+25\n');
  expect(s!.response[0]).toMatchObject({ m: 1, lp: -0.1 });
  expect(s!.response[s!.response.length - 1]).toMatchObject({ m: 0, lp: 0 });
});

test.each([
  ['/api/runs?limit=abc', /limit: expected a whole number from 1 to 500, got 'abc'/],
  ['/api/runs?limit=0', /limit: expected a whole number from 1 to 500, got 0/],
  ['/api/runs?limt=5', /unknown query parameter 'limt'/],
  ['/api/runs?offset=1&offset=2', /offset: given 2 times/],
  [`/api/runs/${RUN}/steps/abc`, /step: expected the update's global step/],
  [`/api/runs/${RUN}/steps/101?groupLimit=1000`, /groupLimit: expected a whole number from 1 to 64/],
  [`/api/runs/${RUN}/steps/101/episode`, /id: give the episode's id/],
  [`/api/runs/${'x'.repeat(301)}`, /run: expected a run \(workflow\) id of 1-300 characters, got 301/],
])('%s is a 400 naming the parameter', async (url, message) => {
  const res = await get(url);
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ error: 'bad-request', message: expect.stringMatching(message) });
});

test('a run without a saved RL start (a Plan/Act job) numbers its updates in order', () => {
  expect([101, 103].map((step, i) => rlStepOf(step, i, undefined))).toEqual([1, 2]);
  expect([101, 103].map((step, i) => rlStepOf(step, i, 100))).toEqual([1, 3]);
});

test("a request naming another host is refused (a rebound DNS name reaching the loopback viewer)", async () => {
  const port = Number(new URL(base).port);
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/api/runs', headers: { host: `attacker.example:${port}` } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
  });
  expect(status).toBe(403);
  expect((await get('/api/runs')).status).toBe(200);
});

test("a run id that would climb out of the runs folder is refused (browsers normalise '..' in paths before asking)", () => {
  expect(() => checkRunId('..')).toThrow(/run: '\.\.' is not a run id/);
  expect(checkRunId('a/b')).toBe('a/b');
});

test('unknown runs, steps and episodes are 404s', async () => {
  expect(await get('/api/runs/no-such-run')).toMatchObject({ status: 404, body: { error: 'not-found' } });
  expect(await get(`/api/runs/${RUN}/steps/7`)).toMatchObject({ status: 404, body: { message: expect.stringMatching(/no rollout record at step 7/) } });
  expect(await get(`/api/runs/${RUN}/steps/101/episode?id=nope`)).toMatchObject({ status: 404, body: { message: expect.stringMatching(/no episode 'nope'/) } });
});

test('a corrupt or missing sample blob is a 502 naming it; other requests are still served', async () => {
  const file = path.join(store.root, 'blobs', setSha.slice(0, 2), setSha.slice(2));
  const good = fs.readFileSync(file);
  // A fresh viewer: the first one has the set cached (blobs never change once written).
  const fresh = createViewer({ store, runsDir, tokenizer: tok, links: { namespace: 'default' } });
  const root = await fresh.listen({ host: '127.0.0.1', port: 0 });
  try {
    fs.writeFileSync(file, Buffer.from('{"samples": []}'));
    expect(await getFrom(root, `/api/runs/${RUN}/steps/103`)).toMatchObject({ status: 502, body: { error: 'blob-corrupt', message: expect.stringContaining(setSha) } });
    fs.rmSync(file);
    expect(await getFrom(root, `/api/runs/${RUN}/steps/103`)).toMatchObject({ status: 502, body: { error: 'blob-missing', message: expect.stringContaining(setSha) } });
    expect((await getFrom(root, `/api/runs/${RUN}`)).status).toBe(200);
  } finally {
    fs.writeFileSync(file, good);
    await fresh.close();
  }
});

test('an unreadable metrics file is reported on the run, and its recorded steps still list', async () => {
  const file = path.join(runsDir, RUN, 'metrics.jsonl');
  const good = fs.readFileSync(file);
  try {
    fs.writeFileSync(file, '{"kind":"rl","step":"one"}\n');
    const run = (await get(`/api/runs/${RUN}`)).body as unknown as RunView;
    expect(run.metricsError).toMatch(/line 1/);
    expect(run.steps).toHaveLength(2);
  } finally {
    fs.writeFileSync(file, good);
  }
});
