"""The ranks of a worker started under torchrun (several GPUs, or CPU processes on gloo): how rank 0,
which runs the Temporal worker, hands a training activity to the others and keeps them in step.

Two gloo groups beside the training's own (nccl on CUDA, gloo on CPU):
- `control`, with no practical timeout: the followers wait on it for the next job while the worker is
  idle (a rollout can take longer than any collective timeout). gloo sees a peer process that died
  at once (its socket closes), so a dead rank 0 ends the followers, and a dead follower fails the
  next job.
- `sync`, with the collective timeout: the small objects of a job (the cancel flag of each heartbeat,
  metric sums, what rank 0 alone wrote) and the handshake that ends every job.

Every rank runs a job's same schedule, so an error raised by the job's own inputs is raised on every
rank at the same point: the handshake sees the same message everywhere and the ranks serve the next
job. Any other outcome (one rank failed, a collective failed or timed out) leaves the ranks out of
step: the handshake raises WorldBroken, and the processes exit so that Temporal retries the activity
on a worker whose ranks start afresh (torchrun stops every rank once one exits).
"""
from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TypeVar

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor, distribute_tensor

T = TypeVar("T")

# No job for a week is still not a failure: the followers wait for the next one this long.
IDLE_TIMEOUT = datetime.timedelta(days=365)
DEFAULT_COLLECTIVE_TIMEOUT_S = 600.0


class WorldBroken(RuntimeError):
    """The ranks are out of step (a rank died, failed alone, or a collective timed out): no further job can run."""


class LeaderFailed(RuntimeError):
    """What rank 0 alone did (writing the checkpoint, naming a result) failed: raised on the other ranks with its message."""


@dataclass
class World:
    rank: int
    size: int
    control: Any
    sync: Any
    _meshes: dict[str, Any] = field(default_factory=dict)

    @property
    def leader(self) -> bool:
        return self.rank == 0

    def mesh(self, device_type: str) -> Any:
        """The one-dimensional mesh of every rank that FSDP shards over, per device type."""
        if device_type not in self._meshes:
            from torch.distributed.device_mesh import init_device_mesh

            self._meshes[device_type] = init_device_mesh(device_type, (self.size,))
        return self._meshes[device_type]

    # ---- jobs: rank 0 posts, the followers receive ----

    def post(self, message: dict[str, Any]) -> None:
        _broadcast(message, self.control)

    def receive(self) -> dict[str, Any]:
        return _broadcast(None, self.control)

    # ---- inside a job ----

    def share(self, value: Any = None) -> Any:
        """rank 0's value on every rank."""
        return _broadcast(value, self.sync)

    def gather(self, value: Any) -> list[Any]:
        out: list[Any] = [None] * self.size
        dist.all_gather_object(out, value, group=self.sync)
        return out

    def sum(self, values: list[float]) -> list[float]:
        """Element-wise sums over the ranks, in float64 (the single process sums Python floats)."""
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t, group=self.sync)
        return t.tolist()

    def leader_does(self, fn: Callable[[], T]) -> T:
        """fn() on rank 0 alone (store writes); its value on every rank, or its error raised on every rank."""
        if self.leader:
            try:
                value = fn()
            except BaseException as err:
                self.share({"error": str(err)})
                raise
            self.share({"value": value})
            return value
        got = self.share()
        if "error" in got:
            raise LeaderFailed(got["error"])
        return got["value"]

    def settle(self, error: Optional[BaseException]) -> None:
        """The handshake that ends a job: every rank succeeded, or every rank failed with the same message
        (the job's inputs); anything else raises WorldBroken."""
        mine = None if error is None else f"{error}"
        try:
            outcomes = self.gather(mine)
        except Exception as err:
            raise WorldBroken(f"rank {self.rank}: the ranks' handshake after the job failed ({err})") from err
        if any(o != outcomes[0] for o in outcomes):
            told = "; ".join(f"rank {r}: {'ok' if o is None else o}" for r, o in enumerate(outcomes))
            raise WorldBroken(f"the ranks ended the job differently ({told})")


def _broadcast(value: Any, group: Any) -> Any:
    box = [value]
    dist.broadcast_object_list(box, src=0, group=group)
    return box[0]


def launched_ranks() -> int:
    """WORLD_SIZE as torchrun sets it (1 outside torchrun)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def init_world(collective_timeout_s: float = DEFAULT_COLLECTIVE_TIMEOUT_S) -> World:
    """This process's rank of a torchrun launch (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT from its
    environment): nccl for CUDA tensors where this machine has CUDA, gloo for CPU ones."""
    timeout = datetime.timedelta(seconds=collective_timeout_s)
    backend = "gloo"
    if torch.cuda.is_available():
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        backend = "cpu:gloo,cuda:nccl"
    dist.init_process_group(backend, timeout=timeout)
    control = dist.new_group(backend="gloo", timeout=IDLE_TIMEOUT)
    sync = dist.new_group(backend="gloo", timeout=timeout)
    return World(dist.get_rank(), dist.get_world_size(), control, sync)


# ---- tensors of sharded parameters ----


def full_tensor(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor of a shard (a collective: every rank calls it), or the tensor itself."""
    return t.full_tensor() if isinstance(t, DTensor) else t


def sharded_like(full: torch.Tensor, param: torch.Tensor) -> torch.Tensor:
    """This rank's shard of `full`, laid out as `param` (every rank holds `full`: no communication)."""
    if not isinstance(param, DTensor):
        return full.to(param.device, torch.float32).clone()
    if isinstance(full, DTensor):
        return full.detach().clone()
    return distribute_tensor(full.to(param.device, torch.float32), param.device_mesh, param.placements, src_data_rank=None)
