"""Blob-store names per run: src/store/run-names.ts, so both workers agree where things live."""
import re


def _pad(n: int) -> str:
    return str(n).rjust(6, "0")


def run_key(run_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", run_id)


def checkpoint(run_id: str, step: int) -> str:
    return f"runs/{run_key(run_id)}/ckpt/step-{_pad(step)}"


def checkpoint_prefix(run_id: str) -> str:
    return f"runs/{run_key(run_id)}/ckpt/"


def sft_chunk(run_id: str, to_step: int) -> str:
    return f"runs/{run_key(run_id)}/sft/to-step-{_pad(to_step)}"


def rl_step(run_id: str, step: int) -> str:
    return f"runs/{run_key(run_id)}/rl/step-{_pad(step)}"


def rollout_record(run_id: str, step: int) -> str:
    return f"runs/{run_key(run_id)}/rollouts/step-{_pad(step)}"


def weights(run_id: str, version: int) -> str:
    return f"runs/{run_key(run_id)}/weights/v{_pad(version)}"


def latest_weights(run_id: str) -> str:
    return f"runs/{run_key(run_id)}/weights/latest"


def step_of_name(name: str) -> int:
    return int(name[name.rfind("-") + 1 :])


def checkpoint_steps(names: list[str]) -> list[int]:
    """Steps of the checkpoint names a list_names(checkpoint_prefix(...)) returned."""
    return sorted(step_of_name(n) for n in names if re.search(r"/ckpt/step-\d+$", n))
