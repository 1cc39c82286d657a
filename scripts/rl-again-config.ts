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
import { defaultRunsDir } from '../src/paths';
import { parseSetArgs, printConfig } from './lib/config-set';
import { rlAgainConfig } from './lib/rl-again';
import { runMain } from './lib/run-main';

const USAGE = 'usage: rl-again-config <run id> [--set <dotted.path>=<value> ...]';

function main(): number {
  const args = process.argv.slice(2);
  const id = args[0];
  if (id === undefined || id.startsWith('--')) {
    console.error(USAGE);
    return 2;
  }
  const parsed = parseSetArgs(args.slice(1));
  if ('bad' in parsed) {
    console.error(`${parsed.bad}: ${USAGE}`);
    return 2;
  }
  const { sets } = parsed;
  const file = path.join(defaultRunsDir(), `${id}.input.json`);
  if (!fs.existsSync(file)) {
    console.error(`${id}: no ${file} (was it run by the main job?)`);
    return 2;
  }
  return printConfig(() => rlAgainConfig(parseRunConfig(JSON.parse(fs.readFileSync(file, 'utf8')), file), id, sets, file));
}

runMain(async () => main());
