import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { ConfigError } from './errors';
import { parseRunConfig } from './parse';
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

/** Validates a config as written (`source` names it in errors): the file-level checks, then the schema. */
export function checkRunConfig(raw: unknown, source: string): RunConfig {
  refuseUnusedKeys(raw, source);
  return parseRunConfig(raw, source);
}

/**
 * Keys a config file sets that nothing would read. Checked on the file as written: a parsed config
 * has every default filled in (compare.sftBudget among them), so only the file tells what was asked.
 */
function refuseUnusedKeys(raw: unknown, file: string): void {
  const compare = (raw as { compare?: Record<string, unknown> } | null)?.compare;
  if (compare && typeof compare === 'object' && compare.sftBudget !== undefined && compare.moreSft !== true && compare.filteredSft !== true) {
    throw new ConfigError(file, [{ path: 'compare.sftBudget', message: 'it budgets the SFT baselines (compare.moreSft, compare.filteredSft), and neither is on in this config' }]);
  }
}
