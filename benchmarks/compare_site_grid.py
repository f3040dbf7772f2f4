"""This tool's published-path figure against the site's own estimator, point by point.

    python benchmarks/compare_site_grid.py [tests/data/site/estimate-grid.json]

The grid holds the answers of the site's estimate.js (hongping-zh/quant-energy, run under
node; its "source" says which commit). Each point is one dry run here; a point agrees
when our one-decimal delta equals the site's. Prints one line per point and the count.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[1] / "tests" / "data" / "site" / "estimate-grid.json"


def main() -> int:
    from ecocompute.cli import main as cli_main

    grid = json.loads(Path(sys.argv[1] if len(sys.argv) > 1 else DEFAULT).read_text())
    agree = 0
    points = grid["points"]
    with tempfile.TemporaryDirectory() as tmp:
        for i, pt in enumerate(points):
            out = Path(tmp) / str(i)
            size = f"{pt['N']:g}"
            argv = ["run", "--dry_run", "-q", "--gpu_arch", pt["arch"], "--model", f"m-{size}b",
                    "--params_b", size, "--precision", pt["precision"],
                    "--output_dir", str(out)]  # fmt: skip
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                status = cli_main(argv)
            res = json.loads((out / "energy.json").read_text())["results"] if status == 0 else {}
            ours = res.get("vs_fp16_energy_pct")
            ok = ours is not None and abs(ours - pt["delta_pct"]) <= 0.05 + 1e-9
            agree += ok
            kind = "anchors" if res.get("reference_anchors") else "curve"
            shown = "none" if ours is None else f"{ours:+7.1f}"
            print(
                f"{pt['arch']:9} {pt['precision']:4} {pt['N']:>4g}B site {pt['delta_pct']:+7.1f} "
                f"[{pt['ci'][0]:+.1f}, {pt['ci'][1]:+.1f}] {pt['basis']:12} ours {shown} "
                f"{res.get('basis')} ({kind}) {'agree' if ok else 'DIFFER'}"
            )
    print(f"{agree} of {len(points)} points agree (to the site's one decimal)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
