/**
 * `npm run engine:vllm -- --model <dir> [--port 8000] [--name policy]`: a real vLLM server (the CPU
 * build setup installs) for a Hugging Face directory, on loopback, with the settings RL needs
 * (scripts/lib/vllm-server.ts). Runs until interrupted.
 */
import path from 'node:path';
import { Command } from 'commander';
import { DATA_DIR } from '../src/paths';
import { startVllm } from './lib/vllm-server';

async function main(): Promise<void> {
  const opts = new Command()
    .name('engine-vllm')
    .requiredOption('--model <dir>', 'Hugging Face model directory (npm run export:hf)')
    .option('--port <n>', 'port on 127.0.0.1', '8000')
    .option('--name <name>', 'served model name (inference.openai.model)', 'policy')
    .parse()
    .opts<{ model: string; port: string; name: string }>();
  const logFile = path.join(DATA_DIR, 'logs', 'vllm.log');
  console.log(`starting vLLM for ${opts.model} (about a minute on 2 cores; log ${logFile})`);
  const server = await startVllm({ model: path.resolve(opts.model), port: Number(opts.port), servedModelName: opts.name, logFile });
  console.log(`vLLM: ${server.baseUrl}/v1 serving '${opts.name}' (pid ${server.pid}); Ctrl-C stops it`);
  const stop = (): void => void server.stop().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
