/**
 * Fonts for resvg. resvg draws only fonts it was given, and drops text it has no font for without
 * a word, which would leave a picture with no titles, ticks or legends. So: load DejaVu Sans
 * (Debian's fonts-dejavu-core, which the curves' font list names first) by path when it is there,
 * let resvg load the system fonts as well, and check once that text really gets drawn.
 * Nothing is fetched: the picture is made offline.
 */
import fs from 'node:fs';
import type { ResvgRenderOptions } from '@resvg/resvg-js';
import { Resvg } from '@resvg/resvg-js';

type FontOptions = NonNullable<ResvgRenderOptions['font']>;

/** Where Debian/Ubuntu (fonts-dejavu-core) and Fedora (dejavu-sans-fonts) put DejaVu Sans. */
const DEJAVU_SANS_FILES = [
  '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf',
  '/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf',
  '/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf',
  '/usr/share/fonts/dejavu-sans-fonts/DejaVuSans-Bold.ttf',
];

/** resvg font options: the given font files (default: DejaVu Sans where installed) plus system fonts. */
export function curveFontOptions(fontFiles?: readonly string[]): FontOptions {
  const files = (fontFiles ?? DEJAVU_SANS_FILES).filter((f) => fs.existsSync(f));
  const missing = (fontFiles ?? []).filter((f) => !files.includes(f));
  if (missing.length > 0) throw new Error(`font file not found: ${missing.join(', ')}`);
  const found = files.length > 0;
  return {
    fontFiles: files,
    loadSystemFonts: true,
    // Generic "sans-serif" would otherwise map to Arial, which Linux rarely has.
    ...(found && fontFiles === undefined ? { sansSerifFamily: 'DejaVu Sans', defaultFontFamily: 'DejaVu Sans' } : {}),
  };
}

const checked = new Set<string>();

/** Throws unless resvg, with these options, draws text in the picture's font list. */
export function assertTextRenders(font: FontOptions, fontFamily: string): void {
  const key = JSON.stringify([font, fontFamily]);
  if (checked.has(key)) return;
  const probe = `<svg xmlns="http://www.w3.org/2000/svg" width="80" height="30"><text x="4" y="20" font-family="${fontFamily}">Hg 0.5</text></svg>`;
  const box = new Resvg(probe, { font }).innerBBox();
  if (!box || box.width <= 0) {
    throw new Error(
      'no usable font: resvg found none for the curves\' text, so the picture would have no titles or labels. ' +
        'Install one (Debian/Ubuntu: apt-get install fonts-dejavu-core) or pass fontFiles.',
    );
  }
  checked.add(key);
}
