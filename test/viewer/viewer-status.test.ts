/**
 * A run's status on the viewer comes from something that knows (issue 36: every opened run was
 * badged "live", a finished one too): its workflow's status on the real dev server, else the result
 * file the main job writes when a run completes; neither: no badge. A finished run's page stops
 * asking. And the run list has no stray "null" under its table.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection, WorkflowClient } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../../scripts/lib/chromium';
import { workflowStateLookup } from '../../scripts/lib/workflow-state';
import { loadTokenizer } from '../../src/model/tokenizer';
import { createViewer } from '../../src/viewer/server';
import type { RunView } from '../../src/viewer/view-types';
import { createTestNamespace, tempStore, testAddress, uniqueId } from '../helpers/temporal';
import { writeViewerFixture } from '../helpers/viewer-fixture';

let connection: Connection;
let viewer: FastifyInstance;
let base = '';
let browser: Browser;
let page: Page;
const ids = { running: '', terminated: '', resultFile: '', unknown: '' };

beforeAll(async () => {
  const namespace = await createTestNamespace('viewer-status');
  connection = await Connection.connect({ address: testAddress() });
  const store = tempStore('viewer-status');
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-viewer-status-runs-'));
  await writeViewerFixture(store, runsDir);
  const client = new WorkflowClient({ connection, namespace });
  // Workflows on a queue no worker polls: they stay running until terminated.
  const queue = uniqueId('no-worker');
  for (const key of ['running', 'terminated', 'resultFile', 'unknown'] as const) {
    ids[key] = uniqueId(`viewer-status-${key}`);
    fs.mkdirSync(path.join(runsDir, ids[key]));
    fs.writeFileSync(path.join(runsDir, ids[key], 'metrics.jsonl'), `${JSON.stringify({ kind: 'sft-loss', step: 1, loss: 2 })}\n`);
  }
  await client.start('trainingRun', { taskQueue: queue, workflowId: ids.running, args: [{}] });
  await (await client.start('trainingRun', { taskQueue: queue, workflowId: ids.terminated, args: [{}] })).terminate('the test ends it');
  // A run the main job finished: its workflow is unknown to this namespace, its result file is there.
  fs.writeFileSync(path.join(runsDir, `${ids.resultFile}.result.json`), '{}');
  viewer = createViewer({ store, runsDir, tokenizer: loadTokenizer(), links: { namespace }, workflowState: workflowStateLookup(connection, namespace) });
  base = await viewer.listen({ host: '127.0.0.1', port: 0 });
  browser = await launchChromium();
  page = await browser.newPage();
});

afterAll(async () => {
  await browser?.close();
  await viewer?.close();
  await connection?.close();
});

async function status(id: string): Promise<RunView['status']> {
  const res = await fetch(`${base}/api/runs/${encodeURIComponent(id)}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as RunView).status;
}

/** Opens a run's page, then counts its requests for the run over three poll periods. */
async function openRun(id: string): Promise<{ badge: string | null; state: string | undefined; line: string; polls: number }> {
  let polls = 0;
  const count = (req: { url(): string }) => {
    if (req.url().includes(`/api/runs/${encodeURIComponent(id)}?`)) polls++;
  };
  await page.goto(`${base}/#/run/${encodeURIComponent(id)}`);
  await page.waitForFunction(() => {
    const g = globalThis as unknown as { location: { hash: string }; document: { getElementById(id: string): { dataset: Record<string, string> } | null } };
    return g.document.getElementById('main')?.dataset.route === g.location.hash;
  });
  polls = 0;
  page.on('request', count);
  await page.waitForTimeout(6_500);
  page.off('request', count);
  const badge = page.locator('#status');
  return {
    badge: (await badge.isVisible()) ? await badge.textContent() : null,
    state: (await page.locator('#run-status').getAttribute('data-state')) ?? undefined,
    line: (await page.locator('#run-status').textContent()) ?? '',
    polls,
  };
}

test('the API says each run’s status and where it comes from', async () => {
  expect(await status(ids.running)).toEqual({ state: 'running', from: 'workflow' });
  expect(await status(ids.terminated)).toEqual({ state: 'terminated', from: 'workflow' });
  expect(await status(ids.resultFile)).toEqual({ state: 'completed', from: 'result file' });
  expect(await status(ids.unknown)).toEqual({ state: 'unknown', from: 'none' });
});

test('a running run is badged live and followed; a finished one is badged with how it ended and asked for no more', async () => {
  const running = await openRun(ids.running);
  expect(running).toMatchObject({ badge: 'live', state: 'running' });
  expect(running.polls).toBeGreaterThanOrEqual(2);
  const terminated = await openRun(ids.terminated);
  expect(terminated).toMatchObject({ badge: 'terminated', state: 'terminated', polls: 0 });
  expect(terminated.line).toMatch(/Finished: terminated \(its workflow/);
  const completed = await openRun(ids.resultFile);
  expect(completed).toMatchObject({ badge: 'completed', state: 'completed', polls: 0 });
  // Nothing known: no badge either way, and the page keeps following in case it runs.
  const unknown = await openRun(ids.unknown);
  expect(unknown).toMatchObject({ badge: null, state: 'unknown' });
  expect(unknown.polls).toBeGreaterThanOrEqual(2);
});

test('the run list shows the runs and nothing else under its table (no stray null)', async () => {
  await page.goto(`${base}/#/`);
  await page.locator('#runs tr[data-run]').first().waitFor();
  expect(await page.locator('#runs tr[data-run]').count()).toBe(5);
  // Text nodes that read "null": what replaceChildren makes of a null child (the pager of one page).
  const nulls = await page.evaluate(() => {
    const d = (globalThis as unknown as { document: { getElementById(id: string): { childNodes: unknown } | null; createTreeWalker(root: unknown, what: number): { nextNode(): { textContent: string | null } | null } } }).document;
    const walker = d.createTreeWalker(d.getElementById('main'), 4);
    const found: string[] = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) if (n.textContent?.trim() === 'null') found.push(n.textContent);
    return found;
  });
  expect(nulls).toEqual([]);
});
