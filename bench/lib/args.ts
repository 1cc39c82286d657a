/** Command-line options of the benchmarks: `--name value` and bare `--flag`. */
export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

export function flag(name: string): boolean {
  return process.argv.includes(`--${name}`);
}
