/** Stops the dev server that the main job left running for the Web UI. */
import fs from 'node:fs';
import { PID_FILE } from './lib/local-server';

if (!fs.existsSync(PID_FILE)) {
  console.log('no dev server started by durable-rl is recorded');
} else {
  const pid = Number(fs.readFileSync(PID_FILE, 'utf8'));
  try {
    process.kill(pid, 'SIGTERM');
    console.log(`stopped Temporal dev server (pid ${pid})`);
  } catch {
    console.log(`Temporal dev server (pid ${pid}) was not running`);
  }
  fs.rmSync(PID_FILE);
}
