/** Where a run's artifacts are uploaded: the tracking server's proxy URL from the run's artifact URI, or a refusal naming --serve-artifacts. */
import { ArtifactsNotServedError, proxiedArtifactRoot } from '../../src/tracking/mlflow-artifacts';

it('uploads mlflow-artifacts:/ paths through the tracking server, and mlflow-artifacts://host/ ones through that host', () => {
  expect(proxiedArtifactRoot('http://127.0.0.1:5000/', 'mlflow-artifacts:/1/abc/artifacts')).toBe('http://127.0.0.1:5000/api/2.0/mlflow-artifacts/artifacts/1/abc/artifacts');
  expect(proxiedArtifactRoot('https://mlflow.example/prefix', 'mlflow-artifacts:/7/r/artifacts/')).toBe('https://mlflow.example/prefix/api/2.0/mlflow-artifacts/artifacts/7/r/artifacts');
  expect(proxiedArtifactRoot('https://mlflow.example', 'mlflow-artifacts://files.example:8443/1/r/artifacts')).toBe('https://files.example:8443/api/2.0/mlflow-artifacts/artifacts/1/r/artifacts');
});

it('refuses an artifact store the server does not serve (a folder of its machine, s3://), naming --serve-artifacts', () => {
  for (const uri of ['/srv/mlruns/1/abc/artifacts', 'file:///srv/mlruns/1/abc/artifacts', 's3://bucket/1/abc/artifacts']) {
    expect(() => proxiedArtifactRoot('http://127.0.0.1:5000', uri)).toThrow(ArtifactsNotServedError);
    expect(() => proxiedArtifactRoot('http://127.0.0.1:5000', uri)).toThrow(/--serve-artifacts/);
  }
});
