"""The policy sharded over the ranks with PyTorch's FSDP2 (`fully_shard`): each decoder layer one unit,
the rest (embeddings, final norm, output head) the root's. Gradients are summed over the ranks, not
averaged: each rank's loss is already divided by the whole mini-batch's denominators (losses.LossNorm),
so the ranks' gradients add up to the single process's.

The output head is read by trainer.scores outside the model's forward (only the positions a loss reads
go through it), so scores runs as an FSDP forward method of the root (register_fsdp_forward_method):
the root's parameters are gathered around it."""
from __future__ import annotations

import types
from typing import Any

import torch
from torch.distributed.fsdp import FSDPModule, fully_shard, register_fsdp_forward_method

from .checkpoints import model_class_name
from .distributed import World, full_tensor
from .models import Placement
from .trainer import SCORES_METHOD, hf_model, scores


def is_sharded(model: torch.nn.Module) -> bool:
    return isinstance(model, FSDPModule)


def shard(model: torch.nn.Module, world: World, where: Placement) -> torch.nn.Module:
    """The model sharded in place over the world's ranks (a model sharded already is returned as it is).
    Parameters stay float32 and are gathered as such: bfloat16 runs under autocast, as in one process."""
    if is_sharded(model):
        return model
    mesh = world.mesh(where.device.type)
    layers = set(getattr(hf_model(model), "_no_split_modules", None) or [])
    if not layers:
        raise ValueError(f"{model_class_name(hf_model(model))} names no decoder layer classes (_no_split_modules) to shard by")
    for module in model.modules():
        if type(module).__name__ in layers:
            fully_shard(module, mesh=mesh)
    # The root's parameters stay gathered from its forward to its backward (the output head's chunks are recomputed there).
    fully_shard(model, mesh=mesh, reshard_after_forward=False)
    for module in model.modules():
        if isinstance(module, FSDPModule):
            module.set_gradient_divide_factor(1.0)
            module.set_force_sum_reduction_for_comms(True)
    setattr(model, SCORES_METHOD, types.MethodType(scores, model))
    register_fsdp_forward_method(model, SCORES_METHOD)
    return model


def gathered_state(model: torch.nn.Module, world: World, trainable_only: bool = False) -> dict[str, torch.Tensor]:
    """The model's whole state dict on rank 0, float32 on the CPU ({} on the other ranks); with
    trainable_only (a LoRA adapter), only the parameters that train."""
    out: dict[str, torch.Tensor] = {}
    if trainable_only:
        items: Any = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    else:
        items = model.state_dict().items()
    for name, t in items:
        whole = full_tensor(t.detach())
        if world.leader:
            out[name] = whole.to("cpu", torch.float32).contiguous()
        del whole
    return out
