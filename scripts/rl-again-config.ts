/**
 * Prints the config that trains a finished main-job run's RL (and RFT) again from its SFT checkpoint
 * (scripts/lib/rl-again.ts), from the run's <id>.input.json under .data/runs or DURABLE_RL_RUNS, with
 * each --set path=value (a JSON value, or else a string).
 *   node dist/scripts/rl-again-config.js <run id> [--set rl.learningRate=0.00003 ...]
 * scripts/rl-again.sh runs it for several runs and pairs the results.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseRunConfig } from '../src/config/parse';
import { ConfigError } from '../src/config/errors';
import { defaultRunsDir } from '../src/paths';
import { rlAgainConfig } from './lib/rl-again';
import { runMain } from './lib/run-main';

const USAGE = 'usage: rl-again-config <run id> [--set <dotted.path>=<value> ...]';

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
    console.log(JSON.stringify(rlAgainConfig(run, id, sets, file), null, 2));
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
