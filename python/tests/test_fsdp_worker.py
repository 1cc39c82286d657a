"""The worker under torchrun on a real Temporal dev server: `python -m durable_rl_torch.worker --nproc 2`
(two CPU ranks on gloo, rank 0 polling the queue) serves two trainGrpo activities of a workflow, and
they return one process's numbers, checkpoints and Adam moments (within 1e-5)."""
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import torch
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from durable_rl_torch.activities import TrainingActivities
from durable_rl_torch.blob_store import FsBlobStore

from fsdp_helpers import free_port
from test_fsdp import max_diff
from test_fsdp_activities import RL, checkpoint_tensors, seed_store

TOLERANCE = 1e-5
CACHE = Path(os.environ.get("DURABLE_RL_CACHE") or Path.home() / ".cache" / "durable-rl")
# scripts/lib/dev-server.ts: the Temporal CLI setup builds.
CLIS = sorted(CACHE.glob("temporal-cli-v*/temporal"))
PACKAGE_DIR = Path(__file__).resolve().parents[1]


@workflow.defn(name="FsdpWorkerTest")
class OneActivity:
    @workflow.run
    async def run(self, args: list[Any]) -> Any:
        name, raw, queue = args
        return await workflow.execute_activity(
            name, raw, task_queue=queue, start_to_close_timeout=timedelta(minutes=5), heartbeat_timeout=timedelta(seconds=60), retry_policy=RetryPolicy(maximum_attempts=1)
        )


class WorkerProcess:
    """The torch worker under --nproc 2, its output kept and echoed; `serving` set once rank 0 polls."""

    def __init__(self, address: str, store: Path, queue: str):
        env = {**os.environ, "PYTHONPATH": str(PACKAGE_DIR), "PYTHONUNBUFFERED": "1", "DURABLE_RL_EXIT_WITH_PARENT": "1"}
        args = ["--nproc", "2", "--address", address, "--store", str(store), "--task-queue", queue]
        self.proc = subprocess.Popen([sys.executable, "-m", "durable_rl_torch.worker", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self.serving = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            sys.stdout.write(line)
            if " serving " in line:
                self.serving.set()

    def wait_serving(self, timeout_s: float) -> bool:
        for _ in range(int(timeout_s)):
            if self.serving.wait(1) or self.proc.poll() is not None:
                break
        return self.serving.is_set()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.mark.skipif(not CLIS, reason=f"no Temporal CLI under {CACHE} (scripts/setup.sh builds it)")
def test_the_worker_under_torchrun_serves_train_grpo(tmp_path: Path):
    inputs = seed_store(tmp_path / "ranks")
    shutil.copytree(tmp_path / "ranks", tmp_path / "one")
    port = free_port()
    queue = "fsdp-worker-test"

    async def serve() -> tuple[list[dict[str, Any]], list[str]]:
        env = await WorkflowEnvironment.start_local(dev_server_existing_path=str(CLIS[-1]), port=port)
        worker = WorkerProcess(f"127.0.0.1:{port}", tmp_path / "ranks", queue)
        try:
            async with env, Worker(env.client, task_queue="fsdp-test-workflows", workflows=[OneActivity], workflow_runner=UnsandboxedWorkflowRunner()):
                assert await asyncio.to_thread(worker.wait_serving, 180), "".join(worker.lines)
                out, ckpt = [], inputs["start"]
                for step, sets in zip((1, 2), inputs["sets"]):
                    raw = {"runId": "run", "checkpoint": ckpt, "samples": sets, "step": step, "rl": RL}
                    out.append(await env.client.execute_workflow(OneActivity.run, ["trainGrpo", raw, queue], id=f"fsdp-step-{step}", task_queue="fsdp-test-workflows"))
                    ckpt = out[-1]["checkpoint"]
        finally:
            worker.stop()
        return out, worker.lines

    served, lines = asyncio.run(serve())
    assert any(" serving " in line and "2 ranks (FSDP)" in line for line in lines)
    assert any("rank 1] following rank 0 of 2" in line for line in lines)
    torch.set_num_threads(2)
    acts, ckpt = TrainingActivities(FsBlobStore(tmp_path / "one")), inputs["start"]
    for step, sets, got in zip((1, 2), inputs["sets"], served):
        want = acts.train_grpo({"runId": "run", "checkpoint": ckpt, "samples": sets, "step": step, "rl": RL})
        ckpt = want["checkpoint"]
        a, b = dict(got), dict(want)
        ca, cb = a.pop("checkpoint"), b.pop("checkpoint")
        for n in ("updateSeconds", "paddedTokensRun"):
            a.pop(n), b.pop(n)
        assert max(d for _, d in max_diff(a, b)) < TOLERANCE
        ta, tb = checkpoint_tensors(FsBlobStore(tmp_path / "ranks"), ca), checkpoint_tensors(FsBlobStore(tmp_path / "one"), cb)
        assert max(d for _, d in max_diff(ta, tb)) < TOLERANCE


@pytest.mark.parametrize(
    "argv, env, message",
    [
        (["--nproc", "0"], {}, '--nproc must be a positive whole number, got "0"'),
        (["--nproc", "two"], {}, '--nproc must be a positive whole number, got "two"'),
        (["--nproc", "2"], {"WORLD_SIZE": "4"}, "--nproc is 2, but torchrun launched this worker with 4 ranks (WORLD_SIZE); give the ranks one way"),
        (["--collective-timeout", "60"], {}, "--collective-timeout applies to several ranks: give --nproc N (N > 1) or start the worker under torchrun"),
        (["--nproc", "2", "--collective-timeout", "-1"], {}, '--collective-timeout must be a positive number of seconds, got "-1"'),
    ],
)
def test_rank_flags_are_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str], env: dict[str, str], message: str):
    from durable_rl_torch.worker import WorkerConfigError, parse_settings

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(WorkerConfigError) as err:
        parse_settings([*argv, "--store", str(tmp_path)], {})
    assert str(err.value) == message
    settings = parse_settings(["--nproc", "2", "--collective-timeout", "90", "--store", str(tmp_path)], {}) if not env else None
    assert settings is None or (settings.nproc, settings.collective_timeout_s) == (2, 90.0)
