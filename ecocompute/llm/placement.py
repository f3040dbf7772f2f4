"""Where the blocks of a model built in memory go: a pure plan over per-GPU budgets.

A block is what must stay on one device: a decoder layer, the embeddings, the final
norm, the output layer. The plan puts the whole model on one GPU whenever it fits
there (the GPU with the most room; the lowest index on a tie), so that a quantized
model leaves the other GPUs free; otherwise it fills the GPUs in index order, as
accelerate's "sequential" device map does, each up to its budget. What fits nowhere
is refused: nothing spills to the CPU or disk, where energy is not GPU-package energy.

Each GPU keeps room for the largest transient of the build (a block at 16 bits before
it is quantized, and the float32 chunk its random values are drawn in), on top of the
blocks placed there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Block:
    """One unit of placement: its module name, its bytes as stored at the format, and
    the bytes it holds for a moment while it is built."""

    name: str
    stored_bytes: int
    build_bytes: int  # extra bytes on its device while it is built (0: built in place)


class DoesNotFit(Exception):
    """No placement within the budgets; the message says what was needed and what was
    there, in MiB."""


def reserve_bytes(blocks: Sequence[Block]) -> int:
    """Room each GPU keeps for the largest transient of the build."""
    return max((b.build_bytes for b in blocks), default=0)


def plan(blocks: Sequence[Block], budgets_bytes: Mapping[int, int]) -> dict[str, int]:
    """Block name -> device index. Raises DoesNotFit when the blocks do not fit within
    the budgets (each less the build's reserve)."""
    if not budgets_bytes:
        raise DoesNotFit("no GPU to place it on")
    room = {i: budgets_bytes[i] - reserve_bytes(blocks) for i in sorted(budgets_bytes)}
    total = sum(b.stored_bytes for b in blocks)
    roomiest = max(room, key=lambda i: (room[i], -i))
    if total <= room[roomiest]:
        return {b.name: roomiest for b in blocks}
    placed: dict[str, int] = {}
    devices = iter(room)
    device = next(devices)
    left = room[device]
    for block in blocks:
        while block.stored_bytes > left:
            nxt = next(devices, None)
            if nxt is None:
                have = ", ".join(f"GPU {i}: {max(r, 0) / 2**20:,.0f}" for i, r in room.items())
                weights = f"{total / 2**20:,.0f} MiB of weights"
                raise DoesNotFit(f"{weights}, room for blocks on {have} MiB")
            device, left = nxt, room[nxt]
        placed[block.name] = device
        left -= block.stored_bytes
    return placed
