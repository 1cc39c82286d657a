import * as tf from '@tensorflow/tfjs';

export interface TfBackendInfo {
  /** tfjs backend name: 'tensorflow' (tfjs-node-gpu) or 'wasm'. */
  name: string;
  /** Why tfjs-node-gpu was not used although it is installed (e.g. CUDA libraries missing). */
  fallbackReason?: string;
}

let pending: Promise<TfBackendInfo> | undefined;

/**
 * Picks the fastest tfjs backend that loads here. Must run before any tensor is created:
 * importing the wasm backend switches the default, and tensors made on another backend
 * would be copied on every use. Safe to call many times; the first call decides.
 */
export function initTfBackend(): Promise<TfBackendInfo> {
  pending ??= choose();
  return pending;
}

async function choose(): Promise<TfBackendInfo> {
  const gpu = tryNativeGpu();
  if (gpu.loaded && (await tf.setBackend('tensorflow'))) {
    await tf.ready();
    return { name: tf.getBackend() };
  }
  await import('@tensorflow/tfjs-backend-wasm');
  if (!(await tf.setBackend('wasm'))) {
    throw new Error('tfjs: neither tfjs-node-gpu nor the wasm backend could be initialised');
  }
  await tf.ready();
  return { name: tf.getBackend(), ...(gpu.error ? { fallbackReason: gpu.error } : {}) };
}

/** tfjs-node-gpu is an optional dependency that only installs on CUDA machines. */
function tryNativeGpu(): { loaded: boolean; error?: string } {
  try {
    // A runtime-computed id keeps tsc and bundlers from resolving the absent package.
    const id = ['@tensorflow', 'tfjs-node-gpu'].join('/');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require(id);
    return { loaded: true };
  } catch (err) {
    const code = (err as { code?: string }).code;
    // Not installed is the normal case on CPU machines; anything else is worth reporting.
    return code === 'MODULE_NOT_FOUND' ? { loaded: false } : { loaded: false, error: String(err) };
  }
}
