"""`npm run worker:torch`: the torch training worker process.

    python -m durable_rl_torch.worker [--address host:port] [--namespace ns] [--tls ...] [--store folder|s3://...] [--nproc N]

The connection and store flags are the TypeScript workers' (workers/worker-config.ts), each with the
same environment variable, so one environment serves both. Activities run one at a time in a
one-thread pool: a CPU- or GPU-bound update in an `async def` would starve the event loop that sends
its heartbeats (the SDK's README), so they are synchronous functions that heartbeat between
micro-batches instead.

Several GPUs: `--nproc N` starts the worker again under torchrun (`torchrun --standalone
--nproc-per-node N -m durable_rl_torch.worker ...`, which may also be run directly, multi-node
included). Rank 0 runs the Temporal worker; the other ranks follow it (distributed.py), each training
its shard of the model (fsdp.py). When the ranks fall out of step (one died or failed alone), rank 0
fails the activity and every rank exits: Temporal retries the activity once a worker serves the
queue again.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

# workflows/task-queues.ts TRAINER_QUEUES.torch.
TORCH_TASK_QUEUE = "durable-rl-training-torch"

SETTINGS: dict[str, tuple[Optional[str], str]] = {
    "address": ("TEMPORAL_ADDRESS", "Temporal frontend (default 127.0.0.1:7233)"),
    "namespace": ("TEMPORAL_NAMESPACE", 'Temporal namespace (default "default")'),
    "tls": ("TEMPORAL_TLS", "TLS to Temporal; default true when any other TLS setting or an API key is given"),
    "tls-cert": ("TEMPORAL_TLS_CLIENT_CERT_PATH", "client certificate (PEM) for mTLS, with --tls-key"),
    "tls-key": ("TEMPORAL_TLS_CLIENT_KEY_PATH", "client private key (PEM) for mTLS, with --tls-cert"),
    "tls-ca": ("TEMPORAL_TLS_SERVER_CA_CERT_PATH", "server CA certificate (PEM); default the system's roots"),
    "tls-server-name": ("TEMPORAL_TLS_SERVER_NAME", "server name to verify (SNI override)"),
    "api-key-file": (None, "file holding a Temporal Cloud API key (or set TEMPORAL_API_KEY)"),
    "store": ("DURABLE_RL_STORE", "blob store (default .data/store)"),
    "s3-endpoint": ("DURABLE_RL_S3_ENDPOINT", "S3-compatible endpoint; default AWS S3"),
    "s3-region": ("DURABLE_RL_S3_REGION", "S3 signing region (default AWS_REGION, else us-east-1)"),
    "s3-path-style": ("DURABLE_RL_S3_PATH_STYLE", "bucket in the URL path (default true with --s3-endpoint)"),
}


class WorkerConfigError(Exception):
    pass


@dataclass
class Setting:
    value: str
    source: str


@dataclass
class WorkerSettings:
    address: str
    namespace: str
    tls: Any
    api_key: Optional[str]
    store: Any
    task_queue: str
    # Ranks to start under torchrun (--nproc); None: as launched.
    nproc: Optional[int] = None
    collective_timeout_s: float = 600.0


def read_settings(argv: list[str], env: dict[str, str]) -> dict[str, Setting]:
    parser = argparse.ArgumentParser(prog="worker:torch", description="durable-rl's PyTorch training worker. Each flag may instead be given by the environment variable in brackets; the flag wins.")
    for flag, (var, help_text) in SETTINGS.items():
        parser.add_argument(f"--{flag}", help=f"{help_text} [{var}]" if var else help_text)
    parser.add_argument("--task-queue", default=TORCH_TASK_QUEUE, help=f"the task queue to serve (default {TORCH_TASK_QUEUE}, the trainer.backend torch queue)")
    parser.add_argument("--nproc", help="ranks (GPUs) to train on: starts this worker under torchrun with that many processes, one per GPU, the model sharded over them with FSDP (default: one process, or torchrun's own ranks)")
    parser.add_argument("--collective-timeout", help="seconds a rank waits in a collective before the ranks are given up as out of step (default 600)")
    args = vars(parser.parse_args(argv))
    out: dict[str, Setting] = {"task-queue": Setting(args["task_queue"], "--task-queue")}
    for flag in ("nproc", "collective-timeout"):
        if args[flag.replace("-", "_")] is not None:
            out[flag] = Setting(args[flag.replace("-", "_")], f"--{flag}")
    for flag, (var, _) in SETTINGS.items():
        value = args[flag.replace("-", "_")]
        if value is not None:
            out[flag] = Setting(value, f"--{flag}")
        elif var and env.get(var):
            out[flag] = Setting(env[var], var)
    return out


def _bool(s: Setting) -> bool:
    if s.value not in ("true", "false"):
        raise WorkerConfigError(f'{s.source} must be true or false, got "{s.value}"')
    return s.value == "true"


def _read(s: Setting) -> bytes:
    try:
        return Path(s.value).read_bytes()
    except OSError as err:
        raise WorkerConfigError(f"{s.source}: cannot read {s.value} ({err.strerror})") from None


def _pem(s: Setting, block: str) -> bytes:
    data = _read(s)
    text = data.decode("utf8", "replace")
    ok = "-----BEGIN CERTIFICATE-----" in text if block == "CERTIFICATE" else re.search(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----", text)
    if not ok:
        raise WorkerConfigError(f"{s.source}: {s.value} is not a PEM {block.lower()}")
    return data


def parse_settings(argv: list[str], env: dict[str, str]) -> WorkerSettings:
    """workers/worker-config.ts's rules for the same settings: every value checked, errors name their flag or variable."""
    from temporalio.service import TLSConfig

    from .blob_store import store_from_spec
    from .distributed import DEFAULT_COLLECTIVE_TIMEOUT_S

    raw = read_settings(argv, env)
    address = raw["address"].value if "address" in raw else "127.0.0.1:7233"
    if not re.match(r"^[A-Za-z0-9.-]+:\d{1,5}$", address) and not re.match(r"^\[[0-9a-fA-F:]+\]:\d{1,5}$", address):
        raise WorkerConfigError(f'{raw["address"].source} must be host:port, got "{address}"')
    if "api-key-file" in raw and env.get("TEMPORAL_API_KEY"):
        raise WorkerConfigError("both --api-key-file and TEMPORAL_API_KEY are set; give the API key one way")
    api_key = _read(raw["api-key-file"]).decode().strip() if "api-key-file" in raw else env.get("TEMPORAL_API_KEY") or None
    if "api-key-file" in raw and not api_key:
        raise WorkerConfigError(f'{raw["api-key-file"].source}: {raw["api-key-file"].value} is empty')
    if ("tls-cert" in raw) != ("tls-key" in raw):
        given = raw.get("tls-cert") or raw["tls-key"]
        raise WorkerConfigError(f"{given.source} needs its pair: mTLS takes both a client certificate (--tls-cert / TEMPORAL_TLS_CLIENT_CERT_PATH) and its key (--tls-key / TEMPORAL_TLS_CLIENT_KEY_PATH)")
    detail = next((raw[k] for k in ("tls-cert", "tls-ca", "tls-server-name") if k in raw), None)
    explicit = _bool(raw["tls"]) if "tls" in raw else None
    if explicit is False and (detail or api_key):
        raise WorkerConfigError(f'{raw["tls"].source} is false, but {detail.source if detail else "an API key"} needs TLS')
    use_tls = explicit if explicit is not None else (detail is not None or api_key is not None)
    tls: Any = False
    if use_tls:
        tls = TLSConfig(
            server_root_ca_cert=_pem(raw["tls-ca"], "CERTIFICATE") if "tls-ca" in raw else None,
            domain=raw["tls-server-name"].value if "tls-server-name" in raw else None,
            client_cert=_pem(raw["tls-cert"], "CERTIFICATE") if "tls-cert" in raw else None,
            client_private_key=_pem(raw["tls-key"], "PRIVATE KEY") if "tls-key" in raw else None,
        )
    path_style = _bool(raw["s3-path-style"]) if "s3-path-style" in raw else None
    # The TypeScript workers' default (workers/create-workers.ts): the repository's .data/store.
    spec = raw["store"].value if "store" in raw else str(Path(__file__).resolve().parents[2] / ".data" / "store")
    try:
        store = store_from_spec(spec, raw["s3-endpoint"].value if "s3-endpoint" in raw else None, raw["s3-region"].value if "s3-region" in raw else None, path_style)
    except ValueError as err:
        raise WorkerConfigError(str(err)) from None
    nproc = None
    if "nproc" in raw:
        if not re.fullmatch(r"[1-9][0-9]*", raw["nproc"].value):
            raise WorkerConfigError(f'--nproc must be a positive whole number, got "{raw["nproc"].value}"')
        nproc = int(raw["nproc"].value)
        launched = os.environ.get("WORLD_SIZE")
        if launched is not None and int(launched) != nproc:
            raise WorkerConfigError(f"--nproc is {nproc}, but torchrun launched this worker with {launched} ranks (WORLD_SIZE); give the ranks one way")
    timeout = DEFAULT_COLLECTIVE_TIMEOUT_S
    if "collective-timeout" in raw and (nproc or int(os.environ.get("WORLD_SIZE", "1"))) < 2:
        raise WorkerConfigError("--collective-timeout applies to several ranks: give --nproc N (N > 1) or start the worker under torchrun")
    if "collective-timeout" in raw:
        try:
            timeout = float(raw["collective-timeout"].value)
        except ValueError:
            timeout = -1
        if not timeout > 0:
            raise WorkerConfigError(f'--collective-timeout must be a positive number of seconds, got "{raw["collective-timeout"].value}"')
    return WorkerSettings(address, raw["namespace"].value if "namespace" in raw else "default", tls, api_key, store, raw["task-queue"].value, nproc, timeout)


