"""Measured reports for the result tools' tests: copies of a committed H200 report
(docs/validation) with the fields a test cares about rewritten. Every one stays valid
against the schema; the numbers are made up, the structure is real."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

from ecocompute.published.figures import delta_pct

from .conftest import REPO

MEASURED = REPO / "docs" / "validation" / "h200-issue3" / "tinyllama-nf4" / "energy.json"


@functools.lru_cache(maxsize=1)
def _base() -> dict[str, Any]:
    return json.loads(MEASURED.read_text())


def measured(
    *,
    params_b: float = 1.1,
    delta: float = 20.0,
    half_ci: float | None = 5.0,
    n_pairs: int = 10,
    fp16_mj: float = 2400.0,
    model: str | None = None,
    precision: str = "NF4",
    gpu: str = "NVIDIA H200",
    arch: str = "hopper",
    torch: str = "2.11.0",
    tokens: int = 256,
    gpus: int = 1,
) -> dict[str, Any]:
    doc = copy.deepcopy(_base())
    sut, work, res = doc["system_under_test"], doc["workload"], doc["results"]
    sut["gpu"], sut["gpu_arch"], sut["accelerator_count"] = gpu, arch, gpus
    for g in sut["gpus"]:
        g["name"] = gpu
    work["model_name"] = model or f"synthetic:made-{params_b:g}b"
    work["params_b"], work["precision"], work["max_new_tokens"] = params_b, precision, tokens
    doc["software"]["packages"]["torch"] = torch
    res["fp16_energy_per_token_mj"] = fp16_mj
    res["energy_per_token_mj"] = round(fp16_mj * (1 + delta / 100.0), 3)
    res["vs_fp16_energy_pct"] = round(delta, 1)  # one decimal, as 1.1
    res["vs_fp16_energy_pct_3dp"] = delta  # what the tools read (not rounded here)
    res["n_pairs"] = n_pairs
    res["vs_fp16_ci95_pct"] = None if half_ci is None else [delta - half_ci, delta + half_ci]
    if precision == "FP16":
        res["per_format"] = {"FP16": res["per_format"]["FP16"]}
        res["vs_fp16_energy_pct"], res["vs_fp16_ci95_pct"], res["verdict"] = 0.0, None, None
        res["vs_fp16_energy_pct_3dp"] = 0.0
        res["n_pairs"] = None
        res["energy_per_token_mj"] = fp16_mj
    elif precision != "NF4":
        res["per_format"][precision] = res["per_format"].pop("NF4")
    return doc


def on_curve(n: float, a: float, s: float, nstar: float, **kw: Any) -> dict[str, Any]:
    return measured(params_b=n, delta=round(delta_pct(n, a, s, nstar), 4), **kw)


def write(doc: dict[str, Any], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "energy.json"
    path.write_text(json.dumps(doc))
    return path
