"""Draw the plots under docs/plots/ from committed reports, through the command line as a
user would run it (nothing measured; needs the [plot] extra):

- map-h200-llama-2-7b.png: the batch axis of synthetic llama-2-7b on an H200 (graphs
  decode, batch 1-64), each crossover with its 95% interval (docs/validation/h200-map/map-7b);
- size-h200-nf4.png: NF4 against model size on an H200, eager, batch 1, four sizes
  (docs/validation/h200-sweep/reports);
- size-h200-four-formats.png: NF4, INT8, INT4 and FP8 against size at batch 1, graphs,
  tinyllama-1.1b and llama-2-7b (docs/validation/h200-map, the b1 sessions).

    python benchmarks/docs_plots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from ecocompute.cli import main

REPO = Path(__file__).resolve().parents[1]
PLOTS = REPO / "docs" / "plots"
MAP = REPO / "docs/validation/h200-map"


def draw() -> int:
    PLOTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["sweep", "--fit_only", "--reports", str(MAP / "map-7b"), "--output_dir", tmp]
        if main([*argv, "-q"]) != 0:
            return 1
        (PLOTS / "map-h200-llama-2-7b.png").write_bytes((Path(tmp) / "sweep.png").read_bytes())
    sizes = [str(REPO / "docs/validation/h200-sweep/reports")]
    if main(["plot", *sizes, "-o", str(PLOTS / "size-h200-nf4.png")]) != 0:
        return 1
    b1 = [
        str(MAP / "map-7b/synthetic-llama-2-7b-b1"),
        str(MAP / "map-tinyllama/synthetic-tinyllama-1.1b-b1"),
    ]
    return main(["plot", *b1, "-o", str(PLOTS / "size-h200-four-formats.png")])


if __name__ == "__main__":
    sys.exit(draw())
