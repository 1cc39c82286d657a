/**
 * The rollout viewer in a real browser (Debian's chromium driven by playwright-core) over runs made
 * here on the real dev server: a Plan/Act run followed live, a tree run and a grid-world run. The
 * page shows a step's groups, hovering a token shows the logprob and mask the blob store holds for it,
 * trees and grids render, episode links name workflows the server has, a chat episode shows as its
 * conversation (roles, tool calls and results, thinking, the full-render check's marks), and a
 * corrupt blob shows an error panel.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { readSamples } from '../../src/contracts/sample-set';
import { createOracleInferenceActivities } from '../../activities/oracle-inference';
import { names } from '../../src/store/run-names';
import { getJson } from '../../src/store/blob-store';
import type { RolloutRecord } from '../../src/contracts/rollout-record';
import { loadTokenizer } from '../../src/model/tokenizer';
import { createViewer } from '../../src/viewer/server';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { testEnv, tinyRlConfig, tinyRunConfig, uniqueId, type TestEnv } from '../helpers/temporal';
import { tinyPlanActConfig } from '../../scripts/lib/scenarios';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { launchChromium } from '../../scripts/lib/chromium';
import type { Sample } from '../../src/domain/types';
import type { StoredCheck } from '../../src/chat/kept-episode';
import { CHAT_RUN, CHAT_STEP, episodeIdOf, writeChatViewerFixture, type ChatFixture } from '../helpers/chat-viewer-fixture';

let ctx: TestEnv;
let viewer: FastifyInstance;
let base = '';
let browser: Browser;
let page: Page;
const runs: Record<'planAct' | 'tree' | 'grid' | 'dualPlanner' | 'agent' | 'fallback', string> = { planAct: '', tree: '', grid: '', dualPlanner: '', agent: '', fallback: '' };
let dualActor = '';
let liveRun: Promise<unknown>;
let stepsWhenOpened = -1;
let chat: ChatFixture;

beforeAll(async () => {
  ctx = await testEnv('viewer-browser');
  viewer = createViewer({ store: ctx.store, runsDir: ctx.runsDir, tokenizer: loadTokenizer(), links: { uiUrl: 'http://localhost:8233', namespace: ctx.namespace } });
  base = await viewer.listen({ host: '127.0.0.1', port: 0 });
  browser = await launchChromium();
  page = await browser.newPage();
  // The Plan/Act run is watched while it runs (the live test); the other two are only read.
  const planAct = await ctx.startTrainingRun('viewer-planact', tinyRlConfig({ steps: 3 }));
  runs.planAct = planAct.workflowId;
  liveRun = planAct.handle.result();
  await page.goto(runUrl(runs.planAct));
  await page.evaluate(() => ((globalThis as unknown as { loadedOnce: boolean }).loadedOnce = true));
  stepsWhenOpened = (await recordedSteps(runs.planAct)).length;
  const tree = await ctx.startTrainingRun('viewer-tree', {
    ...tinyRlConfig({ steps: 1, promptsPerStep: 2, groupSize: 3 }),
    rollout: { kind: 'tree', maxTurns: 2 },
    tree: { initialRollouts: 2, expansionIterations: 1, beamSize: 2, samplesPerRoot: 3, advantage: 'tree' },
  });
  runs.tree = tree.workflowId;
  const grid = await ctx.startTrainingRun(
    'viewer-grid',
    tinyRunConfig({
      seed: 5,
      experiment: 'test-grid',
      task: { kind: 'grid', grid: { rows: 4, cols: 4, walls: 2, maxSteps: 8, testLayouts: 3 }, trainProblems: 20, evalProblems: 3 },
      horizon: { actionHorizonsPattern: [3, 6], numActionChunks: 3, baseH: 5, usePlanReward: true, planRewardCoef: 0.1 },
      model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 64 },
      rollout: { kind: 'horizon' },
      rl: { steps: 1, promptsPerStep: 2, groupSize: 2 },
      eval: { everySteps: 0, rlEverySteps: 0 },
    }),
  );
  runs.grid = grid.workflowId;
  const agent = await ctx.startTrainingRun('viewer-agent', { ...tinyRlConfig({ steps: 1 }), rollout: { kind: 'agent', maxTurns: 2, maxToolCallsPerAct: 1, agent: { timeoutSec: 60 } } });
  runs.agent = agent.workflowId;
  // Dual mode: a planner job and an actor job meet in a rollout session; each trains its own role.
  // The scripted oracle generates (as in rollout-session.test.ts), so episodes reach the actor.
  const oracleQueue = uniqueId('viewer-oracle');
  await ctx.addWorker({ taskQueue: oracleQueue, activities: createOracleInferenceActivities({ store: ctx.store }), maxConcurrentActivityTaskExecutions: 64 });
  const experiment = uniqueId('viewer-dual');
  const dualConfig = { ...tinyPlanActConfig(experiment, 'dual'), rl: { promptsPerStep: 2, groupSize: 2, maxNewTokens: 16 } };
  const [planner, actor] = await Promise.all(
    (['planner', 'actor'] as const).map((role) =>
      ctx.env.client.workflow.start('planActJob', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId(`viewer-dual-${role}`), args: [{ role, config: dualConfig, rolloutIds: [1], inferenceQueue: oracleQueue }] }),
    ),
  );
  runs.dualPlanner = planner!.workflowId;
  dualActor = actor!.workflowId;
  // A planner job whose partner never comes: it falls back to a single-agent rollout and trains on it.
  const lone = await ctx.env.client.workflow.start('planActJob', {
    taskQueue: TASK_QUEUES.orchestration,
    workflowId: uniqueId('viewer-lone-planner'),
    args: [{ role: 'planner', config: { ...tinyPlanActConfig(uniqueId('viewer-alone'), 'dual', { barrierTimeoutSec: 1, fallbackOnTimeout: true }), rl: { promptsPerStep: 2, groupSize: 2, maxNewTokens: 16 } }, rolloutIds: [1], inferenceQueue: oracleQueue }],
  });
  runs.fallback = lone.workflowId;
  // A chat run (task.chat, Qwen3's tokenizer and template): its episodes kept and written by the real chat code (no model needed).
  chat = await writeChatViewerFixture(ctx.store, ctx.runsDir);
  await Promise.all([tree.handle.result(), grid.handle.result(), agent.handle.result(), planner!.result(), actor!.result(), lone.result()]);
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await viewer?.close();
  await ctx?.stop();
});

const runUrl = (id: string) => `${base}/#/run/${encodeURIComponent(id)}`;

async function record(runId: string, step: number): Promise<RolloutRecord> {
  return getJson<RolloutRecord>(ctx.store, (await ctx.store.getName(names.rolloutRecord(runId, step)))!);
}

async function recordedSteps(runId: string): Promise<number[]> {
  return (await ctx.store.listNames(names.rolloutRecordPrefix(runId))).map((n) => Number(n.slice(n.lastIndexOf('-') + 1)));
}

/**
 * Opens a page of the viewer and waits until it shows it: the page is one document, so a new address
 * only changes its hash, and the old page stays up until the new one has drawn.
 */
