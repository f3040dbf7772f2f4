"""Compare two dry-run grids (benchmarks/dry_run_grid.py) figure by figure, whatever the
report format each was written in: the energies, the delta, the basis, the reference
card and curve, the size. Figures of format 2.0 are unrounded; one of 1.4 is compared at
the decimals 1.4 wrote (3 for energies and the three-decimal delta, 1 for the delta).

    python benchmarks/compare_grids.py BEFORE AFTER
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def figures(doc: dict) -> dict:
    res, work = doc["results"], doc["workload"]
    exact = res.get("vs_fp16_energy_pct_exact", res.get("vs_fp16_energy_pct_3dp"))
    curve = res.get("reference_curve") or {}
    return {
        "basis": res["basis"],
        "reference_card": res.get("reference_card"),
        "params_b": work.get("params_b"),
        "energy_per_token_mj": _r(res.get("energy_per_token_mj"), 3),
        "fp16_energy_per_token_mj": _r(res.get("fp16_energy_per_token_mj"), 3),
        "vs_fp16_energy_pct": _r(res.get("vs_fp16_energy_pct"), 1),
        "vs_fp16_energy_pct_3dp": _r(exact, 3),
        "curve": {k: curve.get(k) for k in ("arch", "precision", "A", "S", "Nstar", "capped")},
        "fallback_reason": res.get("fallback_reason"),
        "measurement_source": doc.get("measurement_source"),
    }


def _r(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def main() -> int:
    before, after = (Path(a) for a in sys.argv[1:3])
    names = sorted({p.parent.name for p in before.glob("*/energy.json")})
    differ = 0
    for name in names:
        a = figures(json.loads((before / name / "energy.json").read_text()))
        b = figures(json.loads((after / name / "energy.json").read_text()))
        if a != b:
            differ += 1
            print(f"{name}: " + "; ".join(f"{k} {a[k]!r} -> {b[k]!r}" for k in a if a[k] != b[k]))
    print(f"{len(names)} points, {differ} with other figures")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
