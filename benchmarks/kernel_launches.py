"""Each format's captured decode step, launch by launch, from measured reports that list
their launches (measurement.decode...kernel_fingerprint.launches; reports from before
the launches were listed show the hash alone), beside the format's speed and energy.

It is how two compiles of one step are compared: their hashes differ whenever an
autotuner chose another kernel or launch shape; the launches say which, and where.
Matmul-bearing kernels (inductor's fused mm reductions and templates, cuBLAS's nvjet
and gemm kernels, bitsandbytes' gemm_4bit) are printed; --all prints every launch.

    python benchmarks/kernel_launches.py REPORT.json [REPORT.json ...] [--all]
    # docs/validation/h200-compiled-units/79fabb5ba6c0/launches.txt came from its report
    python benchmarks/kernel_launches.py --diff A.json B.json   # each format, A against B
    python benchmarks/kernel_launches.py --diff A.json          # A's compile 1 against 2

--diff prints, per format, the launches one step makes and the other does not, and those
both make a different number of times (every launch, matmul or not).
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
            where = "" if compile_index is None else f"compile {compile_index + 1}, "
            figures = "no trials"
            if mine:
                speed, energy, power = (
                    statistics.fmean(t[key] for t in mine)
                    for key in ("throughput_tokens_per_s", "energy_per_token_mj", "avg_power_watts")
                )
                figures = f"{speed:.1f} tok/s, {energy:,.0f} mJ/token, {power:.0f} W"
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


Launch = tuple[str, str, str, str]  # function, grid, block, shared memory


def _steps(path: Path) -> list[tuple[int | None, str, dict[Launch, int] | None]]:
    """Each (compile, format) step of a report with its launches and their counts."""
    report = json.loads(path.read_text())
    out = []
    for compile_index, per_format in _blocks(report):
        for fmt, record in per_format.items():
            launches = (record.get("kernel_fingerprint") or {}).get("launches")
            counts = None
            if launches is not None:
                counts = {
                    (
                        x["function"],
                        str(x["grid"]),
                        str(x["block"]),
                        str(x["shared_mem_bytes"]),
                    ): x["count"]
                    for x in launches
                }
            out.append((compile_index, fmt, counts))
    return out


def diff(paths: list[Path]) -> list[str]:
    """Two reports' steps format by format (each report's first compile), or one report's
    first two compiles."""
    if len(paths) == 2:
        first, second = _steps(paths[0]), _steps(paths[1])
        names = (str(paths[0]), str(paths[1]))
        pairs = [
            (fmt, a, next((b for _, f, b in second if f == fmt), None))
            for k, fmt, a in first
            if k in (None, 0)
        ]
    elif len(paths) == 1:
        steps = _steps(paths[0])
        names = ("compile 1", "compile 2")
        pairs = [
            (fmt, a, next((b for k2, f, b in steps if f == fmt and k2 == 1), None))
            for k, fmt, a in steps
            if k == 0
        ]
        if not pairs:
            raise SystemExit(f"{paths[0]}: one compile only; --diff needs two reports then")
    else:
        raise SystemExit("--diff takes one report of two compiles, or two reports")
    lines = [f"A = {names[0]}", f"B = {names[1]}"]
    for fmt, a, b in pairs:
        if a is None or b is None:
            lines.append(f"  {fmt}: launches not listed on both sides")
            continue
        changed = [key for key in a.keys() | b.keys() if a.get(key) != b.get(key)]
        lines.append(f"  {fmt}: {len(changed)} launches differ")
        for key in sorted(changed, key=lambda k: (k[0], k[1])):
            function, grid, block, shared = key
            lines.append(
                f"    A {a.get(key, 0):3d}  B {b.get(key, 0):3d}  {grid:15s} {block:14s} "
                f"{shared:>7s}  {function[:90]}"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--all", action="store_true", help="every launch, not only matmuls")
    parser.add_argument("--diff", action="store_true", help="what differs between two steps")
    args = parser.parse_args()
    if args.diff:
        print("\n".join(diff(args.reports)))
        return
    for path in args.reports:
        print("\n".join(describe(path, args.all)))


if __name__ == "__main__":
    main()
