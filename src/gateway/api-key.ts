/**
 * Who may write training data: the API key of the gateway and the recording proxy, taken as vLLM's
 * OpenAI server takes its own (`--api-key`, else the VLLM_API_KEY environment variable; the flag
 * wins), checked on every request as `Authorization: Bearer <key>` in constant time. Whatever either
 * server records is trained on, so a server other hosts can reach must have one (checkOpenBind).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIPv4 } from 'node:net';
import { GatewayError } from './errors';

/** The environment variable vLLM reads its key from (vllm/envs.py), read here the same way. */
export const API_KEY_ENV = 'VLLM_API_KEY';
/** The upstream's own key for the recording proxy: never the key clients give the proxy. */
export const UPSTREAM_API_KEY_ENV = 'DURABLE_RL_UPSTREAM_API_KEY';

/** A key refused at start: empty, or not sendable in an HTTP header; the message names where it came from. */
export class ApiKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ApiKeyError';
  }
}

/**
 * The key from a flag or, without it, from an environment variable (undefined: neither set). A set
 * but empty value is refused, not read as "no key" as vLLM reads it: an unset secret expanded to ''
 * must not quietly open the server.
 */
export function resolveApiKey(flag: { name: string; value: string | undefined }, env: { name: string; value: string | undefined }): string | undefined {
  if (flag.value !== undefined) return checkApiKey(flag.value, flag.name);
  if (env.value !== undefined) return checkApiKey(env.value, env.name);
  return undefined;
}

/** `key` if a client can send it as a bearer token (visible ASCII, inner spaces allowed), else an ApiKeyError naming `source`. */
export function checkApiKey(key: string, source: string): string {
  if (key === '') throw new ApiKeyError(`${source} is empty; give a key, or leave ${source} out to run without one (loopback only)`);
  // Header values lose leading and trailing spaces and cannot carry control or non-ASCII characters:
  // such a key could never match.
  if (!/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(key)) throw new ApiKeyError(`${source} must be printable ASCII without leading or trailing spaces (clients send it in an HTTP header)`);
  return key;
}

/** True for addresses only this machine reaches: localhost, 127.0.0.0/8 and ::1. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return h === 'localhost' || h === '::1' || (isIPv4(h) && h.startsWith('127.')) || (h.startsWith('::ffff:') && isIPv4(h.slice(7)) && h.slice(7).startsWith('127.'));
}

/** Refuses binding a keyless server where other hosts can reach it: they could write training data. */
export function checkOpenBind(host: string, apiKey: string | undefined, flag = '--api-key'): void {
  if (apiKey !== undefined || isLoopback(host)) return;
  throw new ApiKeyError(`--host ${host} lets other hosts reach this server, and whatever it records is trained on: give a key with ${flag} or ${API_KEY_ENV}, or bind to loopback (127.0.0.1, ::1, localhost)`);
}

/**
 * A check of the Authorization header against `key`: both sides hashed to 32 bytes and compared with
 * timingSafeEqual (as vLLM does), so neither the key's length nor its prefix shows in the timing.
 * Throws the 401 a client library reads as an authentication error.
 */
export function bearerCheck(key: string): (authorization: string | undefined) => void {
  const want = createHash('sha256').update(key, 'utf8').digest();
  return (authorization) => {
    // "Bearer <key>", the scheme in any case (RFC 7235), as vLLM splits it.
    const space = authorization?.indexOf(' ') ?? -1;
    if (authorization === undefined || space < 0 || authorization.slice(0, space).toLowerCase() !== 'bearer') {
      throw new GatewayError(401, 'This server requires an API key: send it as `Authorization: Bearer <key>` (the OpenAI clients send their api_key so)', 'invalid_request_error', null, 'invalid_api_key');
    }
    const given = createHash('sha256').update(authorization.slice(space + 1), 'utf8').digest();
    if (!timingSafeEqual(given, want)) throw new GatewayError(401, 'Incorrect API key provided', 'invalid_request_error', null, 'invalid_api_key');
  };
}
