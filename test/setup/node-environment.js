/**
 * Jest's node environment gives each test file its own typed-array constructors, but
 * onnxruntime-node's native binding creates outputs with the host's, so ORT's own
 * `instanceof Float32Array` checks fail inside jest. Sharing the host constructors
 * (jest already does this for Uint8Array and ArrayBuffer) fixes it.
 * jest.config.js makes it the environment of every test file (workers run activities in-process).
 */
const { TestEnvironment } = require('jest-environment-node');

const SHARED = [
  'Int8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array',
  'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array', 'DataView',
];

class OrtEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of SHARED) this.global[name] = globalThis[name];
  }
}

module.exports = OrtEnvironment;
