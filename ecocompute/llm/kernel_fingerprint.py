"""A fingerprint of the kernels a captured decode step runs, so that two reports can tell
whether they ran the same code (two compiles may choose different kernels; two units
given the same software should not).

The source is the CUDA graph itself: PyTorch keeps the captured graph when its debug
mode is on, and cudaGraphDebugDotPrint (CUDAGraph.debug_dump) writes it as a DOT file in
which every kernel node names its function and launch shape. The fingerprint is the
SHA-256 of the kernel nodes in node order, each as "function|grid|block|shared memory";
kernel arguments (addresses) are left out, since they differ from process to process.
What it cannot see: two binaries of one function name and launch shape (a kernel built
with other pipelining stages); the graph-level shape of the step is what it pins.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SOURCE = "CUDA graph of the decode step (cudaGraphDebugDotPrint, verbose)"

# One node statement of the dump: "graph_0_node_12"[... label="..."]
_NODE = re.compile(r'"(?:graph_\d+_)?node_(\d+)"\s*\[(.*?)\];?\s*$', re.M | re.S)
_LABEL = re.compile(r'label="((?:[^"\\]|\\.)*)"', re.S)
_DIM = r"\{\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\}"
_FUNC = re.compile(r"\{\s*func\s*\|\s*([^|{}]+?)\s*\}", re.S)
_GRID = re.compile(r"gridDim\s*\|\s*" + _DIM, re.S)
_BLOCK = re.compile(r"blockDim\s*\|\s*" + _DIM, re.S)
_SHARED = re.compile(r"sharedMemBytes\s*\|\s*(\d+)", re.S)
_HEX = re.compile(r"0x[0-9a-fA-F]+")


@dataclass(frozen=True)
class KernelNode:
    index: int  # the node's number in the graph
    function: str
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    shared_mem_bytes: int | None

    def canonical(self) -> str:
        return f"{self.function}|{self.grid}|{self.block}|{self.shared_mem_bytes}"


def kernel_nodes(dot: str) -> list[KernelNode]:
    """The kernel nodes of a DOT dump, in node order (memset, memcpy and event nodes
    are not kernels and are left out)."""
    nodes = []
    for match in _NODE.finditer(dot):
        label_match = _LABEL.search(match.group(2))
        if label_match is None:
            continue
        label = label_match.group(1).replace("\\n", "\n").replace('\\"', '"')
        if "KERNEL" not in label.upper() or (func := _FUNC.search(label)) is None:
            continue
        grid, block, shared = _GRID.search(label), _BLOCK.search(label), _SHARED.search(label)
        nodes.append(
            KernelNode(
                index=int(match.group(1)),
                function=" ".join(func.group(1).split()),
                grid=None if grid is None else (int(grid[1]), int(grid[2]), int(grid[3])),
                block=None if block is None else (int(block[1]), int(block[2]), int(block[3])),
                shared_mem_bytes=None if shared is None else int(shared[1]),
            )
        )
    return sorted(nodes, key=lambda n: n.index)


def fingerprint(nodes: Sequence[KernelNode]) -> dict[str, Any]:
    """The report's record of a step's kernels."""
    digest = hashlib.sha256("\n".join(n.canonical() for n in nodes).encode()).hexdigest()
    return {
        "sha256": digest,
        "kernels": len(nodes),
        "distinct_functions": len({n.function for n in nodes}),
        "source": SOURCE,
    }


def dot_fingerprint(dot: str) -> dict[str, Any]:
    """The fingerprint of a DOT dump. Where no kernel node can be parsed (a driver that
    writes another layout), the whole dump with every hexadecimal value blanked out is
    hashed instead, and the record says so."""
    nodes = kernel_nodes(dot)
    if nodes:
        return fingerprint(nodes)
    digest = hashlib.sha256(_HEX.sub("0x", dot).encode()).hexdigest()
    return {
        "sha256": digest,
        "kernels": None,
        "distinct_functions": None,
        "source": SOURCE + "; no kernel node parsed: the dump's text, addresses blanked",
    }


def unavailable(why: str) -> dict[str, Any]:
    return {"sha256": None, "kernels": None, "distinct_functions": None, "source": why}
