/**
 * A small client of MLflow's tracking REST API (https://mlflow.org/docs/latest/rest-api.html), the
 * calls a run needs: experiments, runs found by a tag, log-batch, status, artifact uploads. MLflow
 * ships no client for Node; the API is plain JSON over HTTP. Credentials, if the server needs them,
 * come from the environment as MLflow's own client reads them: MLFLOW_TRACKING_USERNAME and
 * MLFLOW_TRACKING_PASSWORD (basic auth, what `mlflow server --app-name basic-auth` takes), else
 * MLFLOW_TRACKING_TOKEN (a bearer token).
 */

/** A refusal or failure of the tracking server: HTTP status and MLflow's error code when it answered, none when unreachable. */
export class MlflowError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly errorCode?: string,
  ) {
    super(message);
    this.name = 'MlflowError';
  }

  /** Nothing answered (refused, reset, DNS, timeout). */
  get unreachable(): boolean {
    return this.status === undefined;
  }

  /** The server refused the credentials (or asked for some). */
  get unauthorized(): boolean {
    return this.status === 401 || this.status === 403;
  }

  /** A retry may succeed: unreachable, rate-limited, or a server-side failure. */
  get transient(): boolean {
    return this.status === undefined || this.status === 429 || this.status >= 500;
  }
}

export interface MlflowEndpoint {
  uri: string;
  /** Default: MLFLOW_TRACKING_TOKEN from the environment. */
  token?: string;
  /** Basic auth, taken before a token as MLflow's client does. Default: MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD. */
  username?: string;
  password?: string;
  timeoutMs?: number;
}

/** The credentials `ep` sends: basic auth when a user name and password are set, else a bearer token, else none. */
export function mlflowCredentials(ep: MlflowEndpoint): { header?: string; described: string } {
  const username = ep.username ?? process.env.MLFLOW_TRACKING_USERNAME;
  const password = ep.password ?? process.env.MLFLOW_TRACKING_PASSWORD;
  if (username && password) return { header: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`, described: `user '${username}' and a password (MLFLOW_TRACKING_USERNAME, MLFLOW_TRACKING_PASSWORD)` };
  const token = ep.token ?? process.env.MLFLOW_TRACKING_TOKEN;
  if (token) return { header: `Bearer ${token}`, described: 'a token (MLFLOW_TRACKING_TOKEN)' };
  return { described: 'no credentials' };
}

export async function mlflowCall<T>(ep: MlflowEndpoint, method: 'GET' | 'POST', api: string, body?: Record<string, unknown>): Promise<T> {
  let url = `${ep.uri.replace(/\/+$/, '')}/api/2.0/mlflow/${api}`;
  if (method === 'GET' && body) url += `?${new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, String(v)])).toString()}`;
  const text = await mlflowRequest(ep, method, url, api, method === 'POST' ? { body: JSON.stringify(body ?? {}), contentType: 'application/json' } : undefined);
  return (text ? JSON.parse(text) : {}) as T;
}

/**
 * One request to the server (`url` under ep.uri; `what` names it in errors): the answer's text, or
 * an MlflowError with the status and MLflow's error code. The REST calls above and the artifact
 * uploads (src/tracking/mlflow-artifacts.ts) share it.
 */
export async function mlflowRequest(
  ep: MlflowEndpoint,
  method: 'GET' | 'POST' | 'PUT',
  url: string,
  what: string,
  content?: { body: string | Uint8Array; contentType: string },
): Promise<string> {
  const auth = mlflowCredentials(ep).header;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: { 'content-type': content?.contentType ?? 'application/json', ...(auth ? { authorization: auth } : {}) },
      ...(content ? { body: content.body } : {}),
      signal: AbortSignal.timeout(ep.timeoutMs ?? 30_000),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new MlflowError(`no MLflow server answered at ${ep.uri} (${cause?.code ?? cause?.message ?? (err as Error).message})`);
  }
  const text = await res.text();
  if (!res.ok) {
    let code: string | undefined;
    let message = text.slice(0, 500);
    try {
      const j = JSON.parse(text) as { error_code?: string; message?: string };
      code = j.error_code;
      message = j.message ?? message;
    } catch {
      // Not JSON (a proxy's page): the text as it came.
    }
    throw new MlflowError(`MLflow at ${ep.uri} answered ${res.status}${code ? ` ${code}` : ''} to ${what}: ${message}`, res.status, code);
  }
  return text;
}
