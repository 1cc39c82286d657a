import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { ConfigError } from './errors';
import { parseRunConfig } from './parse';
import type { RunConfig } from './schema';

/** Reads a .json, .yaml or .yml run config and validates it. */
export function loadRunConfig(file: string): RunConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(file, [{ path: '', message: `cannot read file: ${(err as Error).message}` }]);
  }
  const ext = path.extname(file).toLowerCase();
  let raw: unknown;
  try {
    raw = ext === '.json' ? JSON.parse(text) : YAML.parse(text);
  } catch (err) {
    throw new ConfigError(file, [{ path: '', message: `not valid ${ext === '.json' ? 'JSON' : 'YAML'}: ${(err as Error).message}` }]);
  }
  return parseRunConfig(raw, file);
}
