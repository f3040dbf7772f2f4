"""Each format's captured decode step, launch by launch, from measured reports that list
their launches (measurement.decode...kernel_fingerprint.launches; reports from before
the launches were listed show the hash alone), beside the format's speed and energy.

It is how two compiles of one step are compared: their hashes differ whenever an
autotuner chose another kernel or launch shape; the launches say which, and where.
Matmul-bearing kernels (inductor's fused mm reductions and templates, cuBLAS's nvjet
and gemm kernels, bitsandbytes' gemm_4bit) are printed; --all prints every launch.

    python benchmarks/kernel_launches.py REPORT.json [REPORT.json ...] [--all]
    # docs/validation/h200-compiled-units/79fabb5ba6c0/launches.txt came from its report
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

_MATMUL = ("mm", "gemm", "nvjet", "_tem_")


def _blocks(report: dict[str, Any]) -> list[tuple[int | None, dict[str, Any]]]:
    decode = report["measurement"].get("decode") or {}
    compiles = decode.get("compiles")
    if compiles:
        return [(block["compile"], block["per_format"]) for block in compiles]
    return [(None, decode.get("per_format") or {})]


def describe(path: Path, every: bool) -> list[str]:
    report = json.loads(path.read_text())
    trials = report["results"]["trials"]
    lines = [str(path)]
    for compile_index, per_format in _blocks(report):
        for fmt, record in per_format.items():
            mine = [t for t in trials if t["format"] == fmt and t.get("compile") == compile_index]
            fingerprint = record.get("kernel_fingerprint") or {}
            speed = statistics.fmean(t["throughput_tokens_per_s"] for t in mine) if mine else None
            energy = statistics.fmean(t["energy_per_token_mj"] for t in mine) if mine else None
            power = statistics.fmean(t["avg_power_watts"] for t in mine) if mine else None
            where = "" if compile_index is None else f"compile {compile_index + 1}, "
            figures = (
                f"{speed:.1f} tok/s, {energy:,.0f} mJ/token, {power:.0f} W"
                if speed is not None and energy is not None and power is not None
                else "no trials"
            )
            lines.append(
                f"  {where}{fmt}: {figures}; {fingerprint.get('kernels')} kernels, "
                f"sha256 {str(fingerprint.get('sha256'))[:12]}"
            )
            launches = fingerprint.get("launches")
            if launches is None:
                lines.append("    (this report does not list its launches)")
                continue
            lines.append("    count  grid            block          smem B  function")
            for launch in launches:
                if not every and not any(m in launch["function"] for m in _MATMUL):
                    continue
                lines.append(
                    f"    {launch['count']:5d}  {launch['grid']!s:15s} "
                    f"{launch['block']!s:14s} {launch['shared_mem_bytes']!s:>7s}  "
                    f"{launch['function'][:100]}"
                )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--all", action="store_true", help="every launch, not only matmuls")
    args = parser.parse_args()
    for path in args.reports:
        print("\n".join(describe(path, args.all)))


if __name__ == "__main__":
    main()
