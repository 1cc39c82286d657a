import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { BlobRef } from '../domain/types';
import { checkBlobName, checkSha256, sha256Hex } from './blob-keys';
import { BlobCorruptError, BlobNotFoundError, type BlobStore } from './blob-store';

/** The callback writeFile: it writes a small file in three steps of libuv's pool, without fs/promises' FileHandle around each. */
const writeFileBytes = promisify(writeFile);

/**
 * Filesystem BlobStore. Every write goes to a temp file first and is then linked or renamed into
 * place, so readers never see half-written blobs and a crash leaves at most a stray temp file.
 * Several worker processes on one host (or a shared mount) may use the same directory.
 */
export class FsBlobStore implements BlobStore {
  /** Folders this store made or found, so a write does not ask for them again (a write that finds one gone makes it again). */
  private readonly folders = new Set<string>();

  constructor(readonly root: string) {}

  async put(bytes: Uint8Array, kind: string): Promise<BlobRef> {
    const sha256 = sha256Hex(bytes);
    const ref: BlobRef = { sha256, bytes: bytes.byteLength, kind };
    const file = this.blobPath(sha256);
    if (await exists(file)) return ref;
    // Content-addressed: a rename over the same blob written meanwhile puts the same bytes there.
    await this.writeAtomically(file, bytes, 'rename');
    return ref;
  }

  async get(ref: BlobRef): Promise<Uint8Array> {
    let bytes: Buffer;
    try {
      bytes = await fs.readFile(this.blobPath(ref.sha256));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BlobNotFoundError(ref);
      throw err;
    }
    const actual = sha256Hex(bytes);
    if (actual !== ref.sha256) throw new BlobCorruptError(ref, actual);
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  has(ref: BlobRef): Promise<boolean> {
    return exists(this.blobPath(ref.sha256));
  }

  async nameIfAbsent(name: string, ref: BlobRef): Promise<BlobRef> {
    const file = this.namePath(name);
    const created = await this.writeAtomically(file, Buffer.from(JSON.stringify(ref)), 'link');
    if (created) return ref;
    const existing = await this.getName(name);
    if (!existing) throw new Error(`name ${name} vanished while being read`);
    return existing;
  }

  async setName(name: string, ref: BlobRef): Promise<void> {
    await this.writeAtomically(this.namePath(name), Buffer.from(JSON.stringify(ref)), 'rename');
  }

  async getName(name: string): Promise<BlobRef | undefined> {
    try {
      return JSON.parse(await fs.readFile(this.namePath(name), 'utf8')) as BlobRef;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async listNames(prefix: string): Promise<string[]> {
    const base = path.join(this.root, 'names');
    const out: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
      for (const e of entries) {
        const full = path.join(dir, e.name);
        if (e.isDirectory()) await walk(full);
        else if (e.name.endsWith('.json')) out.push(path.relative(base, full).slice(0, -'.json'.length).split(path.sep).join('/'));
      }
    };
    // Only the folder the prefix names is read: a new gateway episode's first call used to walk every
    // name in the store (308 ms at 3,500 names).
    const folder = prefix.slice(0, prefix.lastIndexOf('/') + 1);
    if (folder !== '') checkBlobName(folder.slice(0, -1));
    await walk(path.join(base, ...folder.split('/').filter((p) => p !== '')));
    return out.filter((n) => n.startsWith(prefix)).sort();
  }

  private blobPath(sha256: string): string {
    checkSha256(sha256);
    return path.join(this.root, 'blobs', sha256.slice(0, 2), sha256.slice(2));
  }

  private namePath(name: string): string {
    checkBlobName(name);
    return path.join(this.root, 'names', `${name}.json`);
  }

  /**
   * mode 'link': create only if absent (returns false when the target exists).
   * mode 'rename': replace atomically.
   */
  private async writeAtomically(file: string, bytes: Uint8Array, mode: 'link' | 'rename'): Promise<boolean> {
    const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    await this.writeInFolder(tmp, bytes);
    let renamed = false;
    try {
      if (mode === 'rename') {
        await fs.rename(tmp, file);
        renamed = true;
        return true;
      }
      try {
        await fs.link(tmp, file);
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw err;
      }
    } finally {
      // A linked temp is a second name for the file; a failed rename leaves the temp where it was.
      if (!renamed) await fs.rm(tmp, { force: true });
    }
  }

  /** Writes `file`, making its folder first when this store has not seen it. */
  private async writeInFolder(file: string, bytes: Uint8Array): Promise<void> {
    const folder = path.dirname(file);
    if (!this.folders.has(folder)) {
      await fs.mkdir(folder, { recursive: true });
      this.folders.add(folder);
    }
    try {
      await writeFileBytes(file, bytes);
    } catch (err) {
      // Someone removed the folder since (a cleaned-up store): make it again, once.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await fs.mkdir(folder, { recursive: true });
      await writeFileBytes(file, bytes);
    }
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}
