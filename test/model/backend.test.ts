import * as tf from '@tensorflow/tfjs';
import { initTfBackend } from '../../src/model/backend';
import { oneHotFloat } from '../../src/model/tf-ops';

test('falls back to wasm without tfjs-node-gpu, once', async () => {
  const a = initTfBackend();
  const b = initTfBackend();
  expect(a).toBe(b);
  const info = await a;
  expect(info.name).toBe('wasm');
  expect(info.fallbackReason).toBeUndefined();
  expect(tf.getBackend()).toBe('wasm');
});

test('oneHotFloat gives exact 0/1 floats on wasm (its OneHot kernel ignores dtype)', async () => {
  await initTfBackend();
  const t = oneHotFloat(tf.tensor1d([1, 0], 'int32'), 3);
  expect(t.dtype).toBe('float32');
  expect([...t.dataSync()]).toEqual([0, 1, 0, 1, 0, 0]);
  t.dispose();
});
