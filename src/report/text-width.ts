/**
 * Text widths for vega's layout. Without node-canvas vega guesses every string at 0.8 em per
 * character, about a third wider than DejaVu Sans really is, so legends and axis titles get far
 * more room than they use and the panels shrink to make it. These are DejaVu Sans's own advance
 * widths (the font the picture asks for first), read from its hmtx table; kerning is ignored.
 * Other fonts differ by a few percent, which only moves labels, never overlaps them badly.
 */

/** Advance widths in 1/1000 em of DejaVu Sans, characters U+0020 to U+007E. */
const REGULAR = [
  318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838,
  838, 531, 1000, 684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787, 603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, 390,
  337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592,
  525, 636, 337, 636, 838,
];

/** The same for DejaVu Sans Bold (titles). */
const BOLD = [
  348, 456, 521, 838, 696, 1002, 872, 306, 457, 457, 523, 838, 380, 415, 380, 365, 696, 696, 696, 696, 696, 696, 696, 696, 696, 696, 400, 400, 838, 838,
  838, 580, 1000, 774, 762, 734, 830, 683, 683, 821, 837, 372, 372, 775, 637, 995, 837, 850, 733, 850, 770, 720, 682, 812, 774, 1103, 771, 724, 725, 457,
  365, 457, 838, 500, 500, 675, 716, 593, 716, 678, 435, 716, 712, 343, 343, 665, 343, 1042, 712, 687, 716, 716, 493, 595, 478, 712, 652, 924, 645, 652,
  582, 712, 365, 712, 838,
];

/** Characters outside ASCII (·, –, accents) are taken as a typical wide-ish glyph. */
const OTHER = 700;

/** Width in pixels of `text` set in DejaVu Sans at `fontSize` px. */
export function textWidth(text: string, fontSize: number, bold = false): number {
  const table = bold ? BOLD : REGULAR;
  let units = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    units += code >= 0x20 && code <= 0x7e ? table[code - 0x20]! : OTHER;
  }
  return (units / 1000) * fontSize;
}

/** The fields of a vega text item that its width depends on. */
export interface VegaTextItem {
  fontSize?: number | string;
  fontWeight?: number | string;
  limit?: number;
}

function isBold(weight: VegaTextItem['fontWeight']): boolean {
  return weight === 'bold' || weight === 'bolder' || Number(weight) >= 600;
}

/**
 * vega's `textMetrics.width(item, text)`. vega calls it for whole strings and, when truncating to
 * `item.limit`, for prefixes: a width above the limit is reported as the limit, which vega's
 * truncation reads as "too long" and layout reads as "as wide as allowed".
 */
export function vegaTextWidth(item: VegaTextItem, text: unknown): number {
  const value = text == null ? '' : String(text).trim();
  const fontSize = item.fontSize != null ? Number(item.fontSize) || 0 : 11;
  const width = textWidth(value, fontSize, isBold(item.fontWeight));
  const limit = Number(item.limit);
  return limit > 0 ? Math.min(width, limit) : width;
}
