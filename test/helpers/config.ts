import { ConfigError } from '../../src/config/errors';

/** The problems of the ConfigError `fn` throws; fails the test when it throws none or another error. */
export function problemsOf(fn: () => unknown): Array<{ path: string; message: string }> {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return [...(err as ConfigError).problems];
  }
  throw new Error('expected a ConfigError');
}
