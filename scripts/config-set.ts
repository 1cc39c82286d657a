/**
 * Prints a run config file as JSON with each --set path=value applied (a JSON value, or else a
 * string), checked as the main job would check it; exit 2 naming the field when it is not valid.
 * With no --set it checks the file and prints it as JSON. scripts/from-run-seeds.sh builds its runs'
 * configs with it.
 *   node dist/scripts/config-set.js configs/tree-from-run.yaml --set rl.learningRate=0.00003
 */
import { ConfigError } from '../src/config/errors';
import { checkRunConfig, readConfigFile } from '../src/config/load';
import { checkStartable } from '../src/config/start-checks';
import { parseSetArgs, printConfig, setPath } from './lib/config-set';
import { runMain } from './lib/run-main';

const USAGE = 'usage: config-set <config file> [--set <dotted.path>=<value> ...]';

function main(): number {
  const [file, ...rest] = process.argv.slice(2);
  const parsed = parseSetArgs(rest);
  if (file === undefined || file.startsWith('-') || 'bad' in parsed) {
    console.error(`${'bad' in parsed ? `${parsed.bad}: ` : ''}${USAGE}`);
    return 2;
  }
  const { sets } = parsed;
  return printConfig(() => {
    const config = readConfigFile(file);
    if (typeof config !== 'object' || config === null || Array.isArray(config)) throw new ConfigError(file, [{ path: '', message: 'not a mapping of settings' }]);
    const changed = config as Record<string, unknown>;
    for (const [key, value] of sets) setPath(changed, key, value);
    const source = `${file} with ${sets.map(([k]) => `--set ${k}`).join(', ') || 'nothing changed'}`;
    checkStartable(checkRunConfig(changed, source), source);
    return changed;
  });
}

runMain(async () => main());