async function open(url: string): Promise<void> {
  await page.goto(url);
  await shown();
}

/** Waits until the page has drawn what its address names. */
async function shown(): Promise<void> {
  await page.waitForFunction(() => {
    const g = globalThis as unknown as { location: { hash: string }; document: { getElementById(id: string): { dataset: Record<string, string> } | null } };
    return g.document.getElementById('main')?.dataset.route === g.location.hash;
  });
}

/** The run's first recorded step, and the first episode of its first group opened. */
async function openFirstEpisode(runId: string): Promise<void> {
  const [step] = await recordedSteps(runId);
  await open(`${runUrl(runId)}/step/${step}`);
  await page.locator('#groups tr[data-episode]').first().click();
  await shown();
}

test('a run being trained: its steps appear on the open page without a reload', async () => {
  // The page was opened (in beforeAll) before the last update; it fills in as the run goes on.
  expect(stepsWhenOpened).toBeLessThan(3);
  const rows = page.locator('#steps tr[data-step]');
  expect(((await liveRun) as TrainingRunResult).rlSteps).toBe(3);
  await rows.nth(2).waitFor({ timeout: 30_000 });
  expect(await rows.count()).toBe(3);
  expect(await page.evaluate(() => (globalThis as unknown as { loadedOnce?: boolean }).loadedOnce)).toBe(true);
}, 300_000);

