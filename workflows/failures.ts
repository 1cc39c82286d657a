import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

/**
 * A typed, non-retryable activity failure (a bad resume, init.fromRun, a claimed run id) becomes the
 * workflow's own failure with the same type and message, so `temporal workflow show` says what was
 * wrong first.
 */
export async function failAsRun<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.nonRetryable) throw ApplicationFailure.nonRetryable(cause.message, cause.type ?? 'ConfigError');
    throw err;
  }
}
