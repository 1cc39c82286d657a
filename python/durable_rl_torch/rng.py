"""The TypeScript side's seeded generators (src/domain/rng.ts), bit for bit, so the
torch worker draws the same SFT batches and the same initial weights from a seed as the tfjs trainer."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

M32 = 0xFFFFFFFF


def _imul(a: int, b: int) -> int:
    return (a * b) & M32


def mulberry32(seed: int) -> Callable[[], float]:
    state = seed & M32

    def rand() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & M32
        t = state
        t = _imul(t ^ (t >> 15), t | 1)
        t = (t ^ ((t + _imul(t ^ (t >> 7), t | 61)) & M32)) & M32
        return ((t ^ (t >> 14)) & M32) / 4294967296

    return rand


def mix_seed(seed: int, stream: int) -> int:
    h = ((seed & M32) ^ _imul((stream + 1) & M32, 0x9E3779B9)) & M32
    h = _imul(h ^ (h >> 16), 0x85EBCA6B)
    h = _imul(h ^ (h >> 13), 0xC2B2AE35)
    return (h ^ (h >> 16)) & M32


def mulberry32_block(seed: int, start: int, n: int) -> np.ndarray:
    """Draws start .. start+n-1 of mulberry32(seed), at once: its state after draw i is seed + (i+1)·C."""
    with np.errstate(over="ignore"):
        i = np.arange(start + 1, start + n + 1, dtype=np.uint64)
        t = ((np.uint64(seed & M32) + i * np.uint64(0x6D2B79F5)) & np.uint64(M32)).astype(np.uint32)
        t = (t ^ (t >> np.uint32(15))) * (t | np.uint32(1))
        t = t ^ (t + (t ^ (t >> np.uint32(7))) * (t | np.uint32(61)))
        return (t ^ (t >> np.uint32(14))).astype(np.float64) / 4294967296


def fill_normal(size: int, std: float, seed: int, start: int) -> tuple[np.ndarray, int]:
    """src/domain/rng.ts fillNormal over mulberry32(seed) from draw `start`: Box-Muller pairs in float64,
    stored as float32. Returns the values and the next draw's index."""
    pairs = (size + 1) // 2
    u = mulberry32_block(seed, start, 2 * pairs)
    u1 = np.maximum(u[0::2], 1e-12)
    r = np.sqrt(-2 * np.log(u1)) * std
    theta = 2 * math.pi * u[1::2]
    out = np.empty(2 * pairs, dtype=np.float64)
    out[0::2] = r * np.cos(theta)
    out[1::2] = r * np.sin(theta)
    return out[:size].astype(np.float32), start + 2 * pairs
