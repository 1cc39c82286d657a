/**
 * Two preallocated sets of KV-cache buffers used alternately: step t reads its past from one
 * set and onnxruntime writes the present (past + new position) straight into the other.
 * Avoids allocating, zeroing and marshalling tens of MB per step at large batch sizes.
 * Each tensor is a [rows, nHeads, T, headDim] prefix view of a buffer sized for the
 * largest rows × T this generation can reach.
 */
export class KvPingPong {
  private readonly sets: [Float32Array[], Float32Array[]];
  private current = 0;

  constructor(
    tensors: number,
    private readonly heads: number,
    private readonly headDim: number,
    rows: number,
    capacityT: number,
  ) {
    const size = rows * heads * capacityT * headDim;
    const make = (): Float32Array[] => Array.from({ length: tensors }, () => new Float32Array(size));
    this.sets = [make(), make()];
  }

  private views(set: Float32Array[], rows: number, T: number): Float32Array[] {
    const n = rows * this.heads * T * this.headDim;
    return set.map((buf) => buf.subarray(0, n));
  }

  /** Cache holding positions [0, T) for `rows` rows. */
  past(rows: number, T: number): Float32Array[] {
    return this.views(this.sets[this.current] as Float32Array[], rows, T);
  }

  /** Where the next step's present (T positions) is written. */
  next(rows: number, T: number): Float32Array[] {
    return this.views(this.sets[1 - this.current] as Float32Array[], rows, T);
  }

  /** The buffers just written by next() become the past. */
  swap(): void {
    this.current = 1 - this.current;
  }

  /**
   * Keeps only the listed rows (ascending) of the current cache, moved to the front.
   * Finished sequences thereby stop costing attention work on later steps.
   */
  keepRows(keep: readonly number[], T: number): void {
    const rowSize = this.heads * T * this.headDim;
    for (const buf of this.sets[this.current] as Float32Array[]) {
      keep.forEach((row, i) => {
        if (row !== i) buf.copyWithin(i * rowSize, row * rowSize, (row + 1) * rowSize);
      });
    }
  }
}
