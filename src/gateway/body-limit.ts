/**
 * The request body limit, answered so that clients can read the answer. A server that answers a
 * body over the limit while it is still arriving and then closes the socket resets the connection
 * under a client that is still writing: curl reads the 413, but Node's fetch (and so the official
 * openai client, which then retries) fails with EPIPE. So an oversized body is read to its end and
 * dropped, and answered then; only a body declared larger than DRAINED_BODY_LIMIT is refused at
 * once (its connection closed, as there is no point reading it). How long a client may take to send
 * is bounded by the request timeout either way. Used by both servers through http-server.ts.
 */
import { Transform, type Readable } from 'node:stream';
import { GatewayError } from './errors';

/** The largest request body the embedded gateway serves (documented in docs/gateway.md). */
export const BODY_LIMIT = 4 << 20;
/** The largest oversized body read to its end before its 413 (above any server's limit). */
export const DRAINED_BODY_LIMIT = 64 << 20;

export function bodyTooLarge(limit: number): GatewayError {
  return new GatewayError(413, `the request body is over the gateway's limit of ${limit / (1 << 20)} MiB (${limit} bytes)`, 'invalid_request_error', null, 'request_too_large');
}

/**
 * The body as the parser reads it: up to `limit` bytes passed on, the rest of an oversized body
 * read and dropped, and its 413 raised when it has all come (past DRAINED_BODY_LIMIT, at once). On
 * any parser error fastify answers with `connection: close`.
 */
export function limitBody(payload: Readable, limit: number): Readable {
  let seen = 0;
  const limited = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      // fastify's name for the bytes received, which it compares with content-length.
      (limited as Transform & { receivedEncodedLength: number }).receivedEncodedLength = seen;
      if (seen > DRAINED_BODY_LIMIT) return done(bodyTooLarge(limit));
      done(null, seen > limit ? undefined : chunk);
    },
    flush(done) {
      done(seen > limit ? bodyTooLarge(limit) : null);
    },
  });
  payload.on('error', (err) => limited.destroy(err));
  return payload.pipe(limited);
}
