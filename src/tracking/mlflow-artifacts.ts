/**
 * A run's files uploaded as MLflow artifacts through the tracking server's artifact proxy
 * (`mlflow server --serve-artifacts`, MLflow 3's default): a run whose artifact URI is
 * mlflow-artifacts:/<experiment>/<run>/artifacts takes PUT <server>/api/2.0/mlflow-artifacts/artifacts/<that path>/<file>.
 * An upload to a path that holds a file replaces it (checked against mlflow server 3.17.2), so a
 * retried upload leaves the same artifacts.
 */
import { mlflowCall, mlflowRequest, type MlflowEndpoint } from './mlflow-client';
import type { MlflowRunRef } from '../contracts/tracking';

export interface ArtifactFile {
  /** Relative path under the run's artifact root, e.g. comparison.md. */
  path: string;
  bytes: Uint8Array | string;
  contentType: string;
}

/** The run's artifacts are stored where the tracking server does not proxy them: no retry changes that. */
export class ArtifactsNotServedError extends Error {
  override readonly name = 'ArtifactsNotServedError';
}

/**
 * The URL the server takes the run's artifacts at, from the run's artifact URI: mlflow-artifacts:/p
 * under the tracking URI, mlflow-artifacts://host:port/p on that host (the tracking URI's scheme).
 * Any other store (s3://, a folder of the server's machine) is the client's to write, which this
 * client does not: refused with ArtifactsNotServedError.
 */
export function proxiedArtifactRoot(trackingUri: string, artifactUri: string): string {
  const m = /^mlflow-artifacts:(?:\/\/([^/]+))?(\/.*)$/.exec(artifactUri);
  if (!m) {
    throw new ArtifactsNotServedError(
      `the MLflow server at ${trackingUri} stores this run's artifacts at ${artifactUri}, which it does not serve: start it with --serve-artifacts (the default of mlflow server 3)`,
    );
  }
  const base = new URL(trackingUri);
  const origin = m[1] ? `${base.protocol}//${m[1]}` : trackingUri.replace(/\/+$/, '');
  return `${origin}/api/2.0/mlflow-artifacts/artifacts${m[2]!.replace(/\/+$/, '')}`;
}

/** The run's artifact URI (runs/get), as the server chose it when the run was made. */
export async function runArtifactUri(ep: MlflowEndpoint, run: MlflowRunRef): Promise<string> {
  const res = await mlflowCall<{ run: { info: { artifact_uri: string } } }>(ep, 'GET', 'runs/get', { run_id: run.runId });
  return res.run.info.artifact_uri;
}

/** Uploads `files` to the run's artifacts, each replacing what its path held; `afterEach` after each upload (heartbeats). */
export async function logArtifacts(ep: MlflowEndpoint, run: MlflowRunRef, files: ArtifactFile[], afterEach?: (done: number) => void): Promise<void> {
  const root = proxiedArtifactRoot(ep.uri, await runArtifactUri(ep, run));
  let done = 0;
  for (const f of files) {
    const url = `${root}/${f.path.split('/').map(encodeURIComponent).join('/')}`;
    await mlflowRequest(ep, 'PUT', url, `the artifact ${f.path}`, { body: f.bytes, contentType: f.contentType });
    afterEach?.(++done);
  }
}

/** The run's artifact paths and sizes (artifacts/list, one folder). */
export async function listArtifacts(ep: MlflowEndpoint, run: MlflowRunRef, folder?: string): Promise<Array<{ path: string; is_dir: boolean; file_size?: number }>> {
  const res = await mlflowCall<{ files?: Array<{ path: string; is_dir: boolean; file_size?: number }> }>(ep, 'GET', 'artifacts/list', { run_id: run.runId, ...(folder ? { path: folder } : {}) });
  return res.files ?? [];
}
