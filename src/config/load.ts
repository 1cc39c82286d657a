import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { ConfigError } from './errors';
import { parseRunConfig } from './parse';
import { refuseAsWritten } from './refusals';
import type { RunConfig } from './schema';

/** Reads a .json, .yaml or .yml run config and validates it. */
export function loadRunConfig(file: string): RunConfig {
  return checkRunConfig(readConfigFile(file), file);
}

/** A config file's contents as written (no defaults filled in): JSON, or YAML for any other extension. */
export function readConfigFile(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(file, [{ path: '', message: `cannot read file: ${(err as Error).message}` }]);
  }
  const ext = path.extname(file).toLowerCase();
  try {
    return ext === '.json' ? JSON.parse(text) : YAML.parse(text);
  } catch (err) {
    throw new ConfigError(file, [{ path: '', message: `not valid ${ext === '.json' ? 'JSON' : 'YAML'}: ${(err as Error).message}` }]);
  }
}

/** Validates a config as written (`source` names it in errors): its keys as written (src/config/refusals.ts AS_WRITTEN), then the schema. */
export function checkRunConfig(raw: unknown, source: string): RunConfig {
  refuseAsWritten(raw, source);
  return parseRunConfig(raw, source);
}
