import * as ort from 'onnxruntime-node';
import { initTfBackend } from '../../src/model/backend';
import { Gpt } from '../../src/model/gpt';
import { exportOnnx, readOnnxMetadata } from '../../src/model/onnx-export';
import { TINY, maxAbsDiff, ortRun, sharpWeights, tfLogits } from './helpers';

const cfg = TINY;
const V = cfg.vocabSize;
let model: Gpt;
let session: ort.InferenceSession;
let bytes: Uint8Array;

beforeAll(async () => {
  await initTfBackend();
  const weights = sharpWeights(cfg, 7);
  model = Gpt.fromWeights(cfg, weights);
  bytes = exportOnnx(cfg, weights, { weight_version: '3' });
  session = await ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'all', intraOpNumThreads: 1 });
});

afterAll(async () => {
  model.dispose();
  await session.release();
});

/** Rows of real tokens, left-padded to a common length; positions count real tokens only. */
function leftPad(rows: number[][]): { ids: number[][]; pos: number[][]; mask: number[][] } {
  const len = Math.max(...rows.map((r) => r.length));
  const ids: number[][] = [];
  const pos: number[][] = [];
  const mask: number[][] = [];
  for (const r of rows) {
    const pad = len - r.length;
    ids.push([...new Array<number>(pad).fill(0), ...r]);
    pos.push([...new Array<number>(pad).fill(0), ...r.map((_, i) => i)]);
    mask.push([...new Array<number>(pad).fill(0), ...r.map(() => 1)]);
  }
  return { ids, pos, mask };
}

function realPositions(mask: number[][], logits: ArrayLike<number>): number[] {
  const out: number[] = [];
  const s = (mask[0] as number[]).length;
  mask.forEach((row, b) =>
    row.forEach((m, t) => {
      if (m) for (let v = 0; v < V; v++) out.push(logits[(b * s + t) * V + v] as number);
    }),
  );
  return out;
}

const rows = [
  [5, 9, 11, 2, 40, 33, 17, 8, 1, 60],
  [3, 14, 15],
  [7, 7, 7, 7, 7, 20],
];

test('embeds config and metadata', () => {
  const meta = readOnnxMetadata(bytes);
  expect(meta.weight_version).toBe('3');
  expect(JSON.parse(meta.gpt_config as string)).toEqual(cfg);
});

test('export is deterministic', () => {
  const again = exportOnnx(cfg, model.getWeights(), { weight_version: '3' });
  expect(Buffer.from(again).equals(Buffer.from(bytes))).toBe(true);
});

test('full-sequence logits match tfjs (no padding)', async () => {
  const { ids, pos, mask } = leftPad([rows[0] as number[], (rows[0] as number[]).slice().reverse()]);
  const ref = tfLogits(model, ids, pos, mask);
  const got = await ortRun(session, cfg, ids, pos, mask);
  expect(maxAbsDiff(got.logits, ref)).toBeLessThan(1e-4);
  // Sanity: the sharpened weights give a far from uniform distribution.
  expect(Math.max(...ref) - Math.min(...ref)).toBeGreaterThan(1);
});

test('left-padded batch matches tfjs on real positions, and matches unpadded rows', async () => {
  const { ids, pos, mask } = leftPad(rows);
  const ref = tfLogits(model, ids, pos, mask);
  const got = await ortRun(session, cfg, ids, pos, mask);
  expect(maxAbsDiff(realPositions(mask, got.logits), realPositions(mask, ref))).toBeLessThan(1e-4);

  const short = rows[1] as number[];
  const alone = await ortRun(session, cfg, [short], [short.map((_, i) => i)], [short.map(() => 1)]);
  const len = (ids[0] as number[]).length;
  const padded = got.logits.slice((len * 2 - short.length) * V, len * 2 * V);
  expect(maxAbsDiff(padded, alone.logits)).toBeLessThan(1e-4);
});

test('KV-cached steps match full recomputation (left-padded batch)', async () => {
  const prompt = leftPad(rows.map((r) => r.slice(0, Math.max(1, r.length - 3))));
  const extra = [
    [4, 30, 12],
    [6, 6, 50],
    [21, 1, 9],
  ];
  let { ids, pos, mask } = prompt;
  let step = await ortRun(session, cfg, ids, pos, mask);
  for (let k = 0; k < 3; k++) {
    const nextIds = extra.map((e) => [e[k] as number]);
    const nextPos = pos.map((p, b) => [Math.max(...(p as number[]).filter((_, t) => (mask[b] as number[])[t])) + 1]);
    ids = ids.map((r, b) => [...r, (nextIds[b] as number[])[0] as number]);
    pos = pos.map((r, b) => [...r, (nextPos[b] as number[])[0] as number]);
    mask = mask.map((r) => [...r, 1]);
    step = await ortRun(session, cfg, nextIds, nextPos, mask, step.present);
    const full = tfLogits(model, ids, pos, mask);
    const s = (ids[0] as number[]).length;
    const lastRows = ids.map((_, b) => full.slice((b * s + s - 1) * V, (b * s + s) * V));
    expect(maxAbsDiff(step.logits, lastRows.flatMap((r) => [...r]))).toBeLessThan(1e-4);
    expect(step.present[0]?.dims).toEqual([3, cfg.nHeads, s, cfg.dModel / cfg.nHeads]);
  }
});
