"""Issue 13, class 8: a sweep never overwrites its own reports.

Each run's report goes to <output_dir>/<model slug>-<format>/. Model names that map to
one folder (the slug keeps letters, digits, '.', '_' and '-', and folders compare
case-insensitively, as on macOS and Windows), and a format listed twice in any case,
are refused before anything runs: exit 2, one line naming the field, no folder made.
"""

from __future__ import annotations

import pytest

from ecocompute.cli import main
from ecocompute.sweeps.plan import slug


@pytest.mark.parametrize(
    "models",
    [
        "llama 7b,llama-7b",
        "llama-7b,llama/7b",
        "llama 7b,llama-7b,llama/7b",
        "Llama-7B,llama-7b",
        "???,///",  # nothing left of either name: both "model"
        "org/m-1b,org m-1b",
    ],
)
def test_models_that_share_a_folder_are_refused_before_anything_runs(tmp_path, capsys, models):
    out = tmp_path / "sw"
    status = main(["sweep", "--dry_run", "--models", models, "--output_dir", str(out), "-q"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith("ecocompute: error: invalid models ")
    assert "would write into the same folder as" in err[0]
    assert not out.exists()


@pytest.mark.parametrize("precisions", ["NF4,nf4", "NF4,NF4", "int8,INT8,NF4"])
def test_a_format_listed_twice_is_refused(tmp_path, capsys, precisions):
    out = tmp_path / "sw"
    status = main(
        [
            "sweep",
            "--dry_run",
            "--models",
            "synthetic:m-1b",
            "--precisions",
            precisions,
            "--output_dir",
            str(out),
            "-q",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        status == 2 and len(err) == 1 and err[0].startswith("ecocompute: error: invalid precisions")
    )
    assert "twice" in err[0]
    assert not out.exists()


def test_distinct_names_get_distinct_folders(tmp_path, capsys):
    out = tmp_path / "sw"
    models = "synthetic:tinyllama-1.1b,synthetic:qwen2.5-0.5b"
    assert main(["sweep", "--dry_run", "--models", models, "--output_dir", str(out), "-q"]) == 0
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(
        [slug("synthetic:tinyllama-1.1b", "NF4"), slug("synthetic:qwen2.5-0.5b", "NF4")]
    )
