/**
 * `npm run worker:torch -- [flags]`: the PyTorch training worker (python/durable_rl_torch) on the
 * project's Python environment, in the foreground. It takes the TypeScript workers' connection and
 * store flags and variables (--address / TEMPORAL_ADDRESS, --namespace, --tls*, --api-key-file,
 * --store / DURABLE_RL_STORE, --s3-*), and --task-queue (default durable-rl-training-torch).
 * `--nproc N` trains on N GPUs: the worker starts itself under torchrun, the model sharded with FSDP
 * (docs/torch-trainer.md, "Several GPUs").
 */
import { spawn } from 'node:child_process';
import { pythonBin } from './lib/python-env';
import { TORCH_PACKAGE_DIR } from './lib/torch-worker';

const child = spawn(pythonBin(), ['-m', 'durable_rl_torch.worker', ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, PYTHONPATH: TORCH_PACKAGE_DIR, PYTHONUNBUFFERED: '1' },
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
