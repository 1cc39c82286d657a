import { onnx } from 'onnx-proto';

/** ONNX element types used by the exporter (values from onnx.TensorProto.DataType). */
export const ELEM = { FLOAT: 1, INT32: 6, INT64: 7, BOOL: 9 } as const;
export type ElemType = (typeof ELEM)[keyof typeof ELEM];

/** A dimension: fixed size or a symbolic name shared between inputs and outputs. */
export type Dim = number | string;

export type AttrValue = number | string | number[] | { float: number };

/**
 * Minimal ONNX graph builder: named values, auto-numbered intermediates, raw-data
 * initialisers. Keeps onnx-export.ts readable as a list of ops.
 */
export class GraphBuilder {
  private readonly nodes: onnx.INodeProto[] = [];
  private readonly inits: onnx.ITensorProto[] = [];
  private readonly inputs: onnx.IValueInfoProto[] = [];
  private readonly outputs: onnx.IValueInfoProto[] = [];
  private counter = 0;

  input(name: string, elem: ElemType, dims: Dim[]): string {
    this.inputs.push(valueInfo(name, elem, dims));
    return name;
  }

  output(name: string, elem: ElemType, dims: Dim[]): void {
    this.outputs.push(valueInfo(name, elem, dims));
  }

  floatInit(name: string, dims: number[], data: Float32Array): string {
    this.inits.push({ name, dims, dataType: ELEM.FLOAT, rawData: bytesOf(data) });
    return name;
  }

  int64Init(name: string, dims: number[], data: number[]): string {
    const raw = BigInt64Array.from(data.map((v) => BigInt(v)));
    this.inits.push({ name, dims, dataType: ELEM.INT64, rawData: bytesOf(raw) });
    return name;
  }

  /** Adds a node; returns its single output name (`out` or a fresh one). */
  op(opType: string, inputs: string[], attrs: Record<string, AttrValue> = {}, out?: string): string {
    return this.opN(opType, inputs, 1, attrs, out !== undefined ? [out] : undefined)[0] as string;
  }

  /**
   * Adds a node with `count` outputs (e.g. Split); returns their names. An empty input name
   * leaves an optional input out; `domain` picks a non-standard op set such as com.microsoft.
   */
  opN(opType: string, inputs: string[], count: number, attrs: Record<string, AttrValue> = {}, outs?: string[], domain?: string): string[] {
    const output = outs ?? Array.from({ length: count }, () => `${opType.toLowerCase()}_${this.counter++}`);
    this.nodes.push({
      opType,
      ...(domain ? { domain } : {}),
      name: `${opType}_${this.nodes.length}`,
      input: inputs,
      output,
      attribute: Object.entries(attrs).map(([name, v]) => attribute(name, v)),
    });
    return output;
  }

  graph(name: string): onnx.IGraphProto {
    return { name, node: this.nodes, initializer: this.inits, input: this.inputs, output: this.outputs };
  }
}

function valueInfo(name: string, elemType: ElemType, dims: Dim[]): onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, v: AttrValue): onnx.IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new TypeError(`attribute ${name}: use { float } for non-integers`);
    return { name, type: T.INT, i: v };
  }
  if (typeof v === 'string') return { name, type: T.STRING, s: new TextEncoder().encode(v) };
  if (Array.isArray(v)) return { name, type: T.INTS, ints: v };
  return { name, type: T.FLOAT, f: v.float };
}

/** Little-endian raw bytes, as ONNX raw_data requires (x86/arm hosts are little-endian). */
function bytesOf(a: Float32Array | BigInt64Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}
