/**
 * `bash scripts/main.sh --track`: tracking.mlflow with the local default (the server the main job
 * starts), the experiment named after the config's; refused, naming what to drop, where the config
 * names its own tracker or a --resume goes on with the config it was started with.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../src/config/errors';
import { loadRunConfig } from '../../src/config/load';
import { parseRunConfig } from '../../src/config/parse';
import { REPO_ROOT } from '../../src/paths';
import { LOCAL_MLFLOW_URI } from '../../scripts/lib/mlflow-server';
import { withLocalTracking } from '../../scripts/lib/tracker-check';
import { killMainProcesses, startMain } from '../helpers/main-job';

afterAll(killMainProcesses);

it("turns on tracking.mlflow at the local default, in an experiment named after the config's", () => {
  const cfg = withLocalTracking(loadRunConfig(path.join(REPO_ROOT, 'configs', 'default.yaml')), 'configs/default.yaml');
  expect(cfg.tracking).toEqual({ mlflow: { uri: LOCAL_MLFLOW_URI, experiment: 'arith-rl' } });
  expect(LOCAL_MLFLOW_URI).toBe('http://127.0.0.1:5000');
});

it('refuses a config that names its own tracker, naming tracking.mlflow', () => {
  const cfg = parseRunConfig({ tracking: { mlflow: { uri: 'http://mlflow.example:8080', experiment: 'mine' } } });
  let err: unknown;
  try {
    withLocalTracking(cfg, 'mine.yaml');
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ConfigError);
  expect((err as ConfigError).problems).toEqual([{ path: 'tracking.mlflow', message: expect.stringContaining('drop --track') as string }]);
});

it('exits 2 before anything starts on --track with a tracked config or with --resume', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-track-flag-'));
  const config = path.join(dir, 'tracked.yaml');
  fs.writeFileSync(config, 'tracking:\n  mlflow: { uri: "http://127.0.0.1:1", experiment: x }\n');
  const tracked = await startMain(['--track', '--config', config], {}).exit;
  expect(tracked.code).toBe(2);
  expect(tracked.out).toMatch(/tracking\.mlflow: the config already logs to MLflow \(http:\/\/127\.0\.0\.1:1, experiment 'x'\): drop --track/);
  const resumed = await startMain(['--track', '--resume', 'some-run'], {}).exit;
  expect(resumed.code).toBe(2);
  expect(resumed.out).toContain('--resume some-run: the run goes on with the config it was started with; drop --track');
}, 60_000);
