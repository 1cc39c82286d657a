/** A config that does not match the schema; names every offending field and what is allowed. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly source: string,
    readonly problems: ReadonlyArray<{ path: string; message: string }>,
  ) {
    super(`invalid config ${source}:\n${problems.map((p) => `  - ${p.path || '(root)'}: ${p.message}`).join('\n')}`);
  }
}