test("a step shows its GRPO groups side by side; hovering a token shows the logprob and loss mask the blob store holds", async () => {
  const [step] = await recordedSteps(runs.planAct);
  await open(runUrl(runs.planAct));
  await page.locator(`#steps tr[data-step="${step}"]`).click();
  await shown();
  const groups = page.locator('#groups .group');
  await groups.first().waitFor();
  // tinyRlConfig: 2 prompts x 2 episodes per step.
  expect(await groups.count()).toBe(2);
  expect(await groups.first().locator('tr[data-episode]').count()).toBe(2);

  await groups.first().locator('tr[data-episode]').first().click();
  await shown();
  const timeline = page.locator('#episode .timeline').first();
  await timeline.waitFor();
  const episodeId = (await page.locator('#episode .episode').getAttribute('data-episode'))!;

  // The first sample of that episode, as the trainer read it.
  const rec = await record(runs.planAct, step!);
  const samples = (await Promise.all(rec.sets.map((s) => readSamples(ctx.store, s.ref)))).flat();
  const first = samples.find((s) => s.metadata.episodeId === episodeId)!;
  const trained = first.lossMask.findIndex((m) => m > 0);
  await timeline.locator(`.tok[data-i="${trained}"]`).hover();
  const tip = page.locator('#tip');
  await expect(tip.isVisible()).resolves.toBe(true);
  const text = (await tip.textContent())!;
  expect(text).toContain(`logprob ${first.logprobs[trained]!.toFixed(4)}`);
  expect(text).toContain('mask 1');
  expect(text).toContain(`token ${first.responseTokens[trained]}`);
  const env = first.lossMask.findIndex((m) => m === 0);
  if (env >= 0) {
    await timeline.locator(`.tok[data-i="${env}"]`).hover();
    expect(await tip.textContent()).toContain('mask 0');
    expect(await timeline.locator(`.tok[data-i="${env}"]`).getAttribute('class')).toContain('m0');
  }
}, 120_000);

test('episode links name workflows the Temporal server has', async () => {
  for (const runId of Object.values(runs)) {
    const [step] = await recordedSteps(runId);
    const res = await fetch(`${base}/api/runs/${encodeURIComponent(runId)}/steps/${step}?groupLimit=64`);
    const view = (await res.json()) as { groups: Array<{ episodes: Array<{ workflowId?: string; workflowUrl?: string }> }> };
    const ids = new Set(view.groups.flatMap((g) => g.episodes.map((e) => e.workflowId)));
    expect(ids.size).toBeGreaterThan(0);
    for (const id of ids) {
      expect(id).toBeDefined();
      await expect(ctx.env.client.workflow.getHandle(id!).describe()).resolves.toMatchObject({ workflowId: id });
    }
  }
}, 120_000);

test("a Plan/Act job's fallback rollout says so and links to the fallback workflow", async () => {
  const [step] = await recordedSteps(runs.fallback);
  await open(`${runUrl(runs.fallback)}/step/${step}`);
  expect(await page.locator('main p').first().textContent()).toContain('fell back to a single-agent rollout');
  const links = await page.locator('#groups a.wf').evaluateAll((as) => as.map((a) => (a as unknown as { href: string }).href));
  expect(links.length).toBeGreaterThan(0);
  expect(new Set(links)).toEqual(new Set([`http://localhost:8233/namespaces/${ctx.namespace}/workflows/${encodeURIComponent(`${runs.fallback}/fallback-r1`)}`]));
}, 120_000);

