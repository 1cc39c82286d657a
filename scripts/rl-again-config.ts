/**
 * The config that trains a finished main-job run's RL (and RFT, if it had it) again from its SFT
 * checkpoint, with some settings changed: the run's own config (<id>.input.json under .data/runs or
 * DURABLE_RL_RUNS) with init.fromRun = the run and init.step = its SFT steps, no SFT, no SFT
 * baselines (they do not depend on RL: the run's own are paired with the new RL), then each
 * --set path=value (a JSON value, or else a string). Validated as a run config; printed as JSON.
 *   node dist/scripts/rl-again-config.js <run id> [--set rl.learningRate=0.00003 ...]
 * scripts/rl-again.sh runs it for several runs and pairs the results.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseRunConfig } from '../src/config/parse';
import { ConfigError } from '../src/config/errors';
import { defaultRunsDir } from '../src/paths';
import { runMain } from './lib/run-main';

const USAGE = 'usage: rl-again-config <run id> [--set <dotted.path>=<value> ...]';

/** Sets `dotted` in `target`, creating objects on the way; refuses a path through a non-object. */
function setPath(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key] ?? {};
    if (typeof next !== 'object' || next === null || Array.isArray(next)) throw new ConfigError('--set', [{ path: dotted, message: `${key} is not an object` }]);
    node[key] = next;
    node = next as Record<string, unknown>;
  }
  node[keys[keys.length - 1]!] = value;
}

function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function main(): number {
  const args = process.argv.slice(2);
  const id = args[0];
  if (id === undefined || id.startsWith('--')) {
    console.error(USAGE);
    return 2;
  }
  const sets: Array<[string, unknown]> = [];
  for (let i = 1; i < args.length; i += 2) {
    const assignment = args[i + 1];
    const eq = assignment?.indexOf('=') ?? -1;
    if (args[i] !== '--set' || assignment === undefined || eq <= 0) {
      console.error(`${args.slice(i).join(' ')}: ${USAGE}`);
      return 2;
    }
    sets.push([assignment.slice(0, eq), parseValue(assignment.slice(eq + 1))]);
  }
  const file = path.join(defaultRunsDir(), `${id}.input.json`);
  if (!fs.existsSync(file)) {
    console.error(`${id}: no ${file} (was it run by the main job?)`);
    return 2;
  }
  try {
    const run = parseRunConfig(JSON.parse(fs.readFileSync(file, 'utf8')), file);
    if (run.rl.steps === 0) throw new ConfigError(file, [{ path: 'rl.steps', message: 'the run has no RL phase to train again' }]);
    if (run.init.fromRun !== undefined) throw new ConfigError(file, [{ path: 'init.fromRun', message: `the run started from ${run.init.fromRun}'s checkpoint: train again from that run` }]);
    const { sftBudget: _budget, ...compare } = run.compare;
    const again: Record<string, unknown> = {
      ...run,
      experiment: `${run.experiment}-again`,
      init: { fromRun: id, step: run.sft.steps },
      sft: { ...run.sft, steps: 0 },
      compare: { ...compare, moreSft: false, filteredSft: false },
    };
    for (const [key, value] of sets) setPath(again, key, value);
    // Validated here; printed as built (defaults the file does not ask for, such as compare.sftBudget, stay out).
    parseRunConfig(again, `${file} again with ${sets.map(([k]) => `--set ${k}`).join(', ') || 'nothing changed'}`);
    console.log(JSON.stringify(again, null, 2));
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }
}

runMain(async () => main());
