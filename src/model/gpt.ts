import * as tf from '@tensorflow/tfjs';
import { type GptConfig, type WeightMap, MASK_VALUE, headDim, weightShapes } from './arch';
import { initWeights } from './init';
import { embedLookup, geluTanh, layerNorm, matMulFast } from './tf-ops';

/** tfjs variable names are global; each model instance gets its own prefix. */
let instances = 0;

/**
 * The embedded policy in tfjs, following src/model/arch.ts line by line (the ONNX exporter
 * follows the same file). Parameters are tf.Variables named and ordered as weightShapes().
 * Matmuls and embeddings go through tf-ops.ts, whose custom gradients keep training on
 * tfjs-wasm's fast paths; the values are those of arch.ts (embeddings equal oneHot·W).
 */
export class Gpt {
  readonly config: GptConfig;
  /** Trainable parameters in weightShapes order. */
  readonly params: ReadonlyMap<string, tf.Variable>;

  private constructor(config: GptConfig, weights: WeightMap) {
    headDim(config); // fail fast on an impossible head split
    this.config = { ...config };
    const params = new Map<string, tf.Variable>();
    const prefix = `gpt${instances++}`;
    for (const [name, shape] of weightShapes(config)) {
      const w = weights[name];
      if (!w) throw new Error(`missing weight ${name}`);
      const init = tf.tensor(w, shape, 'float32');
      params.set(name, tf.variable(init, true, `${prefix}/${name}`));
      init.dispose();
    }
    this.params = params;
  }

  /** Fresh model with deterministic initialisation (see init.ts). */
  static random(config: GptConfig, seed: number): Gpt {
    return new Gpt(config, initWeights(config, seed));
  }

  static fromWeights(config: GptConfig, weights: WeightMap): Gpt {
    return new Gpt(config, weights);
  }

  /**
   * logits[b, s, V] for ids[b, s] and positionIds[b, s] (int32), attentionMask[b, s]
   * (1 = real token, 0 = padding; padded keys are never attended to).
   */
  forward(ids: tf.Tensor2D, positionIds: tf.Tensor2D, attentionMask: tf.Tensor2D): tf.Tensor3D {
    return tf.tidy(() => {
      const { vocabSize, dModel, nLayers, nHeads } = this.config;
      const [b, s] = ids.shape;
      const hd = headDim(this.config);
      const p = (name: string): tf.Variable => this.params.get(name) as tf.Variable;

      const flatIds = tf.cast(tf.reshape(ids, [b * s]), 'int32') as tf.Tensor1D;
      const flatPos = tf.cast(tf.reshape(positionIds, [b * s]), 'int32') as tf.Tensor1D;
      let h: tf.Tensor2D = tf.add(embedLookup(p('wte'), flatIds), embedLookup(p('wpe'), flatPos));

      const mask = additiveMask(attentionMask, s);
      const scale = 1 / Math.sqrt(hd);
      const heads = (x: tf.Tensor2D): tf.Tensor4D =>
        tf.transpose(tf.reshape(x, [b, s, nHeads, hd]), [0, 2, 1, 3]);

      for (let i = 0; i < nLayers; i++) {
        const L = `h.${i}.`;
        const a = layerNorm(h, p(`${L}ln1.g`), p(`${L}ln1.b`));
        const q = heads(tf.add(matMulFast(a, p(`${L}attn.wq`)), p(`${L}attn.bq`)));
        const k = heads(tf.add(matMulFast(a, p(`${L}attn.wk`)), p(`${L}attn.bk`)));
        const v = heads(tf.add(matMulFast(a, p(`${L}attn.wv`)), p(`${L}attn.bv`)));
        const scores = tf.add(tf.mul(matMulFast(q, tf.transpose(k, [0, 1, 3, 2])), scale), mask);
        const att = matMulFast(tf.softmax(scores), v);
        const merged = tf.reshape(tf.transpose(att, [0, 2, 1, 3]), [b * s, dModel]);
        h = tf.add(h, tf.add(matMulFast(merged, p(`${L}attn.wo`)), p(`${L}attn.bo`)));

        const m = layerNorm(h, p(`${L}ln2.g`), p(`${L}ln2.b`));
        const inner = geluTanh(tf.add(matMulFast(m, p(`${L}mlp.w1`)), p(`${L}mlp.b1`)));
        h = tf.add(h, tf.add(matMulFast(inner, p(`${L}mlp.w2`)), p(`${L}mlp.b2`)));
      }
      const f = layerNorm(h, p('lnf.g'), p('lnf.b'));
      const logits = matMulFast(f, p('head'));
      return tf.reshape(logits, [b, s, vocabSize]);
    });
  }

  /** Copies the current parameters out as plain arrays. */
  getWeights(): WeightMap {
    const out: WeightMap = {};
    // Copied: some backends hand out their internal buffer.
    for (const [name, v] of this.params) out[name] = new Float32Array(v.dataSync());
    return out;
  }

  setWeights(weights: WeightMap): void {
    for (const [name, shape] of weightShapes(this.config)) {
      const w = weights[name];
      if (!w) throw new Error(`missing weight ${name}`);
      const v = this.params.get(name) as tf.Variable;
      tf.tidy(() => v.assign(tf.tensor(w, shape, 'float32')));
    }
  }

  /** The variables in weightShapes order (for tf.variableGrads). */
  get variableList(): tf.Variable[] {
    return [...this.params.values()];
  }

  dispose(): void {
    for (const v of this.params.values()) v.dispose();
  }
}

/** [b,1,s,s] additive mask: 0 where query i may see key j (j ≤ i and key is real), else MASK_VALUE. */
function additiveMask(attentionMask: tf.Tensor2D, s: number): tf.Tensor4D {
  const [b] = attentionMask.shape;
  const causal = tf.linalg.bandPart(tf.ones([s, s], 'float32'), -1, 0).reshape([1, 1, s, s]);
  const keys = tf.cast(attentionMask, 'float32').reshape([b, 1, 1, s]);
  const allowed = tf.mul(causal, keys);
  return tf.mul(tf.sub(1, allowed), MASK_VALUE) as tf.Tensor4D;
}