test('a tree rollout is drawn as its tree, each output under its node', async () => {
  const [step] = await recordedSteps(runs.tree);
  await open(`${runUrl(runs.tree)}/step/${step}`);
  const trees = page.locator('#groups .group .tree');
  await trees.first().waitFor();
  expect(await trees.count()).toBe(2);
  // samplesPerRoot 3: three outputs per root, each in the tree under a node below the root.
  const outputs = trees.first().locator('.out');
  expect(await outputs.count()).toBe(3);
  expect(await trees.first().locator('li li').count()).toBeGreaterThan(0);
  await outputs.first().click();
  await shown();
  await page.locator('#episode .timeline').first().waitFor();
  expect(await page.locator('#episode .sample-head').first().textContent()).toContain('tree credit');
}, 120_000);

test('a grid-world episode shows its grid, plans and chunks', async () => {
  await openFirstEpisode(runs.grid);
  const grid = page.locator('#episode table.grid').first();
  await grid.waitFor();
  expect(await grid.locator('td.agent').count()).toBe(1);
  expect(await grid.locator('td.goal').count()).toBe(1);
  expect(await page.locator('#episode .sample-head').first().textContent()).toMatch(/plan H=\d+, chunk from move \d+/);
}, 120_000);

test("a dual-mode job's episode shows both roles: its own planner samples and the actor job's", async () => {
  await openFirstEpisode(runs.dualPlanner);
  const heads = page.locator('#episode .sample-head');
  await heads.first().waitFor();
  const texts = await heads.allTextContents();
  expect(texts.some((t) => t.includes('role planner') && !t.includes('trained by'))).toBe(true);
  expect(texts.some((t) => t.includes('role actor') && t.includes(`trained by the actor job ${dualActor}`))).toBe(true);
}, 120_000);

test("an agent episode shows the calls the gateway recorded, beside the samples they were merged into", async () => {
  await openFirstEpisode(runs.agent);
  const calls = page.locator('#episode .calls details');
  await calls.first().waitFor();
  expect(await calls.count()).toBeGreaterThanOrEqual(1);
  expect(await calls.first().locator('summary').textContent()).toMatch(/^attempt 1, call 1 · agent /);
  await calls.first().locator('summary').click();
  expect(await calls.first().locator('.msg.llm').count()).toBeGreaterThanOrEqual(1);
  expect(await page.locator('#episode .sample .timeline').count()).toBeGreaterThanOrEqual(1);
}, 120_000);

