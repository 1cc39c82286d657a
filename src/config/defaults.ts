/**
 * The run config's defaults, and whether a parsed config moves a key off its default: the only way
 * to tell a key a user set, since a parsed config has every default filled in (a key set to its
 * default cannot be told from one left out).
 */
import { HorizonSchema, RunConfigSchema, type RunConfig } from './schema';

let defaults: Record<string, unknown> | undefined;
/** Every key's default, rl.async's and horizon's included (both absent from a config that leaves them out). Built once. */
function configDefaults(): Record<string, unknown> {
  return (defaults ??= { ...RunConfigSchema.parse({ rl: { async: {} } }), horizon: HorizonSchema.parse({}) });
}

function valueAt(obj: unknown, key: string): unknown {
  return key.split('.').reduce<unknown>((o, k) => (o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), obj);
}

/** Whether `cfg` holds the dotted key with a value other than its default (objects compared whole). */
export function differsFromDefault(cfg: RunConfig, key: string): boolean {
  const value = valueAt(cfg, key);
  return value !== undefined && JSON.stringify(value) !== JSON.stringify(valueAt(configDefaults(), key));
}