def _import_models() -> None:
    """Imported at start, not on the first activity: transformers' lazy modules take seconds to load."""
    import transformers
    from transformers import GPT2LMHeadModel, LlamaForCausalLM, Qwen3ForCausalLM  # noqa: F401

    # A worker's log is a record, not a terminal: no progress bars of weights being loaded.
    transformers.utils.logging.disable_progress_bar()


async def run(settings: WorkerSettings, interceptors: Sequence[Any] = (), world: Any = None) -> None:
    import torch
    from temporalio.client import Client
    from temporalio.worker import Worker

    from .activities import TrainingActivities

    client = await Client.connect(settings.address, namespace=settings.namespace, tls=settings.tls, api_key=settings.api_key)
    _import_models()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    broken = False

    def on_broken() -> None:
        nonlocal broken
        broken = True
        loop.call_soon_threadsafe(stop.set)

    acts = TrainingActivities(settings.store, world=world, on_broken=on_broken)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="torch-activity") as pool:
        worker = Worker(
            client, task_queue=settings.task_queue, activities=acts.handlers(), activity_executor=pool, max_concurrent_activities=1, interceptors=list(interceptors)
        )
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        device = f"cuda ({torch.cuda.get_device_name()})" if torch.cuda.is_available() else f"cpu ({torch.get_num_threads()} threads)"
        if world is not None:
            device += f", {world.size} ranks (FSDP)"
        if os.environ.get("DURABLE_RL_EXIT_WITH_PARENT") == "1":
            loop.create_task(_exit_with_parent(stop))
        async with worker:
            # The line scripts/lib/worker-process.ts waits for.
            print(f"[worker:torch {os.getpid()}] serving {settings.task_queue} on {settings.address} namespace {settings.namespace}; torch {torch.__version__} on {device}", flush=True)
            await stop.wait()
        print(f"[worker:torch {os.getpid()}] stopped", flush=True)
    if world is not None:
        if broken:
            # Out of step: exit at once (tearing down the process groups could wait on the other ranks).
            os._exit(1)
        try:
            world.post({"stop": True})
        except Exception:  # the other ranks are gone already (torchrun stops them too)
            pass