test('a chat episode shows its conversation: roles, the tool call and its result, thinking, and the full-render check marked on its ids', async () => {
  await open(`${runUrl(CHAT_RUN)}/step/${CHAT_STEP}`);
  expect(await page.locator('#chat-check').textContent()).toContain('thinking-rewrite 2 · whitespace-rewrite 0 · model-tokenization 0 · env-tokenization 0 · text 1 · unalignedModelIds 1');
  await page.locator(`#groups tr[data-episode="${episodeIdOf(0)}"]`).click();
  await shown();
  const conv = page.locator('#episode .chat');
  await conv.waitFor();
  expect(await conv.locator('.chat-msg').evaluateAll((els) => els.map((e) => e.getAttribute('data-role')))).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user', 'assistant']);
  const call = conv.locator('.tool-call[data-name="calc"]');
  expect(await call.count()).toBe(1);
  expect(await call.textContent()).toContain('calc({"expression": "17+25"}) · call_1_0');
  const result = conv.locator('.chat-msg.tool');
  expect(await result.locator('.answers').textContent()).toBe('result of calc({"expression": "17+25"}) · call_1_0');
  expect(await result.locator('.content').textContent()).toBe('42');
  expect(await conv.locator('.malformed[data-kind="bad-json"]').count()).toBe(1);
  // Thinking is collapsed in its message, and marked on its ids.
  const thinking = conv.locator('.chat-msg.assistant .thinking').first();
  expect(await thinking.locator('.msg-text').isVisible()).toBe(false);
  await thinking.locator('summary').click();
  expect(await thinking.locator('.msg-text').textContent()).toBe('\nI will use the calculator.\n');
  const api = (await (await fetch(`${base}/api/runs/${CHAT_RUN}/steps/${CHAT_STEP}/episode?id=${encodeURIComponent(episodeIdOf(0))}`)).json()) as { samples: Array<{ chat: { thinking: Array<[number, number]> } }> };
  const thinkingIds = api.samples[0]!.chat.thinking.reduce((n, [a, b]) => n + b - a, 0);
  expect(thinkingIds).toBeGreaterThan(0);
  expect(await conv.locator('.chat-block .tok.think').count()).toBe(thinkingIds);
  // Every id of the check's thinking rewrites is marked with its kind; hovering one says so.
  const [sample] = (await readSamples(ctx.store, chat.set.ref)) as Sample[];
  const check = await getJson<StoredCheck>(ctx.store, sample!.metadata.chat!.check);
  const rewritten = check.mismatches.filter((m) => m.kind === 'thinking-rewrite').reduce((n, m) => n + m.kept[1] - m.kept[0], 0);
  const marked = conv.locator('.chat-block .tok.mis[data-kind="thinking-rewrite"]');
  expect(await marked.count()).toBe(rewritten);
  const firstMarked = conv.locator('.chat-block.model .tok.mis[data-kind="thinking-rewrite"]').first();
  await firstMarked.hover();
  const tip = (await page.locator('#tip').textContent())!;
  expect(tip).toContain('a full render differs here: thinking-rewrite (trained as generated)');
  expect(tip).toContain('mask 1');
  expect(await conv.locator('.mismatches tr[data-kind="thinking-rewrite"]').count()).toBe(2);

  // The other episode's `text` difference: the model id is marked masked out, on the page and in its hover.
  await page.locator(`#groups tr[data-episode="${episodeIdOf(1)}"]`).click();
  await shown();
  const unaligned = page.locator('#episode .chat .chat-block .tok.unaligned');
  await unaligned.first().waitFor();
  expect(await unaligned.count()).toBe(1);
  expect(await unaligned.getAttribute('data-kind')).toBe('text');
  await unaligned.hover();
  expect(await page.locator('#tip').textContent()).toContain('masked out: a full render cannot align it');
  expect(await page.locator('#episode .mismatches tr[data-kind="text"]').textContent()).toContain('masked out');
}, 120_000);

test('a corrupt sample blob shows an error panel naming it, not a blank page', async () => {
  const steps = await recordedSteps(runs.planAct);
  const step = steps[steps.length - 1]!;
  const rec = await record(runs.planAct, step);
  const sha = rec.sets[0]!.ref.sha256;
  const file = path.join(ctx.store.root, 'blobs', sha.slice(0, 2), sha.slice(2));
  fs.chmodSync(file, 0o644);
  fs.writeFileSync(file, '{"samples": "not these"}');
  // A viewer started now: the one above may hold the set in its cache (blobs never change once written).
  const fresh = createViewer({ store: ctx.store, runsDir: ctx.runsDir, tokenizer: loadTokenizer(), links: { namespace: ctx.namespace } });
  const freshBase = await fresh.listen({ host: '127.0.0.1', port: 0 });
  try {
    await open(`${freshBase}/#/run/${encodeURIComponent(runs.planAct)}/step/${step}`);
    const panel = page.locator('.error-panel');
    await panel.waitFor();
    expect(await panel.getAttribute('data-code')).toBe('blob-corrupt');
    expect(await panel.textContent()).toContain(sha);
    // The rest of the run still shows.
    await open(`${freshBase}/#/run/${encodeURIComponent(runs.planAct)}`);
    await page.locator('#steps tr[data-step]').first().waitFor();
  } finally {
    await fresh.close();
  }
}, 120_000);
