"""A measured report's machine, time and protocol agree with themselves (part of
report/consistency.py's checks).

- It names the GPU(s) it measured: its gpu, accelerator_count and gpus agree, each GPU
  is listed once (no UUID or NVML index twice), and its arch class is the one its GPUs'
  product names say (NVML's name decides a measured report's arch: an "NVIDIA H200"
  report that says `ada` would be graded against Ada's figures).
- Its timestamp is a real UTC time, not more than a day ahead of this machine's clock.
- Its protocol is one protocol: the new tokens per run of the workload, the
  measurement and the decode agree, and so do their batch sizes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from ecocompute.published.archs import UNKNOWN, arch_from_product_name

FUTURE_SLACK = dt.timedelta(days=1)  # clocks differ; a report a day ahead is impossible


def system_problems(doc: Mapping[str, Any]) -> list[str]:
    """The measured report's GPUs, time and protocol, checked against each other."""
    sut = doc.get("system_under_test") or {}
    return gpu_problems(sut) + timestamp_problems(doc) + protocol_problems(doc)


def gpu_problems(sut: Mapping[str, Any]) -> list[str]:
    """A measured report names the GPU(s) it measured, and they agree with each other."""
    problems = []
    gpu = sut.get("gpu")
    count = sut.get("accelerator_count")
    gpus = [g for g in sut.get("gpus") or [] if isinstance(g, Mapping)]
    if not isinstance(gpu, str) or not gpu.strip():
        problems.append(f"$.system_under_test.gpu: {gpu!r}, but a measured report names its GPU")
    if not isinstance(count, int) or count < 1:
        problems.append(
            f"$.system_under_test.accelerator_count: {count!r}, but a measured report was "
            "measured on at least one GPU"
        )
    if "gpus" in sut and len(gpus) != count:
        problems.append(
            f"$.system_under_test.gpus: lists {len(gpus)} GPU(s), accelerator_count says {count!r}"
        )
    names = " + ".join(sorted({str(g.get("name")) for g in gpus}))
    if gpus and isinstance(gpu, str) and gpu != names:
        problems.append(f"$.system_under_test.gpu: {gpu!r}, but the GPUs it lists are {names!r}")
    for key in ("uuid", "nvml_index"):
        values = [g.get(key) for g in gpus if g.get(key) is not None]
        repeated = sorted({str(v) for v in values if values.count(v) > 1})
        if repeated:
            problems.append(
                f"$.system_under_test.gpus: {key} {', '.join(repeated)} listed twice, but "
                "each GPU is one device"
            )
    return problems + _arch_problems(sut, gpus)


def _arch_problems(sut: Mapping[str, Any], gpus: list[Mapping[str, Any]]) -> list[str]:
    arch = sut.get("gpu_arch")
    names = [str(g.get("name")) for g in gpus] or [str(sut.get("gpu") or "")]
    said = {arch_from_product_name(n) for n in names} - {UNKNOWN}
    if not isinstance(arch, str) or not said or arch in said:
        return []
    return [
        f"$.system_under_test.gpu_arch: {arch!r}, but a measured report's arch is its GPU's, "
        f"and {' + '.join(sorted(set(names)))} is {' or '.join(sorted(said))}"
    ]


def timestamp_problems(doc: Mapping[str, Any], now: dt.datetime | None = None) -> list[str]:
    """timestamp_utc: a real date and time (the schema checks only its shape), and no
    later than a day from now."""
    stamp = doc.get("timestamp_utc")
    if not isinstance(stamp, str):
        return []
    try:
        when = dt.datetime.strptime(stamp.split(".")[0].rstrip("Z"), "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return [f"$.timestamp_utc: {stamp!r} is no real date and time"]
    when = when.replace(tzinfo=dt.UTC)
    if when > (now or dt.datetime.now(dt.UTC)) + FUTURE_SLACK:
        return [f"$.timestamp_utc: {stamp!r} is in the future: no run has taken place then"]
    return []


def protocol_problems(doc: Mapping[str, Any]) -> list[str]:
    """One protocol: tokens per run and batch size, as the workload, the measurement and
    its decode record them."""
    work = doc.get("workload") or {}
    meas = doc.get("measurement") or {}
    decode: Mapping[str, Any] = meas["decode"] if isinstance(meas.get("decode"), Mapping) else {}
    tokens = work.get("max_new_tokens")
    problems = []
    for where, value in (
        ("measurement.tokens_per_run", meas.get("tokens_per_run")),
        ("measurement.decode.max_new_tokens", decode.get("max_new_tokens")),
        ("measurement.decode.min_new_tokens", decode.get("min_new_tokens")),
        ("measurement.decode.tokens_per_row", decode.get("tokens_per_row")),
    ):
        if value is not None and tokens is not None and value != tokens:
            problems.append(
                f"$.{where}: {value!r}, but the workload generates {tokens!r} new tokens per run"
            )
    batch = decode.get("batch_size")
    if batch is not None and work.get("batch_size") is not None and batch != work["batch_size"]:
        problems.append(
            f"$.measurement.decode.batch_size: {batch!r}, but the workload's batch is "
            f"{work['batch_size']!r}"
        )
    return problems
