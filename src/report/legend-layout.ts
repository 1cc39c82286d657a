/**
 * How many columns a panel's legend gets. vega lays a horizontal legend out in one row however
 * wide it is, and a legend wider than its panel widens the whole grid column, which squeezes every
 * panel in the picture; so the legend wraps into as many columns as fit under its panel.
 */
import { textWidth } from './text-width';

/** vega's legend defaults as the curves use them: stroke symbol, label offset, column padding (px). */
const SYMBOL = 14;
const LABEL_OFFSET = 4;
const COLUMN_PADDING = 10;

/** Most columns (entries placed row by row, each column as wide as its widest entry) that fit in `width` px. */
export function legendColumns(labels: readonly string[], width: number, fontSize: number): number {
  const entry = labels.map((l) => SYMBOL + LABEL_OFFSET + textWidth(l, fontSize) + COLUMN_PADDING);
  for (let columns = labels.length; columns > 1; columns--) {
    let total = 0;
    for (let c = 0; c < columns; c++) {
      let widest = 0;
      for (let i = c; i < entry.length; i += columns) widest = Math.max(widest, entry[i]!);
      total += widest;
    }
    if (total <= width) return columns;
  }
  return 1;
}
