/** The viewer's typed errors: each becomes an HTTP status and a JSON body the page shows as an error panel. */
import { BlobCorruptError, BlobNotFoundError } from '../store/blob-store';

export type ViewerErrorCode = 'bad-request' | 'not-found' | 'blob-missing' | 'blob-corrupt' | 'blob-unreadable' | 'metrics-unreadable' | 'tokenizer-unreadable' | 'tokenizer-mismatch';

export class ViewerError extends Error {
  override readonly name = 'ViewerError';
  constructor(
    readonly status: 400 | 404 | 502,
    readonly code: ViewerErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new ViewerError(400, 'bad-request', message);
export const notFound = (message: string) => new ViewerError(404, 'not-found', message);

/** What the HTTP layer answers for any error: ViewerErrors as they are, blob-store failures as 502s naming the blob. */
export function asViewerError(err: unknown, what: string): ViewerError {
  if (err instanceof ViewerError) return err;
  if (err instanceof BlobNotFoundError) return new ViewerError(502, 'blob-missing', `${what}: ${err.message}`);
  if (err instanceof BlobCorruptError) return new ViewerError(502, 'blob-corrupt', `${what}: ${err.message}`);
  if (err instanceof SyntaxError) return new ViewerError(502, 'blob-unreadable', `${what}: the blob is not the JSON it should be (${err.message})`);
  throw err;
}
