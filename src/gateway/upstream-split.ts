/**
 * Texts and message boundaries for a recorded call, from the upstream engine itself (vLLM's
 * `/tokenize` and `/detokenize`, served next to its /v1 API), so nothing is re-tokenized here:
 *
 *  - a chat prompt is split where the engine's own chat template ends each message: every prefix of
 *    the messages is tokenized (`add_generation_prompt: false`, and before each assistant message
 *    `true`, which splits a template's assistant header from the turn), and a prefix whose ids begin
 *    the engine's prompt ids marks a boundary. The pieces are slices of the engine's prompt ids, so
 *    they always concatenate to exactly what the engine saw; a template that renders a prefix
 *    differently (or an engine without /tokenize) gives fewer boundaries, at worst one message;
 *  - every piece's text, and the output's, is the engine's decoding of its ids (special tokens
 *    kept), so a reply sent back in a later call compares equal to the output it was.
 *
 * Both endpoints' answers are cached, within a budget (an agent's calls repeat their prefixes every
 * turn). Cost of a recorded chat call, uncached: one /tokenize per message (two before an assistant
 * message), one /detokenize per piece and per choice, at most 8 at once.
 */
import { createHash } from 'node:crypto';
import type { PromptMessage } from '../timeline/capture';
import { GatewayError } from './errors';
import { isObject, type JsonObject } from './upstream-tokens';

/** At most this many tokenize or detokenize requests of one call in flight at once. */
const PARALLEL = 8;
/** What the caches may hold, in characters of text (each entry counts at least 100). */
const CACHE_CHARS = 16 << 20;

export interface UpstreamTokens {
  /**
   * How many of `prompt`'s ids the engine's rendering of this chat request is, when that rendering
   * is exactly the beginning of `prompt`; undefined when it is not, or the engine cannot render it.
   */
  chatPrefix(request: JsonObject, prompt: readonly number[], auth: string | undefined): Promise<number | undefined>;
  /** The engine's text of these ids; throws a 502 naming /detokenize when the upstream cannot. */
  detokenize(model: string, ids: readonly number[], auth: string | undefined): Promise<string>;
}

/** A map that forgets its least recently used entries beyond a budget of characters. */
class Lru<V> {
  private readonly map = new Map<string, { v: V; cost: number }>();
  private size = 0;
  constructor(private readonly cost: (v: V) => number) {}
  get(key: string): V | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    this.map.delete(key);
    this.map.set(key, e);
    return e.v;
  }
  set(key: string, v: V): void {
    const old = this.map.get(key);
    if (old) this.size -= old.cost;
    this.map.delete(key);
    const cost = Math.max(100, key.length + this.cost(v));
    this.map.set(key, { v, cost });
    this.size += cost;
    for (const [k, e] of this.map) {
      if (this.size <= CACHE_CHARS) break;
      this.map.delete(k);
      this.size -= e.cost;
    }
  }
}

const digest = (text: string): string => createHash('sha256').update(text).digest('base64');
const idsDigest = (ids: readonly number[]): string => digest(ids.join(','));

/** `root`: the upstream's server root (vLLM serves /tokenize beside /v1, not under it). */
export function upstreamTokens(root: string): UpstreamTokens {
  // A rendering is kept as its length and digest (a long chat's renderings would be megabytes).
  const rendered = new Lru<{ n: number; digest: string }>(() => 50);
  const texts = new Lru<string>((t) => t.length);
  const post = (path: string, body: JsonObject, auth: string | undefined) =>
    fetch(`${root}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) }, body: JSON.stringify(body) });
  return {
    async chatPrefix(request, prompt, auth) {
      const key = digest(JSON.stringify(request));
      let hit = rendered.get(key);
      if (!hit) {
        const res = await post('/tokenize', request, auth).catch(() => undefined);
        if (!res?.ok) return undefined;
        const body: unknown = await res.json().catch(() => undefined);
        const tokens = isObject(body) && Array.isArray(body.tokens) && body.tokens.every((t) => Number.isInteger(t)) ? (body.tokens as number[]) : undefined;
        if (!tokens) return undefined;
        rendered.set(key, (hit = { n: tokens.length, digest: idsDigest(tokens) }));
      }
      return hit.n <= prompt.length && idsDigest(prompt.slice(0, hit.n)) === hit.digest ? hit.n : undefined;
    },
    async detokenize(model, ids, auth) {
      const key = digest(`${model}\u0000${ids.join(',')}`);
      const hit = texts.get(key);
      if (hit !== undefined) return hit;
      const fail = (why: string) =>
        new GatewayError(502, `the upstream's ${root}/detokenize ${why}; the proxy records each message's text as the engine decodes its ids, so this call was not recorded`, 'server_error', null, 'upstream_detokenize_failed');
      const res = await post('/detokenize', { model, tokens: ids }, auth).catch((err: unknown) => {
        throw fail(`could not be reached (${err instanceof Error ? err.message : String(err)})`);
      });
      if (!res.ok) throw fail(`answered ${res.status}: ${(await res.text().catch(() => '')).slice(0, 200)}`);
      const body: unknown = await res.json().catch(() => undefined);
      if (!isObject(body) || typeof body.prompt !== 'string') throw fail('answered without a `prompt` text');
      texts.set(key, body.prompt);
      return body.prompt;
    },
  };
}

/** Runs `f` on every item with at most PARALLEL in flight; results in input order. */
export async function inParallel<T, R>(items: readonly T[], f: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await f(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker));
  return out;
}

/** The request fields that change how the engine renders a chat (sent with every prefix). */
const RENDER_FIELDS = ['model', 'tools', 'chat_template', 'chat_template_kwargs', 'add_special_tokens'] as const;

/**
 * Where the engine's prompt ids `prompt` divide into the chat's messages: the lengths of the
 * tokenized prefixes that begin `prompt`, strictly inside it, ascending.
 */
export async function chatBoundaries(tokens: UpstreamTokens, body: JsonObject, prompt: readonly number[], auth: string | undefined): Promise<number[]> {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const base: JsonObject = {};
  for (const f of RENDER_FIELDS) if (body[f] !== undefined) base[f] = body[f];
  const requests: JsonObject[] = [];
  for (let k = 1; k <= messages.length; k++) {
    requests.push({ ...base, messages: messages.slice(0, k), add_generation_prompt: false });
    const m: unknown = messages[k];
    if (k < messages.length && isObject(m) && m.role === 'assistant') requests.push({ ...base, messages: messages.slice(0, k), add_generation_prompt: true });
  }
  const lengths = await inParallel(requests, (r) => tokens.chatPrefix(r, prompt, auth));
  const cuts = lengths.filter((n): n is number => n !== undefined && n > 0 && n < prompt.length);
  return [...new Set(cuts)].sort((a, b) => a - b);
}

/** The prompt ids cut at `bounds`, each piece with the engine's text of it. */
export async function promptMessages(tokens: UpstreamTokens, model: string, prompt: readonly number[], bounds: readonly number[], auth: string | undefined): Promise<PromptMessage[]> {
  const edges = [0, ...bounds, prompt.length];
  const pieces = edges.slice(0, -1).map((start, i) => prompt.slice(start, edges[i + 1]));
  const texts = await inParallel(pieces, (ids) => tokens.detokenize(model, ids, auth));
  return pieces.map((tokenIds, i) => ({ text: texts[i]!, tokenIds }));
}
