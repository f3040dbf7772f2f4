"""What tells this GPU unit apart, and what the new per-window reads cost (issue 27).

Prints, for each NVML GPU: UUID, board part number, VBIOS, power limits, max clocks; one
edge-state read and one clock read through ecocompute's adapter, and the cost of each
NVML call the sampler and the window edges now make (median of 50 reads, microseconds).
With --dot FILE it also captures a small CUDA graph (a matmul, a softmax, an argmax) in
PyTorch's debug mode, writes its DOT dump to FILE and prints the fingerprint that
ecocompute.llm.kernel_fingerprint reads from it.

    python benchmarks/unit_probe.py [--dot step.dot] [--json unit.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from typing import Any


def _cost_us(fn: Any, *args: Any, n: int = 50) -> float | None:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        try:
            fn(*args)
        except Exception:  # a probe: an unsupported call is reported as None
            return None
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times) * 1e6, 1)


def nvml_part() -> list[dict[str, Any]]:
    from ecocompute.telemetry.nvml import open_nvml

    telemetry = open_nvml()
    out = []
    try:
        for dev in telemetry.devices():
            i = dev.index
            out.append(
                {
                    "nvml_index": i,
                    "name": dev.name,
                    "uuid": dev.uuid,
                    "pci_bus_id": dev.pci_bus_id,
                    "driver": telemetry.driver_version(),
                    "power_limit_mw": telemetry.power_limit_mw(i),
                    "board": dataclasses.asdict(telemetry.board(i)),
                    "edge_state": dataclasses.asdict(telemetry.edge_state(i)),
                    "clock_sample": dataclasses.asdict(telemetry.clock_sample(i))
                    if telemetry.clock_sample(i)
                    else None,
                    "cost_us": {
                        "power_mw": _cost_us(telemetry.power_mw, i),
                        "energy_mj": _cost_us(telemetry.energy_mj, i, n=10),
                        "edge_state": _cost_us(telemetry.edge_state, i, n=10),
                        "clock_sample": _cost_us(telemetry.clock_sample, i),
                    },
                }
            )
    finally:
        telemetry.close()
    return out


def graph_part(dot_path: str) -> dict[str, Any]:
    import torch

    from ecocompute.llm.kernel_fingerprint import dot_fingerprint, kernel_nodes

    a = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    out = torch.empty(256, dtype=torch.long, device="cuda")

    def step() -> None:
        out.copy_(torch.softmax(a @ a, dim=-1).argmax(dim=-1))

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(graph, stream=side):
        step()
    graph.instantiate()
    torch.cuda.synchronize()
    graph.debug_dump(dot_path)
    walked = _walk(graph)
    with open(dot_path, encoding="utf-8", errors="replace") as f:
        dot = f.read()
    nodes = kernel_nodes(dot)
    return {
        "walked_with_cuda_bindings": walked,
        "dot_bytes": len(dot),
        "kernel_nodes": [dataclasses.asdict(n) for n in nodes],
        "fingerprint": dot_fingerprint(dot),
    }


def _walk(graph: Any) -> Any:
    """The kept graph's kernel nodes through cuda.bindings (name, grid, block, shared
    memory), to compare with what the DOT dump says."""
    try:
        from cuda.bindings import driver, runtime
    except ImportError as exc:
        return f"cuda.bindings not importable: {exc}"
    raw = graph.raw_cuda_graph()
    _, nodes, count = runtime.cudaGraphGetNodes(raw, numNodes=0)
    _, nodes, count = runtime.cudaGraphGetNodes(raw, numNodes=count)
    out = []
    for node in nodes[:count]:
        _, kind = runtime.cudaGraphNodeGetType(node)
        if kind != runtime.cudaGraphNodeType.cudaGraphNodeTypeKernel:
            out.append({"type": str(kind)})
            continue
        err, params = driver.cuGraphKernelNodeGetParams(driver.CUgraphNode(init_value=int(node)))
        name = None
        if err == driver.CUresult.CUDA_SUCCESS and int(params.func):
            _, name = driver.cuFuncGetName(driver.CUfunction(init_value=int(params.func)))
        out.append(
            {
                "type": "kernel",
                "name": name.decode() if isinstance(name, bytes) else name,
                "grid": [params.gridDimX, params.gridDimY, params.gridDimZ],
                "block": [params.blockDimX, params.blockDimY, params.blockDimZ],
                "shared": params.sharedMemBytes,
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dot", help="capture a small graph and write its DOT dump here")
    ap.add_argument("--json", help="also write the findings as JSON here")
    args = ap.parse_args()
    found: dict[str, Any] = {"gpus": nvml_part()}
    if args.dot:
        try:
            found["graph"] = graph_part(args.dot)
        except Exception as exc:  # a probe: say what failed and keep the rest
            found["graph"] = f"failed: {type(exc).__name__}: {exc}"
    text = json.dumps(found, indent=1, default=str)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
