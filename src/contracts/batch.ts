/**
 * Batched activities (generateBatch, calcBatch): an episode workflow sends the requests its episodes
 * make in one workflow activation as one activity (workflows/request-batcher.ts), and the activity
 * answers each request on its own (activities/batch.ts).
 */

/**
 * One request's outcome: its value, or the non-retryable failure that request alone met (bad
 * input for it; its type and message as the activity would have failed with them).
 */
export type BatchOutcome<T> = { ok: T } | { failed: { type: string; message: string } };
