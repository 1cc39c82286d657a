/** Row-major matrix helpers shared by the exporters (ONNX, Hugging Face). */

/** Side-by-side concatenation of row-major [rows, cols] matrices (vectors: rows = 1). */
export function concatColumns(parts: Float32Array[], rows: number, cols: number): Float32Array {
  const width = cols * parts.length;
  const out = new Float32Array(rows * width);
  parts.forEach((p, k) => {
    for (let r = 0; r < rows; r++) out.set(p.subarray(r * cols, (r + 1) * cols), r * width + k * cols);
  });
  return out;
}

/** The inverse of concatColumns: a [rows, cols·n] matrix cut into n [rows, cols] matrices. */
export function splitColumns(m: Float32Array, rows: number, cols: number, n: number): Float32Array[] {
  const width = cols * n;
  return Array.from({ length: n }, (_, k) => {
    const out = new Float32Array(rows * cols);
    for (let r = 0; r < rows; r++) out.set(m.subarray(r * width + k * cols, r * width + (k + 1) * cols), r * cols);
    return out;
  });
}

/** [rows, cols] -> [cols, rows]. */
export function transpose(m: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = m[r * cols + c] as number;
  return out;
}
