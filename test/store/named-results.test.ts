/**
 * Named results keyed by what they were made from (src/store/named-results.ts), on both stores: the
 * local folder and S3 (the real S3-compatible server global-setup starts). Same inputs reuse the
 * result exactly once; other inputs are refused, naming what differs; names written before records
 * are adopted (or refused by the caller's check).
 */
import { getJson, putJson, type BlobStore } from '../../src/store/blob-store';
import { claimNamedResult, madeFromName, namedResult, NamedResultConflictError, onceByName, type NamedResultSpec } from '../../src/store/named-results';
import { testS3 } from '../helpers/s3';
import { tempStore } from '../helpers/store';

const s3 = testS3();
const STORES: Array<[string, (label: string) => BlobStore]> = [
  ['FsBlobStore', (label) => tempStore(label)],
  ['S3BlobStore', (label) => s3.store(label)],
];

const NAME = 'runs/F2/weights/v000000';
const spec = (checkpoint: string, extra: Partial<NamedResultSpec> = {}): NamedResultSpec => ({
  name: NAME,
  what: "published weights v0 of workflow id 'F2'",
  madeFrom: { checkpoint, config: 'c1' },
  ...extra,
});

describe.each(STORES)('%s', (_label, make) => {
  it('computes once for the same inputs: a retry gets the first attempt\'s value, racing attempts one value', async () => {
    const store = make('named-once');
    let calls = 0;
    const compute = async () => ({ attempt: ++calls });
    expect(await onceByName(store, spec('a (step 202)'), 'sft-chunk', compute)).toEqual({ attempt: 1 });
    expect(await onceByName(store, spec('a (step 202)'), 'sft-chunk', compute)).toEqual({ attempt: 1 });
    // The same inputs listed in another order are the same inputs.
    expect(await onceByName(store, { ...spec(''), madeFrom: { config: 'c1', checkpoint: 'a (step 202)' } }, 'sft-chunk', compute)).toEqual({ attempt: 1 });
    expect(calls).toBe(1);
    const raced = await Promise.all([0, 1, 2].map(() => onceByName(store, { ...spec('b'), name: 'x/y' }, 'k', compute)));
    expect(new Set(raced.map((r) => r.attempt)).size).toBe(1);
  });

  it('refuses other inputs, naming the result and each input that differs, and leaves the result as it was', async () => {
    const store = make('named-other');
    const first = await namedResult(store, spec('a (step 202)'), () => putJson(store, 'v0 of step 202', 'onnx'));
    const err = await namedResult(store, spec('b (step 208)'), () => putJson(store, 'v0 of step 208', 'onnx')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NamedResultConflictError);
    const conflict = err as NamedResultConflictError;
    expect(conflict.message).toBe("published weights v0 of workflow id 'F2' (runs/F2/weights/v000000) came from checkpoint a (step 202); this start's checkpoint is b (step 208)");
    expect(conflict.differences).toEqual([{ input: 'checkpoint', recorded: 'a (step 202)', requested: 'b (step 208)' }]);
    expect(await store.getName(NAME)).toEqual(first);
    // An input one side lacks differs too.
    await expect(namedResult(store, { ...spec('a (step 202)'), madeFrom: { checkpoint: 'a (step 202)' } }, () => putJson(store, 'x', 'onnx'))).rejects.toMatchObject({
      differences: [{ input: 'config', recorded: 'c1', requested: '(none)' }],
    });
    // The record lives outside the run's names: listing them does not meet it.
    expect(await store.listNames('runs/F2/weights/v')).toEqual([NAME]);
    expect(await store.getName(madeFromName(NAME))).toBeDefined();
  });

  it('refuses other inputs once the name is claimed, before the result exists (a crash between record and result)', async () => {
    const store = make('named-claimed');
    expect(await claimNamedResult(store, spec('a (step 202)'))).toBeUndefined();
    await expect(claimNamedResult(store, spec('b (step 208)'))).rejects.toBeInstanceOf(NamedResultConflictError);
    // The attempt with the recorded inputs completes it.
    const made = await namedResult(store, spec('a (step 202)'), () => putJson(store, 'v0 of step 202', 'onnx'));
    expect(await getJson<string>(store, made)).toBe('v0 of step 202');
  });

  it('of attempts racing with other inputs exactly one makes the result, and it is the one the name holds', async () => {
    const store = make('named-race');
    const outcomes = await Promise.allSettled(['a', 'b', 'c', 'd'].map((c) => namedResult(store, spec(c), () => putJson(store, `from ${c}`, 'onnx'))));
    const made = outcomes.filter((o): o is PromiseFulfilledResult<Awaited<ReturnType<typeof namedResult>>> => o.status === 'fulfilled');
    expect(made).toHaveLength(1);
    expect(outcomes.filter((o) => o.status === 'rejected').every((o) => (o as PromiseRejectedResult).reason instanceof NamedResultConflictError)).toBe(true);
    expect(await store.getName(NAME)).toEqual(made[0]!.value);
  });

  it('adopts a name written before records for the first inputs that find it, unless the caller\'s check refuses it', async () => {
    const store = make('named-legacy');
    const legacy = await putJson(store, 'v0 of step 202', 'onnx');
    await store.nameIfAbsent(NAME, legacy);
    // The check reads the result itself (published weights: their ONNX metadata's step).
    const check = async (ref: { sha256: string }) => ((await getJson<string>(store, ref as typeof legacy)) === 'v0 of step 202' ? undefined : 'was made otherwise');
    const stale = async (c: string) => `was exported from step 202; this start's checkpoint is ${c}`;
    await expect(namedResult(store, spec('b (step 208)', { checkUnrecorded: () => stale('b (step 208)') }), () => putJson(store, 'x', 'onnx'))).rejects.toThrow(
      "published weights v0 of workflow id 'F2' (runs/F2/weights/v000000) was exported from step 202; this start's checkpoint is b (step 208)",
    );
    // Refused without writing a record: the next attempt is judged afresh.
    expect(await store.getName(madeFromName(NAME))).toBeUndefined();
    let made = 0;
    const adopted = await namedResult(store, spec('a (step 202)', { checkUnrecorded: check }), async () => {
      made++;
      return putJson(store, 'x', 'onnx');
    });
    expect(adopted).toEqual(legacy);
    expect(made).toBe(0);
    // Adopted for those inputs: from now on other inputs are refused by the record.
    await expect(namedResult(store, spec('c (step 210)'), () => putJson(store, 'x', 'onnx'))).rejects.toMatchObject({
      differences: [{ input: 'checkpoint', recorded: 'a (step 202)', requested: 'c (step 210)' }],
    });
  });
});
