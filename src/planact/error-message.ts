/**
 * The message to show the actor for a failed tool call. Temporal wraps an activity's error as
 * ActivityFailure("Activity task failed") with the real error as its cause, so the innermost
 * message is the informative one.
 */
export function errorMessage(err: unknown): string {
  let current: unknown = err;
  let message = 'tool failed';
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth++) {
    if (typeof current === 'object' && 'message' in current && typeof current.message === 'string' && current.message !== '') {
      message = current.message;
    } else if (typeof current === 'string' && current !== '') {
      message = current;
    }
    current = typeof current === 'object' && 'cause' in current ? current.cause : undefined;
  }
  return message;
}
