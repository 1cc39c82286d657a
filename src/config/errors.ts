/** A config that does not match the schema or is refused (src/config/refusals.ts); names every offending field and what is allowed. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly source: string,
    readonly problems: ReadonlyArray<{ path: string; message: string }>,
    /** The text, when not the usual list (a refusal's own form, src/config/refusals.ts). */
    text?: string,
  ) {
    super(text ?? `invalid config ${source}:\n${problems.map((p) => `  - ${p.path || '(root)'}: ${p.message}`).join('\n')}`);
  }
}
