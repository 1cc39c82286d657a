/** Stops the dev server that the main job left running for the Web UI, and the MLflow server it started (tracking.mlflow). */
import fs from 'node:fs';
import { PID_FILE } from './lib/local-server';
import { MLFLOW_PID_FILE } from './lib/mlflow-server';

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

if (fs.existsSync(MLFLOW_PID_FILE)) {
  const pid = Number(fs.readFileSync(MLFLOW_PID_FILE, 'utf8'));
  try {
    // Its process group: the server and its uvicorn worker.
    process.kill(-pid, 'SIGTERM');
    console.log(`stopped MLflow server (pid ${pid})`);
  } catch {
    console.log(`MLflow server (pid ${pid}) was not running`);
  }
  fs.rmSync(MLFLOW_PID_FILE);
}
