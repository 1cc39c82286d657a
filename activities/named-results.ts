/**
 * A named result made from other inputs than this attempt's (src/store/named-results.ts) is a
 * config problem no retry can fix: a workflow id reused for other inputs. It fails the activity with
 * a non-retryable ConfigError naming the id, the result and what differs.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { NamedResultConflictError } from '../src/store/named-results';

export async function refuseOtherInputs<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (!(err instanceof NamedResultConflictError)) throw err;
    throw ApplicationFailure.nonRetryable(
      `${err.message}: a workflow id's results are kept for the inputs they were made from; start this one under another workflow id`,
      'ConfigError',
      { name: err.resultName, differences: err.differences },
    );
  }
}
