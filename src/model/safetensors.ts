/**
 * The safetensors format (huggingface/safetensors): u64 little-endian header length, a JSON header
 * naming each tensor's dtype, shape and byte range, then the raw little-endian data. Only F32 is
 * written or read: the embedded policy trains and serves in float32.
 */
export interface NamedTensor {
  shape: number[];
  data: Float32Array;
}

interface HeaderEntry {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

/** Tensors in the order given; the header is padded with spaces to 8 bytes, as the reference writer does. */
export function encodeSafetensors(tensors: ReadonlyArray<[name: string, tensor: NamedTensor]>, metadata: Record<string, string> = {}): Uint8Array {
  const header: Record<string, HeaderEntry | Record<string, string>> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const [name, t] of tensors) {
    const size = t.shape.reduce((a, b) => a * b, 1);
    if (size !== t.data.length) throw new Error(`safetensors: ${name} has ${t.data.length} floats, shape ${JSON.stringify(t.shape)} needs ${size}`);
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + size * 4] };
    offset += size * 4;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  const dataStart = 8 + headerBytes.length;
  for (const [name, t] of tensors) {
    const [from] = (header[name] as HeaderEntry).data_offsets;
    out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), dataStart + from);
  }
  return out;
}

/** Every tensor of a safetensors file; throws, naming the tensor, on a dtype other than F32 or a bad range. */
export function decodeSafetensors(bytes: Uint8Array): { tensors: Map<string, NamedTensor>; metadata: Record<string, string> } {
  if (bytes.byteLength < 8) throw new Error('safetensors: file shorter than its 8-byte header length');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = Number(view.getBigUint64(0, true));
  if (8 + headerLength > bytes.byteLength) throw new Error(`safetensors: header length ${headerLength} runs past the end of the file`);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength))) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`safetensors: header is not JSON (${(err as Error).message})`);
  }
  const dataStart = 8 + headerLength;
  const tensors = new Map<string, NamedTensor>();
  let metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = value as Record<string, string>;
      continue;
    }
    const e = value as HeaderEntry;
    if (e.dtype !== 'F32') throw new Error(`safetensors: tensor ${name} is ${e.dtype}; only F32 is read (export the model in float32)`);
    const [from, to] = e.data_offsets;
    const size = e.shape.reduce((a, b) => a * b, 1);
    if (to - from !== size * 4 || dataStart + to > bytes.byteLength) throw new Error(`safetensors: tensor ${name}'s byte range [${from}, ${to}) does not fit its shape or the file`);
    // Copied: the data may sit at an offset that is not a multiple of 4.
    const data = new Float32Array(Uint8Array.prototype.slice.call(bytes, dataStart + from, dataStart + to).buffer);
    tensors.set(name, { shape: e.shape, data });
  }
  return { tensors, metadata };
}
