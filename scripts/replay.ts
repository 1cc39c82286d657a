/**
 * Replays a workflow history against the current workflow code and says whether it still runs it:
 *   npm run build && npm run replay -- <history.json> [--workflow-id <id>]
 * The history is what `temporal workflow show --workflow-id <id> --output json` exports (or the Web
 * UI's download). The workflow id matters for workflows that derive their children's ids from their
 * own; by default it is read off the first child's id ("<id>/rollout-1"), else "replay".
 * Exits 0 when the replay matches, 1 with the divergence when it does not, 2 on bad input.
 */
import fs from 'node:fs';
import { Command } from 'commander';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { DEFAULT_WORKFLOW_BUNDLE } from '../workers/create-workers';

export async function replayFile(file: string, workflowId?: string): Promise<{ ok: true } | { ok: false; error: string }> {
  const history = historyFromJSON(JSON.parse(fs.readFileSync(file, 'utf8')));
  // An exported history does not name its own workflow id, but this project's workflows name their
  // children "<own id>/<child>", so the first child started gives it away.
  const child = history.events?.find((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)?.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
  const id = workflowId ?? (child?.includes('/') ? child.slice(0, child.lastIndexOf('/')) : 'replay');
  try {
    await Worker.runReplayHistory({ workflowBundle: { codePath: DEFAULT_WORKFLOW_BUNDLE } }, history, id);
    return { ok: true };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
  }
}

async function main(): Promise<number> {
  const program = new Command()
    .name('replay')
    .argument('<history.json>', 'history exported with `temporal workflow show --output json`')
    .option('--workflow-id <id>', 'the workflow id the history was recorded under')
    .parse();
  const [file] = program.args;
  const { workflowId } = program.opts<{ workflowId?: string }>();
  if (!file || !fs.existsSync(file)) {
    console.error(`replay: no history file ${JSON.stringify(file ?? '')}`);
    return 2;
  }
  Runtime.install({ logger: new DefaultLogger('WARN') });
  let result;
  try {
    result = await replayFile(file, workflowId);
  } catch (err) {
    console.error(`replay: ${file} is not a workflow history: ${err instanceof Error ? err.message : String(err)}`);
    return 2;
  }
  if (result.ok) {
    console.log(`replay: ${file} replays against the current workflow code`);
    return 0;
  }
  console.error(`replay: ${file} diverges from the current workflow code:\n${result.error}`);
  return 1;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