def follow(settings: WorkerSettings, world: Any) -> None:
    """A rank other than 0: runs each job rank 0 posts, until it posts stop or is gone."""
    from .activities import TrainingActivities
    from .distributed import WorldBroken

    _import_models()
    acts = TrainingActivities(settings.store, world=world)
    tag = f"[worker:torch {os.getpid()} rank {world.rank}]"
    print(f"{tag} following rank 0 of {world.size}", flush=True)
    while True:
        try:
            message = world.receive()
        except Exception as err:
            print(f"{tag} rank 0 is gone ({err}); exiting", flush=True)
            os._exit(1)
        if message.get("stop"):
            print(f"{tag} stopped", flush=True)
            return
        try:
            acts.follow(message)
        except WorldBroken as err:
            print(f"{tag} {err}; exiting", flush=True)
            os._exit(1)


async def _exit_with_parent(stop: asyncio.Event) -> None:
    """DURABLE_RL_EXIT_WITH_PARENT (scripts/lib/worker-process.ts): shut down once the parent process is
    gone (under --nproc, the process that started torchrun: DURABLE_RL_PARENT_PID)."""
    parent = int(os.environ.get("DURABLE_RL_PARENT_PID") or os.getppid())
    while not stop.is_set():
        if not _alive(parent) or ("DURABLE_RL_PARENT_PID" not in os.environ and os.getppid() != parent):
            stop.set()
        await asyncio.sleep(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _under_torchrun(settings: WorkerSettings, argv: list[str]) -> None:
    """--nproc N outside torchrun: this process becomes torchrun, starting N ranks of this worker."""
    if settings.nproc is None or settings.nproc == 1 or "WORLD_SIZE" in os.environ:
        return
    os.environ.setdefault("DURABLE_RL_PARENT_PID", str(os.getppid()))
    # The ranks know their number from torchrun; and torchrun's own parser would take --nproc for its --nproc-per-node.
    rest = [a for i, a in enumerate(argv) if not (a == "--nproc" or a.startswith("--nproc=") or (i > 0 and argv[i - 1] == "--nproc"))]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={settings.nproc}", "-m", "durable_rl_torch.worker", *rest]
    sys.stdout.flush()
    os.execv(sys.executable, cmd)


def main(argv: Optional[list[str]] = None, interceptors: Sequence[Any] = ()) -> None:
    args = sys.argv[1:] if argv is None else argv
    try:
        settings = parse_settings(args, dict(os.environ))
    except WorkerConfigError as err:
        print(f"worker:torch: {err}", file=sys.stderr)
        sys.exit(2)
    _under_torchrun(settings, args)
    from .distributed import init_world, launched_ranks

    world = init_world(settings.collective_timeout_s) if launched_ranks() > 1 else None
    if world is not None and not world.leader:
        follow(settings, world)
        return
    asyncio.run(run(settings, interceptors, world))


if __name__ == "__main__":
    main()
