/**
 * The HTTP server both OpenAI-compatible servers stand on, the embedded gateway (server.ts) and the
 * recording proxy (upstream-proxy.ts): fastify with the documented request timeout enforced on time,
 * a body limit answered with a 413 clients can read (body-limit.ts), errors in OpenAI's shape, and
 * the API key (api-key.ts) checked before anything else.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { bearerCheck, checkApiKey } from './api-key';
import { bodyTooLarge, DRAINED_BODY_LIMIT, limitBody } from './body-limit';
import { GatewayError } from './errors';

/** The documented 30 s a client has to send its request (docs/gateway.md). */
export const REQUEST_TIMEOUT_MS = 30_000;

export interface HttpServerOptions {
  /** The largest request body served; a larger one is a 413 once it has come. At most DRAINED_BODY_LIMIT. */
  bodyLimit: number;
  /** How long a client has to send its request, and an open connection may send nothing (default REQUEST_TIMEOUT_MS). */
  requestTimeoutMs?: number;
  /** The server's own errors that are not GatewayErrors, as one (undefined: handled as any error). */
  knownError?: (err: Error) => GatewayError | undefined;
  /** Every route but GET /health then requires `Authorization: Bearer <apiKey>` (undefined: none does). */
  apiKey?: string;
}

/** The routes open without the key: liveness only (vLLM guards /v1 and leaves /health open). */
const OPEN_ROUTES = new Set(['/health']);

export function createHttpServer(opts: HttpServerOptions): FastifyInstance {
  if (opts.bodyLimit > DRAINED_BODY_LIMIT) throw new Error(`bodyLimit ${opts.bodyLimit} is over DRAINED_BODY_LIMIT (${DRAINED_BODY_LIMIT})`);
  // A client gets the timeout to send its headers and its whole request, and a connection that sends
  // nothing for as long (before its first request or after a response) is closed. Node checks the
  // first two only every connectionsCheckingInterval (30 s by default, so a 30 s timeout fired after
  // up to 60 s, and 89 s was seen): every second here, or a quarter of a shorter timeout. A generation
  // may take longer: once the request is in, the timeout no longer counts. Closing the server closes
  // open connections instead of waiting on them.
  const timeout = opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const app = Fastify({
    logger: false,
    // opts.bodyLimit is enforced by limitBody (a 413 once the body has come); fastify's own limit,
    // which answers while the body still arrives, only past what limitBody would read.
    bodyLimit: DRAINED_BODY_LIMIT,
    requestTimeout: timeout,
    keepAliveTimeout: timeout,
    http: { headersTimeout: timeout, connectionsCheckingInterval: Math.min(1_000, Math.ceil(timeout / 4)) },
    forceCloseConnections: true,
  });

  app.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
    const known = err instanceof GatewayError ? err : opts.knownError?.(err);
    if (known) return reply.status(known.status).send(known.toJSON());
    // Fastify's own 4xx (malformed JSON, wrong content type) keep their status.
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.status(err.statusCode).send(new GatewayError(err.statusCode, `invalid request: ${err.message}`).toJSON());
    }
    return reply.status(500).send(new GatewayError(500, `internal error: ${err.message}`, 'server_error').toJSON());
  });
  if (opts.apiKey !== undefined) {
    const check = bearerCheck(checkApiKey(opts.apiKey, 'apiKey'));
    // Before the body is read or a route runs: a request without the key is neither served,
    // forwarded nor recorded. Decided on the route matched, not on the URL's text, so no spelling of
    // a path (percent-escapes, say) reaches a guarded route unchecked; unknown paths are guarded too.
    app.addHook('onRequest', async (req, reply) => {
      if (req.routeOptions.url !== undefined && OPEN_ROUTES.has(req.routeOptions.url)) return;
      reply.header('www-authenticate', 'Bearer');
      check(req.headers.authorization);
      reply.removeHeader('www-authenticate');
    });
  }
  // A body over the limit is answered once it has come; one declared larger than would be read is
  // refused at once, and its connection closed.
  app.addHook('preParsing', async (req, reply, payload) => {
    if (Number(req.headers['content-length']) > DRAINED_BODY_LIMIT) {
      reply.header('connection', 'close');
      throw bodyTooLarge(opts.bodyLimit);
    }
    return limitBody(payload, opts.bodyLimit);
  });
  return app;
}
