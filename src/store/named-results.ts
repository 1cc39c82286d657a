/**
 * Named results keyed by what they were made from, not only by where they sit (issue 36).
 *
 * A name such as runs/<id>/weights/v000000 says where a result is; it said nothing of what the
 * result was made from. A second start under the same workflow id whose inputs resolved differently
 * (an init.fromRun / weightsFromRun source that had trained further) found the first start's
 * result under the name and took it as its own: it trained one policy and served another.
 *
 * So each named result has a record beside it, `made-from/<name>`, listing what it was made from
 * (content addresses of checkpoints and data, digests of config sections, numbers), and is read and
 * written only through claimNamedResult / namedResult / onceByName:
 *  - the record is created (only if absent) before the result is, so of the attempts that may write
 *    the result only those made from the recorded inputs get past the claim; any other is refused
 *    (NamedResultConflictError) whether the result exists yet or not, naming what differs;
 *  - the same inputs reuse the result: a retried attempt finds its own (exactly once), and a re-run
 *    of the same config under the same id reuses what was finished;
 *  - a name without a record was written by the code before records (a run in flight across the
 *    upgrade, or a store written by it): the result is adopted as made from the inputs of the first
 *    attempt that finds it, whose record is written then, after the caller's check of the result
 *    itself where one is possible (published weights: the step their ONNX metadata names).
 *
 * Two names cannot be written atomically together in either store; the order does it instead:
 * record first, then result, both create-only. A crash between the two leaves a record without a
 * result, which an attempt with the same inputs completes and one with other inputs is refused by.
 */
import type { BlobRef } from '../domain/types';
import { sha256Hex } from './blob-keys';
import { getJson, putJson, type BlobStore } from './blob-store';

/** What a result was made from: labelled inputs, each a short text (a content address, a digest, a number). */
export type MadeFrom = Readonly<Record<string, string>>;

export interface NamedResultSpec {
  name: string;
  /** The result in words, for errors, e.g. "published weights v0 of workflow id 'F2'". */
  what: string;
  madeFrom: MadeFrom;
  /**
   * A result written before records existed: why it cannot have been made from `madeFrom`, or
   * undefined to adopt it.
   */
  checkUnrecorded?: (ref: BlobRef) => Promise<string | undefined>;
}

/** How one input of a named result differs between its record and this attempt ("(none)" where one side lacks it). */
export interface InputDifference {
  input: string;
  recorded: string;
  requested: string;
}

/** A named result that was (or is being) made from other inputs than this attempt's. */
export class NamedResultConflictError extends Error {
  override readonly name = 'NamedResultConflictError';
  constructor(
    readonly resultName: string,
    readonly what: string,
    /** Input by input, or why a result written before records cannot be this attempt's. */
    readonly differences: InputDifference[] | string,
  ) {
    super(
      typeof differences === 'string'
        ? `${what} (${resultName}) ${differences}`
        : `${what} (${resultName}) came from ${differences.map((d) => `${d.input} ${d.recorded}`).join(', ')}; this start's ${differences.map((d) => `${d.input} is ${d.requested}`).join(', ')}`,
    );
  }
}

interface MadeFromRecord {
  version: 1;
  name: string;
  madeFrom: MadeFrom;
}

/** Where the record of what `name`'s result was made from sits: outside runs/, so no listing of a run's names meets it. */
export function madeFromName(name: string): string {
  return `made-from/${name}`;
}

/** A content address (sha256) of a JSON value, such as a config section: what a record lists for it. */
export function jsonDigest(value: unknown): string {
  return sha256Hex(new TextEncoder().encode(JSON.stringify(value ?? null)));
}

/**
 * Claims `spec.name` for a result made from `spec.madeFrom`: returns the result already named (made
 * from the same inputs, or adopted from before records), or undefined when there is none yet and
 * this attempt may make it. Throws NamedResultConflictError when the name is claimed for other inputs.
 */
export async function claimNamedResult(store: BlobStore, spec: NamedResultSpec): Promise<BlobRef | undefined> {
  const recordName = madeFromName(spec.name);
  const mine = await putJson(store, { version: 1, name: spec.name, madeFrom: spec.madeFrom } satisfies MadeFromRecord, 'made-from');
  let held = await store.getName(recordName);
  if (!held) {
    const unrecorded = await store.getName(spec.name);
    const why = unrecorded && spec.checkUnrecorded ? await spec.checkUnrecorded(unrecorded) : undefined;
    if (why) throw new NamedResultConflictError(spec.name, spec.what, why);
    held = await store.nameIfAbsent(recordName, mine);
  }
  if (held.sha256 !== mine.sha256) {
    const recorded = (await getJson<MadeFromRecord>(store, held)).madeFrom;
    const differences = compareInputs(recorded, spec.madeFrom);
    if (differences.length > 0) throw new NamedResultConflictError(spec.name, spec.what, differences);
  }
  return store.getName(spec.name);
}

/**
 * The result named `spec.name`, made from `spec.madeFrom`: the one an earlier attempt with the same
 * inputs stored, else `make`'s, named (the first writer's when attempts race). Refused with
 * NamedResultConflictError when the name holds, or was claimed for, a result of other inputs.
 */
export async function namedResult(store: BlobStore, spec: NamedResultSpec, make: () => Promise<BlobRef>): Promise<BlobRef> {
  const done = await claimNamedResult(store, spec);
  if (done) return done;
  return store.nameIfAbsent(spec.name, await make());
}

/**
 * Exactly-once results for retried activities, keyed by their inputs: returns the value an earlier
 * attempt made from the same inputs stored under `spec.name`, else computes it, stores it and names
 * it, keeping the first writer's value if two attempts race. Whatever `compute` writes must itself be
 * idempotent (content-addressed blobs, names created only if absent).
 */
export async function onceByName<T>(store: BlobStore, spec: NamedResultSpec, kind: string, compute: () => Promise<T>): Promise<T> {
  const done = await claimNamedResult(store, spec);
  if (done) return getJson<T>(store, done);
  const value = await compute();
  const mine = await putJson(store, value, kind);
  const stored = await store.nameIfAbsent(spec.name, mine);
  return stored.sha256 === mine.sha256 ? value : getJson<T>(store, stored);
}

function compareInputs(recorded: MadeFrom, requested: MadeFrom): InputDifference[] {
  const inputs = [...new Set([...Object.keys(recorded), ...Object.keys(requested)])];
  return inputs
    .filter((k) => recorded[k] !== requested[k])
    .map((input) => ({ input, recorded: recorded[input] ?? '(none)', requested: requested[input] ?? '(none)' }));
}
