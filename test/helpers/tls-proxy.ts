/**
 * A TLS front for the test dev server, which speaks only plaintext gRPC: it terminates TLS (the test
 * CA's server certificate), optionally requires a client certificate signed by that CA (mTLS, as
 * Temporal Cloud's certificate auth) or an `authorization: Bearer <key>` header (as its API keys),
 * and forwards each HTTP/2 stream, headers, data and trailers, to the server. What the workers'
 * TLS settings are tested against, in place of a cluster with TLS.
 */
import fs from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { REPO_ROOT } from '../../src/paths';

export const TLS_FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures', 'tls');
const fixture = (name: string) => fs.readFileSync(path.join(TLS_FIXTURES, name));

export interface TlsProxy {
  address: string;
  /** Why the proxy refused TLS handshakes so far (for example a client without a certificate under mTLS). */
  refusedHandshakes: string[];
  stop(): Promise<void>;
}

export async function startTlsProxy(opts: { target: string; clientCert: boolean; apiKey?: string }): Promise<TlsProxy> {
  const upstream = http2.connect(`http://${opts.target}`);
  upstream.on('error', () => undefined);
  const server = http2.createSecureServer({
    key: fixture('server-key.pem'),
    cert: fixture('server.pem'),
    ca: fixture('ca.pem'),
    requestCert: opts.clientCert,
    rejectUnauthorized: opts.clientCert,
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  // Under TLS 1.3 the client may finish its side of the handshake before the server refuses its
  // (missing) certificate, so what the client reports varies with timing ("CertificateRequired"
  // alert or a closed connection); the server's side is the reliable witness.
  const refusedHandshakes: string[] = [];
  server.on('tlsClientError', (err) => refusedHandshakes.push(err.message));
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    if (opts.apiKey !== undefined && headers.authorization !== `Bearer ${opts.apiKey}`) {
      // gRPC's UNAUTHENTICATED, as a trailers-only response.
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'missing or wrong API key' }, { endStream: true });
      return;
    }
    const forwarded: http2.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(headers)) if (!k.startsWith(':') || k === ':method' || k === ':path') forwarded[k] = v;
    const req = upstream.request(forwarded);
    req.on('error', () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    stream.pipe(req);
    let trailers: http2.OutgoingHttpHeaders = {};
    req.on('trailers', (t) => (trailers = withoutPseudo(t)));
    req.on('response', (h, flags) => {
      const endStream = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      stream.respond({ ':status': h[':status'], ...withoutPseudo(h) }, endStream ? { endStream: true } : { waitForTrailers: true });
      if (!endStream) req.pipe(stream);
    });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    // A cancelled long poll (a worker shutting down) cancels the upstream call, and the other way round.
    stream.on('close', () => req.close());
    req.on('close', () => {
      if (!stream.closed && req.rstCode) stream.close(req.rstCode);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    refusedHandshakes,
    stop: async () => {
      for (const session of sessions) session.destroy();
      upstream.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function withoutPseudo(h: http2.IncomingHttpHeaders): http2.OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(h).filter(([k]) => !k.startsWith(':')));
}
