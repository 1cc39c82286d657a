"""Two CPU ranks on gloo for the FSDP tests: a free port, processes spawned with the environment
torchrun would give each rank, and what each rank returned."""
import os
import pickle
import socket
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Optional

import torch
import torch.multiprocessing as mp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank_main(rank: int, size: int, port: int, fn: Callable[[Any], Any], out_dir: str, timeout_s: float) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(size), LOCAL_RANK=str(rank))
    # Two ranks on two cores: one thread each.
    torch.set_num_threads(1)
    from durable_rl_torch.distributed import init_world

    world = init_world(timeout_s)
    try:
        result = fn(world)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    Path(out_dir, f"rank{rank}.pkl").write_bytes(pickle.dumps(result))
    sys.stdout.flush()
    # Without tearing down the process groups: after a test of a rank dying they are broken.
    os._exit(0)


def run_ranks(fn: Callable[[Any], Any], tmp: Path, size: int = 2, timeout_s: float = 60, wait_s: float = 300) -> list[Optional[Any]]:
    """fn(world) on `size` spawned ranks; each rank's return value by rank (None for a rank that
    exited without one: fn may end its own process). A rank whose fn raised fails the test."""
    ctx = mp.start_processes(_rank_main, args=(size, free_port(), fn, str(tmp), timeout_s), nprocs=size, start_method="spawn", join=False)
    for p in ctx.processes:
        p.join(wait_s)
    alive = [r for r, p in enumerate(ctx.processes) if p.is_alive()]
    for p in ctx.processes:
        if p.is_alive():
            p.kill()
    assert not alive, f"ranks {alive} did not finish within {wait_s} s"
    failed = [r for r, p in enumerate(ctx.processes) if p.exitcode == 1]
    assert not failed, f"ranks {failed} failed (their tracebacks are above)"
    return [pickle.loads((tmp / f"rank{r}.pkl").read_bytes()) if (tmp / f"rank{r}.pkl").exists() else None for r in range(size)]
