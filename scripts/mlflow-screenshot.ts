/**
 * npm run mlflow:screenshot -- --run <workflow id> [--experiment arith-rl] [--uri http://127.0.0.1:5000]
 *   [--charts rl/] [--out docs/mlflow.png]
 *
 * The README's picture of a tracked run in the MLflow UI: opens the run (found by its workflow id's
 * tag) on its Model metrics tab in chromium, shows the charts whose metric names contain --charts,
 * and saves the window.
 */
import path from 'node:path';
import { Command } from 'commander';
import { mlflowCall } from '../src/tracking/mlflow-client';
import { findRun } from '../src/tracking/mlflow-run';
import { launchChromium } from './lib/chromium';
import { LOCAL_MLFLOW_URI } from './lib/mlflow-server';
import { openMlflowPage, openRunCharts } from './lib/mlflow-ui';
import { runMain } from './lib/run-main';

async function main(): Promise<number> {
  const opts = new Command()
    .requiredOption('--run <id>', 'workflow id of the tracked run')
    .option('--experiment <name>', 'its MLflow experiment (--track: the config\'s experiment)', 'arith-rl')
    .option('--uri <url>', 'the MLflow tracking server', LOCAL_MLFLOW_URI)
    .option('--charts <text>', 'show the charts whose metric names contain this', 'rl/')
    .option('--out <file.png>', 'where to save it', 'docs/mlflow.png')
    .parse()
    .opts<{ run: string; experiment: string; uri: string; charts: string; out: string }>();
  const ep = { uri: opts.uri };
  const { experiment } = await mlflowCall<{ experiment: { experiment_id: string } }>(ep, 'GET', 'experiments/get-by-name', { experiment_name: opts.experiment });
  const runId = await findRun(ep, experiment.experiment_id, opts.run);
  if (!runId) {
    console.error(`mlflow:screenshot: no run of workflow '${opts.run}' in experiment '${opts.experiment}' at ${opts.uri}`);
    return 2;
  }
  const run = { uri: opts.uri, experimentId: experiment.experiment_id, runId };
  const browser = await launchChromium();
  try {
    const page = await openMlflowPage(browser);
    await openRunCharts(page, run, opts.charts);
    // Every chart shown has drawn its points (plotly's), then a moment for the last to settle.
    await page.getByTestId('experiment-view-compare-runs-card').first().locator('.scatterlayer .point').first().waitFor();
    await page.waitForTimeout(1_000);
    await page.screenshot({ path: path.resolve(opts.out) });
    console.log(`saved ${opts.out}: ${opts.uri}/#/experiments/${run.experimentId}/runs/${runId}/model-metrics, charts '${opts.charts}'`);
  } finally {
    await browser.close();
  }
  return 0;
}

runMain(main);
