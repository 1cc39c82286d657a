/** Choosing the blob store by settings: what is accepted, and errors that name the setting. */
import { parseStoreSpec, storeSettingsFromEnv, StoreConfigError } from '../../src/store/store-spec';

const env = (vars: Record<string, string>) => storeSettingsFromEnv(vars);
const parse = (vars: Record<string, string>) => parseStoreSpec(env(vars), '/default/store', vars);

describe('parseStoreSpec', () => {
  it('defaults to the local folder, and takes any folder', () => {
    expect(parse({})).toEqual({ kind: 'fs', root: '/default/store' });
    expect(parse({ DURABLE_RL_STORE: 'relative/dir' })).toEqual({ kind: 'fs', root: 'relative/dir' });
  });

  it('reads s3://bucket/prefix with endpoint, region and path style', () => {
    expect(parse({ DURABLE_RL_STORE: 's3://my-bucket/runs/a/', DURABLE_RL_S3_ENDPOINT: 'http://127.0.0.1:7070/' })).toEqual({
      kind: 's3',
      bucket: 'my-bucket',
      prefix: 'runs/a',
      endpoint: 'http://127.0.0.1:7070',
      region: 'us-east-1',
      forcePathStyle: true,
    });
    // AWS itself: no endpoint, virtual-hosted style, the region from AWS_REGION unless set.
    expect(parse({ DURABLE_RL_STORE: 's3://my.bucket', AWS_REGION: 'eu-west-1' })).toEqual({ kind: 's3', bucket: 'my.bucket', prefix: '', region: 'eu-west-1', forcePathStyle: false });
    expect(parse({ DURABLE_RL_STORE: 's3://abc', DURABLE_RL_S3_REGION: 'auto', DURABLE_RL_S3_PATH_STYLE: 'true' })).toMatchObject({ region: 'auto', forcePathStyle: true });
  });

  it.each([
    [{ DURABLE_RL_STORE: 's3://Upper' }, /DURABLE_RL_STORE: "s3:\/\/Upper" does not name a valid S3 bucket/],
    [{ DURABLE_RL_STORE: 's3://ab' }, /does not name a valid S3 bucket/],
    [{ DURABLE_RL_STORE: 's3://bucket/a/../b' }, /DURABLE_RL_STORE: the key prefix "a\/..\/b"/],
    [{ DURABLE_RL_STORE: 'gs://bucket' }, /DURABLE_RL_STORE must be a folder or s3:\/\/bucket/],
    [{ DURABLE_RL_STORE: 's3://bucket', DURABLE_RL_S3_ENDPOINT: '127.0.0.1:9000' }, /DURABLE_RL_S3_ENDPOINT must be/],
    [{ DURABLE_RL_STORE: 's3://bucket', DURABLE_RL_S3_ENDPOINT: 'http://h:1/path' }, /DURABLE_RL_S3_ENDPOINT must be scheme:\/\/host\[:port\] with no path/],
    [{ DURABLE_RL_STORE: 's3://bucket', DURABLE_RL_S3_ENDPOINT: 'http://k:s@h:1' }, /DURABLE_RL_S3_ENDPOINT must not carry credentials/],
    [{ DURABLE_RL_STORE: 's3://bucket', DURABLE_RL_S3_PATH_STYLE: 'yes' }, /DURABLE_RL_S3_PATH_STYLE must be true or false/],
    [{ DURABLE_RL_STORE: 's3://bucket', DURABLE_RL_S3_REGION: 'US East' }, /DURABLE_RL_S3_REGION must be a region name/],
    [{ DURABLE_RL_S3_REGION: 'us-east-1' }, /DURABLE_RL_S3_REGION is set, but the blob store "\/default\/store" is a local folder/],
  ])('rejects %j', (vars, message) => {
    expect(() => parse(vars)).toThrow(StoreConfigError);
    expect(() => parse(vars)).toThrow(message);
  });
});
