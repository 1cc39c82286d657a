/**
 * `--set dotted.path=value` on the command line of the scripts that run a config with some settings
 * changed (scripts/rl-again-config.ts, scripts/config-set.ts); setPath also builds scripts/lib/rl-again.ts's config.
 */
import { ConfigError } from '../../src/config/errors';

/** A --set value: JSON (numbers, booleans, objects), or else the text as a string. */
function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * The [dotted path, value] pairs of `args`, which must be `--set path=value` repeated; otherwise
 * `bad`, the arguments from the first one that is not (for the caller's usage message).
 */
export function parseSetArgs(args: readonly string[]): { sets: Array<[string, unknown]> } | { bad: string } {
  const sets: Array<[string, unknown]> = [];
  for (let i = 0; i < args.length; i += 2) {
    const assignment = args[i + 1];
    const eq = assignment?.indexOf('=') ?? -1;
    if (args[i] !== '--set' || assignment === undefined || eq <= 0) return { bad: args.slice(i).join(' ') };
    sets.push([assignment.slice(0, eq), parseValue(assignment.slice(eq + 1))]);
  }
  return { sets };
}

/** Sets `dotted` in `target`, creating objects on the way; refuses a path through a non-object. */
export function setPath(target: Record<string, unknown>, dotted: string, value: unknown): void {
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

/** Prints the config `build` returns as JSON (exit code 0), or a ConfigError's message (exit code 2, naming the field). */
export function printConfig(build: () => unknown): number {
  try {
    console.log(JSON.stringify(build(), null, 2));
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }
}
