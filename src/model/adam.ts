import * as tf from '@tensorflow/tfjs';
import type { WeightMap } from './arch';

export interface AdamConfig {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  /** Decoupled (AdamW) decay, applied to matrices only. */
  weightDecay: number;
  /** Global gradient-norm clip; 0 disables. */
  clipNorm: number;
}

export const DEFAULT_ADAM: AdamConfig = {
  lr: 1e-3,
  beta1: 0.9,
  beta2: 0.99,
  eps: 1e-8,
  weightDecay: 0,
  clipNorm: 1,
};

/** Everything needed to resume the optimiser bit-for-bit. */
export interface AdamState {
  config: AdamConfig;
  /** Number of updates applied so far (bias correction depends on it). */
  step: number;
  m: WeightMap;
  v: WeightMap;
}

/**
 * AdamW with global-norm clipping. Written out instead of tf.train.adam because the moments
 * must go into checkpoints, and tfjs optimisers only expose them asynchronously and by
 * generated variable names.
 */
export class Adam {
  config: AdamConfig;
  private step = 0;
  private readonly vars: ReadonlyMap<string, tf.Variable>;
  private readonly m = new Map<string, tf.Variable>();
  private readonly v = new Map<string, tf.Variable>();

  constructor(vars: ReadonlyMap<string, tf.Variable>, config: Partial<AdamConfig> = {}) {
    this.config = { ...DEFAULT_ADAM, ...config };
    this.vars = vars;
    for (const [name, w] of vars) {
      this.m.set(name, zeroVariable(w.shape));
      this.v.set(name, zeroVariable(w.shape));
    }
  }

  get steps(): number {
    return this.step;
  }

  /**
   * Clips by global norm, updates the variables, returns the pre-clip norm. A non-finite norm
   * skips the update entirely (moments and step count untouched), as verl's actor does.
   */
  apply(grads: tf.NamedTensorMap, lr: number = this.config.lr): number {
    const { beta1, beta2, eps, weightDecay, clipNorm } = this.config;
    const names = [...this.vars.keys()].filter((n) => grads[n] !== undefined);
    if (names.length === 0) return 0;
    const normT = tf.tidy(() => tf.sqrt(tf.addN(names.map((n) => tf.sum(tf.square(grads[n] as tf.Tensor))))));
    const gradNorm = normT.dataSync()[0] as number;
    normT.dispose();
    if (!Number.isFinite(gradNorm)) return gradNorm;
    const clip = clipNorm > 0 && gradNorm > clipNorm ? clipNorm / (gradNorm + 1e-6) : 1;
    this.step += 1;
    const bc1 = 1 - Math.pow(beta1, this.step);
    const bc2 = 1 - Math.pow(beta2, this.step);
    const stepSize = lr / bc1;
    tf.tidy(() => {
      for (const name of names) {
        const w = this.vars.get(name) as tf.Variable;
        const g = tf.mul(grads[name] as tf.Tensor, clip);
        const m = this.m.get(name) as tf.Variable;
        const v = this.v.get(name) as tf.Variable;
        m.assign(tf.add(tf.mul(m, beta1), tf.mul(g, 1 - beta1)));
        v.assign(tf.add(tf.mul(v, beta2), tf.mul(tf.square(g), 1 - beta2)));
        let update = tf.div(tf.mul(m, stepSize), tf.add(tf.sqrt(tf.div(v, bc2)), eps));
        if (weightDecay > 0 && w.rank >= 2) update = tf.add(update, tf.mul(w, lr * weightDecay));
        w.assign(tf.sub(w, update));
      }
    });
    return gradNorm;
  }

  getState(): AdamState {
    const read = (src: Map<string, tf.Variable>): WeightMap => {
      const out: WeightMap = {};
      for (const [name, t] of src) out[name] = new Float32Array(t.dataSync());
      return out;
    };
    return { config: { ...this.config }, step: this.step, m: read(this.m), v: read(this.v) };
  }

  setState(state: AdamState): void {
    this.config = { ...state.config };
    this.step = state.step;
    const write = (dst: Map<string, tf.Variable>, src: WeightMap): void => {
      for (const [name, t] of dst) {
        const data = src[name];
        if (!data) throw new Error(`optimizer state lacks ${name}`);
        tf.tidy(() => t.assign(tf.tensor(data, t.shape, 'float32')));
      }
    };
    write(this.m, state.m);
    write(this.v, state.v);
  }

  dispose(): void {
    for (const t of this.m.values()) t.dispose();
    for (const t of this.v.values()) t.dispose();
  }
}

function zeroVariable(shape: number[]): tf.Variable {
  const init = tf.zeros(shape, 'float32');
  const v = tf.variable(init, false);
  init.dispose();
  return v;
}
