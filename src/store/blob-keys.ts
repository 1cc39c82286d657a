/**
 * What every blob store accepts as a blob digest or a name, in one place: the filesystem store
 * turns them into paths and the S3 store into object keys, so both must refuse the same inputs
 * (nothing that could climb out of the store's root or prefix).
 */
import { createHash } from 'node:crypto';

const NAME_RE = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Returns the digest, or throws RangeError if it is not 64 lowercase hex digits. */
export function checkSha256(sha256: string): string {
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw new RangeError(`not a sha256 hex digest: ${JSON.stringify(sha256)}`);
  return sha256;
}

/** Returns the name, or throws RangeError unless it is "/"-separated segments of [A-Za-z0-9._-], none "." or "..". */
export function checkBlobName(name: string): string {
  if (!NAME_RE.test(name) || name.split('/').some((p) => p === '.' || p === '..')) {
    throw new RangeError(`invalid blob name ${JSON.stringify(name)}: use path segments of letters, digits, ".", "_", "-"`);
  }
  return name;
}
