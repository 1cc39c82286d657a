/** This machine's fp32 matmul ceiling in onnxruntime (the embedded engine's runtime): one large MatMul, best of a few. */
import { onnx } from 'onnx-proto';
import * as ort from 'onnxruntime-node';
import { ELEM, GraphBuilder } from '../../src/model/onnx-builder';

export async function ortMatmulGflops(n = 2048, repeat = 5, threads = 2): Promise<number> {
  const g = new GraphBuilder();
  const a = g.input('a', ELEM.FLOAT, [n, n]);
  const b = g.input('b', ELEM.FLOAT, [n, n]);
  g.op('MatMul', [a, b], {}, 'c');
  g.output('c', ELEM.FLOAT, [n, n]);
  const bytes = onnx.ModelProto.encode(onnx.ModelProto.create({ irVersion: 9, opsetImport: [{ domain: '', version: 20 }], graph: g.graph('matmul') })).finish();
  const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: threads, interOpNumThreads: 1 });
  const data = Float32Array.from({ length: n * n }, (_, i) => ((i * 7919) % 1000) / 1000 - 0.5);
  const feeds = { a: new ort.Tensor('float32', data, [n, n]), b: new ort.Tensor('float32', data, [n, n]) };
  await session.run(feeds);
  let best = Infinity;
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    await session.run(feeds);
    best = Math.min(best, (performance.now() - t0) / 1000);
  }
  await session.release();
  return (2 * n ** 3) / best / 1e9;
}
