/**
 * Replays every recorded history (test/histories, regenerate with `npm run histories`) against the
 * current workflow bundle: a change that would break running workflows fails here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { DEFAULT_WORKFLOW_BUNDLE } from '../../workers/create-workers';
import { RECORDED_SCENARIOS } from '../../scripts/lib/scenarios';

const dir = path.resolve(__dirname, '../histories');

describe('replay of recorded histories', () => {
  it('has a history for every recorded scenario', () => {
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(files.sort()).toEqual(RECORDED_SCENARIOS.map((s) => `${s.name}.json`).sort());
  });

  it.each(RECORDED_SCENARIOS.map((s) => s.name))('replays %s without nondeterminism', async (name) => {
    const history = historyFromJSON(JSON.parse(fs.readFileSync(path.join(dir, `${name}.json`), 'utf8')));
    expect(history.events?.length).toBeGreaterThan(5);
    // The recorded workflow id: Plan/Act workflows derive their children's ids from their own.
    const scenario = RECORDED_SCENARIOS.find((s) => s.name === name)!;
    await Worker.runReplayHistory({ workflowBundle: { codePath: DEFAULT_WORKFLOW_BUNDLE } }, history, scenario.workflowId ?? `history-${name}`);
  });
});
