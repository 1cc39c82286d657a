/**
 * Debian's chromium (installed by scripts/setup.sh), driven by playwright-core: the browser of the
 * viewer's tests and of its screenshot. A machine without it gets an error naming what to run.
 */
import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_PATHS = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

export function chromiumPath(): string {
  const given = process.env.DURABLE_RL_CHROMIUM;
  const found = given ? [given] : CHROMIUM_PATHS;
  const file = found.find((p) => fs.existsSync(p));
  if (!file) throw new Error(`no chromium at ${found.join(' or ')}: run bash scripts/setup.sh (it installs Debian's chromium) or set DURABLE_RL_CHROMIUM`);
  return file;
}

export async function launchChromium(): Promise<Browser> {
  // --no-sandbox: CI and this machine run as root, where chromium refuses its sandbox.
  return chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}
