/**
 * GRPO's pieces against verl's own code: verl 0.9.1's verl/trainer/ppo/core_algos.py, installed by
 * setup in the project's Python environment, runs compute_grpo_outcome_advantage,
 * compute_policy_loss_vanilla (every loss aggregation mode, asymmetric and dual clip) and
 * kl_penalty (every estimator) on the same seeded random inputs as src/rl.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { KlKind, LossAggMode } from '../../src/config/schema';
import { initTfBackend } from '../../src/model/backend';
import { mulberry32 } from '../../src/domain/rng';
import { groupAdvantage } from '../../src/rl/advantages';
import { lossNormOf } from '../../src/rl/agg-loss';
import { klPenalty } from '../../src/rl/kl';
import { policyLoss } from '../../src/rl/policy-loss';
import { REPO_ROOT } from '../../src/paths';
import { pythonBin } from '../../scripts/lib/python-env';

const rand = mulberry32(2024);
const normal = (): number => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
const matrix = (rows: number, cols: number, f: () => number): number[][] => Array.from({ length: rows }, () => Array.from({ length: cols }, f));

interface GrpoCase {
  scores: number[];
  index: string[];
  epsilon: number;
  norm: boolean;
}
interface PolicyCase {
  old: number[][];
  logp: number[][];
  adv: number[][];
  mask: number[][];
  clip_low: number;
  clip_high: number;
  clip_c: number;
  mode: LossAggMode;
  scale: number;
}
interface KlCase {
  logp: number[];
  ref: number[];
  kind: KlKind;
}

const grpo: GrpoCase[] = [true, false].flatMap((norm) =>
  [0, 1, 2].map((): GrpoCase => {
    const n = 12;
    // Groups of 1 to 5, binary and graded scores, one all-equal group.
    const index = Array.from({ length: n }, (_, i) => `g${Math.min(4, Math.floor(i / 3))}`);
    const scores = index.map((g) => (g === 'g1' ? 1 : rand() < 0.5 ? Math.round(rand() * 4) / 4 : Number(rand() < 0.5)));
    return { scores, index, epsilon: 1e-6, norm };
  }),
);

const MODES: LossAggMode[] = ['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'];
const policy: PolicyCase[] = MODES.flatMap((mode) =>
  [0, 1].map((): PolicyCase => {
    const rows = 6;
    const cols = 9;
    const old = matrix(rows, cols, () => -Math.abs(normal()) - 0.05);
    // Ratios spread across both clip bounds and past the dual clip.
    const logp = old.map((r) => r.map((x) => x + 0.6 * normal()));
    const adv = Array.from({ length: rows }, () => {
      const a = normal();
      return Array.from({ length: cols }, () => a);
    });
    // Ragged masks, one row fully masked.
    const mask = Array.from({ length: rows }, (_, r) => Array.from({ length: cols }, (_, c) => (r === 5 ? 0 : Number(c < 3 + ((r * 2) % 7)))));
    return { old, logp, adv, mask, clip_low: 0.2, clip_high: 0.28, clip_c: 3, mode, scale: 16 };
  }),
);

const KINDS: KlKind[] = ['kl', 'k1', 'abs', 'mse', 'k2', 'low_var_kl', 'k3'];
const kl: KlCase[] = KINDS.map((kind) => {
  const logp = Array.from({ length: 40 }, () => -Math.abs(3 * normal()));
  // Some far apart, to reach the k3 clamp.
  const ref = logp.map((x, i) => (i % 10 === 0 ? x - 15 : x + normal()));
  return { logp, ref, kind };
});

interface VerlOut {
  grpo: number[][];
  policy: Array<{ loss: number; clipfrac: number; clipfrac_lower: number; ppo_kl: number }>;
  kl: number[][];
}
let verl: VerlOut;

beforeAll(async () => {
  await initTfBackend();
  const out = execFileSync(pythonBin(), [path.join(REPO_ROOT, 'scripts', 'python', 'verl_reference.py')], {
    input: JSON.stringify({ grpo, policy, kl }),
    env: { ...process.env, RAY_DISABLE_IMPORT_WARNING: '1' },
    maxBuffer: 16 << 20,
  });
  verl = JSON.parse(out.toString('utf8')) as VerlOut;
}, 120_000);

test('GRPO outcome advantages equal compute_grpo_outcome_advantage (GRPO and Dr.GRPO)', () => {
  grpo.forEach((c, k) => {
    const ours = new Array<number>(c.scores.length);
    for (const g of new Set(c.index)) {
      const members = c.index.flatMap((x, i) => (x === g ? [i] : []));
      const adv = groupAdvantage(members.map((i) => c.scores[i]!), { normAdvByStd: c.norm, epsilon: c.epsilon });
      members.forEach((i, j) => (ours[i] = adv[j]!));
    }
    // verl computes in float32.
    ours.forEach((a, i) => expect(Math.abs(a - verl.grpo[k]![i]!)).toBeLessThan(1e-5));
  });
});

test('the clipped policy loss and its statistics equal compute_policy_loss_vanilla in every aggregation mode', () => {
  policy.forEach((c, k) => {
    const t = (x: number[][]): tf.Tensor2D => tf.tensor2d(x);
    const [logprob, oldLogprob, advantages, mask] = [t(c.logp), t(c.old), t(c.adv), t(c.mask)];
    const out = policyLoss({
      logprob,
      oldLogprob,
      advantages,
      mask,
      clip: { clipLow: c.clip_low, clipHigh: c.clip_high, dualClipC: c.clip_c },
      aggMode: c.mode,
      norm: lossNormOf(c.mask, c.scale),
    });
    const v = verl.policy[k]!;
    expect(Math.abs(out.loss.dataSync()[0]! - v.loss)).toBeLessThan(1e-5 * Math.max(1, Math.abs(v.loss)));
    expect(out.clipFrac.dataSync()[0]!).toBeCloseTo(v.clipfrac, 6);
    expect(out.clipFracLower.dataSync()[0]!).toBeCloseTo(v.clipfrac_lower, 6);
    expect(out.ppoKl.dataSync()[0]!).toBeCloseTo(v.ppo_kl, 5);
    // The cases exercise the clips they are meant to.
    if (k === 0) expect(v.clipfrac).toBeGreaterThan(0);
    tf.dispose([logprob, oldLogprob, advantages, mask, out.loss, out.clipFrac, out.clipFracLower, out.ppoKl]);
  });
  expect(verl.policy.some((p) => p.clipfrac_lower > 0)).toBe(true);
});

test('every KL estimator equals kl_penalty', () => {
  kl.forEach((c, k) => {
    c.logp.forEach((lp, i) => expect(Math.abs(klPenalty(lp, c.ref[i]!, c.kind) - verl.kl[k]![i]!)).toBeLessThan(1e-9));
  });
});
