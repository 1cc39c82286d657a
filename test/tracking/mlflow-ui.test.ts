/**
 * A tracked run as people see it in MLflow: a tiny trainingRun with RL, the more-SFT and RFT
 * baselines and a test evaluation, logged to a real `mlflow server` (SQLite, a temporary folder).
 * Over the REST API: the run's artifacts (the curves picture, the comparison as Markdown and JSON,
 * where the policy is) hold what the run made, and upload again onto themselves; each baseline is a
 * child run (mlflow.parentRunId) with its own metrics. In a real browser (Debian's chromium driven
 * by playwright-core): the MLflow UI finds the run in its experiment, shows its parameters, the RL
 * reward's chart and the comparison artifact, and nests the baselines' runs under it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { comparisonTable } from '../../src/report/comparison-table';
import { listArtifacts, logArtifacts } from '../../src/tracking/mlflow-artifacts';
import { mlflowCall } from '../../src/tracking/mlflow-client';
import { BASELINE_TAG, ensureExperiment, findRun, PARENT_RUN_TAG, type MlflowRunRef } from '../../src/tracking/mlflow-run';
import { runArtifactFiles } from '../../src/tracking/run-artifacts';
import { startMlflowOnFreePort, type RunningMlflow } from '../../scripts/lib/mlflow-server';
import { launchChromium } from '../../scripts/lib/chromium';
import { openMlflowPage, openRunCharts, runPageUrl } from '../../scripts/lib/mlflow-ui';
import { testEnv, tinyRlConfig, type TestEnv } from '../helpers/temporal';

let ctx: TestEnv;
let mlflow: RunningMlflow;
let browser: Browser;
let page: Page;
let workflowId: string;
let result: TrainingRunResult;
let main: MlflowRunRef;
const EXPERIMENT = 'ui';

type Kv = { key: string; value: string };
interface RunData {
  info: { run_id: string; run_name: string; status: string };
  data: { params?: Kv[]; tags?: Kv[]; metrics?: Array<{ key: string; value: number; step: number }> };
}

beforeAll(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-mlflow-ui-'));
  [mlflow, ctx, browser] = await Promise.all([startMlflowOnFreePort({ dir, logFile: path.join(dir, 'server.log') }), testEnv('mlflow-ui'), launchChromium()]);
  const base = tinyRlConfig();
  const started = await ctx.startTrainingRun('mlflow-ui', {
    ...base,
    task: { ...base.task, rl: { evalProblems: 4, testProblems: 4 } },
    compare: { moreSft: true, rft: true, sftBudget: { sequences: 8 } },
    tracking: { mlflow: { uri: mlflow.uri, experiment: EXPERIMENT } },
  });
  workflowId = started.workflowId;
  result = await started.handle.result();
  const exp = await ensureExperiment({ uri: mlflow.uri }, EXPERIMENT);
  if (!('experimentId' in exp)) throw new Error(exp.problem.message);
  const runId = await findRun({ uri: mlflow.uri }, exp.experimentId, workflowId);
  if (!runId) throw new Error(`no MLflow run for ${workflowId}`);
  main = { uri: mlflow.uri, experimentId: exp.experimentId, runId };
  page = await openMlflowPage(browser);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await ctx?.stop();
  await mlflow?.stop();
});

async function artifactText(run: MlflowRunRef, file: string): Promise<Buffer> {
  const res = await fetch(`${mlflow.uri}/api/2.0/mlflow-artifacts/artifacts/${run.experimentId}/${run.runId}/artifacts/${file}`);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe('over the REST API', () => {
  it('uploads the curves picture, the comparison (Markdown and JSON) and the policy location as the run\'s artifacts', async () => {
    const files = await listArtifacts({ uri: mlflow.uri }, main);
    expect(files.map((f) => f.path).sort()).toEqual(['comparison.json', 'comparison.md', 'curves.png', 'policy.json']);
    expect((await artifactText(main, 'curves.png')).equals(fs.readFileSync(result.curvesPng!))).toBe(true);
    const md = (await artifactText(main, 'comparison.md')).toString();
    expect(md).toContain(comparisonTable(result.comparison!).join('\n'));
    expect(md).toMatch(/\| SFT \+ RL \|/);
    expect(md).toMatch(/\| SFT \+ more SFT \|/);
    expect(JSON.parse((await artifactText(main, 'comparison.json')).toString())).toEqual(result.comparison);
    const policy = JSON.parse((await artifactText(main, 'policy.json')).toString()) as { checkpoint: { name: string; step: number; blob: { sha256: string } }; export: string };
    expect(policy.checkpoint).toMatchObject({ name: result.checkpoint!.name, step: result.checkpoint!.step, blob: { sha256: result.checkpoint!.ref.sha256 } });
    expect(policy.export).toBe(`npm run export:hf -- --run ${workflowId} --step ${result.checkpoint!.step} --out <dir>`);
  });

  it('logs each baseline into a child run of the main one, with its own metrics, finished', async () => {
    const { runs } = await mlflowCall<{ runs?: RunData[] }>({ uri: mlflow.uri }, 'POST', 'runs/search', {
      experiment_ids: [main.experimentId],
      filter: `tags.\`${PARENT_RUN_TAG}\` = '${main.runId}'`,
    });
    const children = new Map((runs ?? []).map((r) => [r.data.tags!.find((t) => t.key === BASELINE_TAG)!.value, r]));
    expect([...children.keys()].sort()).toEqual(['moreSft', 'rft']);
    const moreSft = children.get('moreSft')!;
    const rft = children.get('rft')!;
    expect(moreSft.info.run_name).toBe(`${workflowId}~more-sft`);
    expect(rft.info.run_name).toBe(`${workflowId}~rft`);
    for (const child of [moreSft, rft]) expect(child.info.status).toBe('FINISHED');
    const keys = (r: RunData) => (r.data.metrics ?? []).map((m) => m.key).sort();
    // More SFT: its losses (SFT steps 5 and 6, after the run's 4), its evaluation and test result.
    expect(keys(moreSft)).toEqual(expect.arrayContaining(['sft/loss', 'eval/rl/greedyAccuracy', 'test/moreSft/greedyAccuracy']));
    const lossSteps = await mlflowCall<{ metrics?: Array<{ step: number }> }>({ uri: mlflow.uri }, 'GET', 'metrics/get-history', { run_id: moreSft.info.run_id, metric_key: 'sft/loss' });
    expect((lossSteps.metrics ?? []).map((m) => Number(m.step)).sort()).toEqual([5, 6]);
    expect(keys(rft)).toEqual(expect.arrayContaining(['rft/meanReward', 'rft/loss', 'eval/rl/greedyAccuracy', 'test/rft/greedyAccuracy']));
    expect(keys(rft)).not.toContain('rl/meanReward');
    // Its parameters are the settings it trains with.
    expect(new Map((rft.data.params ?? []).map((p) => [p.key, p.value])).get('rl.steps')).toBe('2');
    expect(new Map((moreSft.data.params ?? []).map((p) => [p.key, p.value])).get('sftBudget.sequences')).toBe('8');
  });
});

describe('in the MLflow UI (chromium)', () => {
  it('finds the run in its experiment, the baselines nested under it, and shows its parameters', async () => {
    await page.goto(`${mlflow.uri}/#/experiments/${main.experimentId}`);
    const runLink = page.getByRole('link', { name: workflowId, exact: true });
    const childLinks = [`${workflowId}~more-sft`, `${workflowId}~rft`].map((name) => page.getByRole('link', { name, exact: true }));
    await runLink.waitFor();
    // Nested: shown once the run's row is expanded.
    for (const link of childLinks) expect(await link.count()).toBe(0);
    await page.getByRole('row').filter({ has: runLink }).locator('[col-id="attributes.`Run Name`"] button').click();
    for (const link of childLinks) await link.waitFor();
    await runLink.click();
    await page.waitForURL(new RegExp(`/runs/${main.runId}$`));
    await page.getByPlaceholder('Search parameters').fill('rl.steps');
    const row = page.getByRole('row').filter({ hasText: 'rl.steps' }).first();
    await expect(row.innerText()).resolves.toMatch(/rl\.steps\s+2/);
  });

  it("draws the RL reward's chart, a point per RL step, on the run's Model metrics tab", async () => {
    await openRunCharts(page, main, 'rl/meanReward');
    const card = page.getByTestId('experiment-view-compare-runs-card').filter({ hasText: `${workflowId} (rl/meanReward)` });
    await card.waitFor();
    expect(await page.getByTestId('experiment-view-compare-runs-card').count()).toBe(1);
    await expect(card.locator('.scatterlayer .point').count()).resolves.toBe(result.rlSteps);
  });

  it('shows the comparison artifact as a table', async () => {
    await page.goto(runPageUrl(main, 'artifacts'));
    await page.getByText('comparison.md', { exact: true }).click();
    for (const policy of ['SFT only', 'SFT + more SFT', 'SFT + RFT', 'SFT + RL']) await page.getByRole('cell', { name: policy, exact: true }).waitFor();
  });
});

// Last: the browser's checks above see only what the run uploaded.
describe('a retried upload', () => {
  it('uploads the artifacts again onto themselves (a retried upload): the same four files, the same bytes', async () => {
    const before = await listArtifacts({ uri: mlflow.uri }, main);
    const png = fs.readFileSync(result.curvesPng!);
    await logArtifacts({ uri: mlflow.uri }, main, runArtifactFiles({ workflowId, comparison: result.comparison!, checkpoint: result.checkpoint!, weights: result.weights! }, png));
    expect(await listArtifacts({ uri: mlflow.uri }, main)).toEqual(before);
    expect((await artifactText(main, 'curves.png')).equals(png)).toBe(true);
  });
});
