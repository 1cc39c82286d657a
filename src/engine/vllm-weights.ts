/**
 * Weight sync with a vLLM server (its development-mode endpoints, VLLM_SERVER_DEV_MODE=1): new
 * weights, exported as a Hugging Face directory the server can read, are loaded in place with
 * `reload_weights` while generation is paused, the prefix cache (KV of the old weights) is dropped,
 * and the server's own weight version is set, so each request can be checked against it.
 * Measured on this project's 0.5M policy: tens of milliseconds (docs/remote-engines.md); a restart
 * of the server instead takes about a minute on 2 cores.
 */
import { classifyError, errorMessage, RemoteEngineRequestError } from './openai-engine';

/** The server root (no /v1) of an OpenAI base URL. */
export function serverRoot(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
}

async function call(root: string, method: 'GET' | 'POST', route: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${root}${route}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(120_000),
  });
  const parsed = (await res.json().catch(() => undefined)) as unknown;
  if (res.status === 404) throw new RemoteEngineRequestError(404, 'server-config', `remote engine ${root} has no ${route.split('?')[0]}: weight sync needs vLLM started with VLLM_SERVER_DEV_MODE=1`);
  if (!res.ok) throw classifyError(res.status, errorMessage(parsed) ?? res.statusText, `${root}${route}`);
  return parsed;
}

/** The label a server carries while its weights are being replaced: no request served under it is accepted. */
export const SYNCING_VERSION = 'syncing';

/** Loads the weights in `dir` (a directory the server's machine can read) and labels them `version`. */
export async function reloadVllmWeights(baseUrl: string, dir: string, version: number | string): Promise<void> {
  const root = serverRoot(baseUrl);
  // Requests in flight finish on the old weights; new ones wait until resume.
  await call(root, 'POST', '/pause?mode=wait');
  try {
    // Unlabelled first: if the reload fails half-way the server resumes with weights that are
    // neither version, and a label that is no number makes every request on them retry.
    await call(root, 'POST', '/update_weight_version', { new_version: SYNCING_VERSION });
    await call(root, 'POST', '/collective_rpc', { method: 'reload_weights', kwargs: { weights_path: dir } });
    await call(root, 'POST', '/reset_prefix_cache');
    await call(root, 'POST', '/update_weight_version', { new_version: String(version) });
  } finally {
    await call(root, 'POST', '/resume');
  }
}

/** The weight version the server says it serves (null before any update). */
export async function servedWeightVersion(baseUrl: string): Promise<string | null> {
  const body = (await call(serverRoot(baseUrl), 'GET', '/weight_info')) as { weight_version?: string | null };
  return body.weight_version ?? null;
}

/** The server's token ids for a text (vLLM's /tokenize), or undefined when it has no such route. */
export async function serverTokenize(baseUrl: string, model: string, text: string): Promise<number[] | undefined> {
  const res = await fetch(`${serverRoot(baseUrl)}/tokenize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt: text, add_special_tokens: false }),
    signal: AbortSignal.timeout(30_000),
  });
  if (res.status === 404) return undefined;
  const body = (await res.json().catch(() => undefined)) as { tokens?: number[] } | undefined;
  if (!res.ok || !Array.isArray(body?.tokens)) throw classifyError(res.status, errorMessage(body) ?? 'no tokens', `${serverRoot(baseUrl)}/tokenize`);
  return body.tokens;
}

/**
 * The served name of a LoRA policy's adapter: the served model's name and the weights' content
 * address, so each version's adapter is a name of its own (no adapter is ever replaced in place, the
 * pitfall of vLLM's load_inplace that prime-rl and SkyRL work around) and a request names exactly the
 * weights it was sent for.
 */
export function loraModelName(model: string, weightsSha256: string): string {
  return `${model}-lora-${weightsSha256.slice(0, 16)}`;
}

/**
 * Serves the LoRA adapter in `adapterDir` under `name`, on the base in `baseDir` (labelled
 * `baseLabel`): the base is reloaded only when the server serves another (the run's RL start, once),
 * then the adapter is loaded at runtime (VLLM_ALLOW_RUNTIME_LORA_UPDATING, --enable-lora). Loading a
 * name the server has already is a success: a retried sync changes nothing.
 */
export async function loadVllmLora(baseUrl: string, o: { baseDir: string; baseLabel: string; adapterDir: string; name: string }): Promise<{ baseReloaded: boolean }> {
  const baseReloaded = (await servedWeightVersion(baseUrl)) !== o.baseLabel;
  if (baseReloaded) await reloadVllmWeights(baseUrl, o.baseDir, o.baseLabel);
  const root = serverRoot(baseUrl);
  const res = await fetch(`${root}/v1/load_lora_adapter`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ lora_name: o.name, lora_path: o.adapterDir }),
    signal: AbortSignal.timeout(120_000),
  });
  const text = await res.text();
  if (res.status === 404) throw new RemoteEngineRequestError(404, 'server-config', `remote engine ${root} has no /v1/load_lora_adapter: a LoRA run needs vLLM started with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`);
  if (!res.ok && !/already been loaded/i.test(text)) throw classifyError(res.status, text.slice(0, 500), `${root}/v1/load_lora_adapter`);
  return { baseReloaded };
}
