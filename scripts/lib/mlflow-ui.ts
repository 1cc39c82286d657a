/**
 * The MLflow UI (served by `mlflow server` 3.17.2, scripts/python/mlflow.txt) in chromium, for its
 * browser test and the README's screenshot: a page that opens in the UI's "Model training" view (it
 * starts in "GenAI", which lists runs as evaluations) with its assistant panel closed, and the URLs
 * of a run's tabs.
 */
import type { Browser, Page } from 'playwright-core';
import type { MlflowRunRef } from '../../src/contracts/tracking';
import { mlflowRunUrl } from '../../src/tracking/mlflow-run';

/** The run's page, or one of its tabs (model-metrics, artifacts). */
export function runPageUrl(run: MlflowRunRef, tab?: 'model-metrics' | 'artifacts'): string {
  return tab ? `${mlflowRunUrl(run)}/${tab}` : mlflowRunUrl(run);
}

/** A new page whose MLflow UI starts in the Model training view, the assistant closed (the UI keeps both in localStorage). */
export async function openMlflowPage(browser: Browser, viewport = { width: 1440, height: 1000 }): Promise<Page> {
  const page = await browser.newPage({ viewport });
  // Before the UI's own scripts, on every page load (a string: this project's TypeScript has no DOM types).
  await page.addInitScript({
    content: [
      `localStorage.setItem('mlflow.workflowType_v1', '"machine_learning"');`,
      `localStorage.setItem('mlflow.assistant.panelOpen_v1', 'false');`,
      `localStorage.setItem('mlflow.assistant.fab.autoOpenedOnFirstLoad_v1', 'true');`,
    ].join('\n'),
  });
  return page;
}

/** The run's Model metrics tab showing only the charts whose metric names contain `search` (the tab draws a section's charts only once scrolled to). */
export async function openRunCharts(page: Page, run: MlflowRunRef, search: string): Promise<void> {
  await page.goto(runPageUrl(run, 'model-metrics'));
  await page.getByPlaceholder('Search metric charts').fill(search);
}
