import { RunConfigSchema, type RunConfig } from './schema';
import { ConfigError } from './errors';

/** Validates a plain object (already read from JSON/YAML or a workflow input). */
export function parseRunConfig(raw: unknown, source = 'input'): RunConfig {
  const result = RunConfigSchema.safeParse(raw ?? {});
  if (result.success) return result.data;
  throw new ConfigError(
    source,
    result.error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message })),
  );
}
