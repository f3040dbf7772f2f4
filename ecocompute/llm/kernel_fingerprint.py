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

Beside the hash, the record lists the step's distinct launches (function, grid, block,
shared memory) with how often each runs, in order of first launch: two compiles whose
hashes differ can then be compared kernel by kernel (which matmul an autotuner chose).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ecocompute.core.json_types import Json, JsonObject
from ecocompute.errors import one_line

SOURCE = "CUDA graph of the decode step (cudaGraphDebugDotPrint, verbose)"

# One node statement of the dump: "graph_1_node_12"[... label="..."]; a kernel node's
# label (CUDA 13, verbose) holds "{ID | 12 (topoId: 3) | name<<<grid,block,shared>>>}",
# with DOT's escapes before < > { } |, and grid and block as "64" or "{2,64}".
_NODE = re.compile(r'"(?:graph_\d+_)?node_(\d+)"\s*\[(.*?)\];?\s*$', re.M | re.S)
_LABEL = re.compile(r'label="((?:[^"\\]|\\.)*)"', re.S)
_ESCAPE = re.compile(r"\\(.)")
_KERNEL = re.compile(r"\{ID \| (\d+)(?: \(topoId: \d+\))? \| (.+?)<<<(.+?)>>>\}", re.S)
_HEX = re.compile(r"0x[0-9a-fA-F]+")
# A launch's grid, block (each "64" or "{2,64}") and shared memory, split at the commas
# outside braces.
_DIMS = r"(\s*\{[^{}]*\}\s*|[^{},]*)"
_LAUNCH = re.compile(rf"{_DIMS},{_DIMS},([^{{}},]*)")


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
    """The kernel nodes of a DOT dump, in node order (memcpy, memset and event nodes
    are not kernels and are left out)."""
    nodes = []
    for match in _NODE.finditer(dot):
        label_match = _LABEL.search(match.group(2))
        label = _ESCAPE.sub(r"\1", label_match.group(1)) if label_match else ""
        is_kernel = label.lstrip("{ \n").startswith("KERNEL")
        kernel = _KERNEL.search(label) if is_kernel else None
        if kernel is None:
            continue
        launch = _launch(kernel.group(3)) or (None, None, None)
        nodes.append(KernelNode(int(kernel.group(1)), kernel.group(2).strip(), *launch))
    return sorted(nodes, key=lambda n: n.index)


def _launch(text: str) -> tuple[tuple[int, int, int], tuple[int, int, int], int] | None:
    """ "{2,64},384,164308" -> ((2, 64, 1), (384, 1, 1), 164308); None if unreadable."""
    parts = _LAUNCH.fullmatch(text)
    if parts is None:
        return None
    try:
        grid, block = (_dims(p) for p in parts.groups()[:2])
        return grid, block, int(parts.group(3))
    except ValueError:
        return None


def _dims(text: str) -> tuple[int, int, int]:
    values = [int(v) for v in text.strip().strip("{}").split(",")]
    if not 1 <= len(values) <= 3:
        raise ValueError(text)
    values += [1] * (3 - len(values))
    return values[0], values[1], values[2]


def fingerprint(nodes: Sequence[KernelNode]) -> JsonObject:
    """The report's record of a step's kernels."""
    digest = hashlib.sha256("\n".join(n.canonical() for n in nodes).encode()).hexdigest()
    # a Counter keeps the order keys first came in: the order of first launch
    counts = Counter((n.function, n.grid, n.block, n.shared_mem_bytes) for n in nodes)
    launches: list[Json] = [
        {
            "function": function,
            "grid": _listed(grid),
            "block": _listed(block),
            "shared_mem_bytes": shared,
            "count": count,
        }
        for (function, grid, block, shared), count in counts.items()
    ]
    return {
        "sha256": digest,
        "kernels": len(nodes),
        "distinct_functions": len({n.function for n in nodes}),
        "source": SOURCE,
        "launches": launches,
    }


def _listed(dims: tuple[int, int, int] | None) -> list[Json] | None:
    return None if dims is None else list(dims)


def dot_fingerprint(dot: str) -> JsonObject:
    """The fingerprint of a DOT dump. Where no kernel node can be parsed (a driver that
    writes another layout), the whole dump with every hexadecimal value blanked out is
    hashed instead, and the record says so."""
    nodes = kernel_nodes(dot)
    if nodes:
        return fingerprint(nodes)
    digest = hashlib.sha256(_HEX.sub("0x", dot).encode()).hexdigest()
    blanked = unavailable(SOURCE + "; no kernel node parsed: the dump's text, addresses blanked")
    return {**blanked, "sha256": digest}


def unavailable(why: str) -> JsonObject:
    return {"sha256": None, "kernels": None, "distinct_functions": None, "source": why}


def kept_graph() -> Any:
    """A CUDA graph that keeps its captured cudaGraph_t after instantiation, so that its
    kernels can be read (keep_graph, torch 2.7 and newer; before it, the debug mode)."""
    import torch

    try:
        return torch.cuda.CUDAGraph(keep_graph=True)
    except TypeError:
        graph = torch.cuda.CUDAGraph()
        graph.enable_debug_mode()
        return graph


def of_graph(graph: Any) -> JsonObject:
    """A captured (kept) graph's kernels as a fingerprint; a dump that fails is said in
    the record, never a reason to lose the measurement."""
    with tempfile.TemporaryDirectory(prefix="ecocompute-graph-") as folder:
        path = os.path.join(folder, "step.dot")
        try:
            graph.debug_dump(path)
            with open(path, encoding="utf-8", errors="replace") as f:
                dot = f.read()
        except (RuntimeError, OSError) as exc:
            return unavailable(f"the graph could not be dumped: {one_line(exc)}")
    return dot_fingerprint(dot)
