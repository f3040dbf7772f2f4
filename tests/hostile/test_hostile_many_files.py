"""Issue 13, class 4: one bad file never hides the others.

validate, aggregate, check and plot over a folder of pathological files next to good
reports: each bad file is one INVALID line (validate) or one skipped line (aggregate,
plot), the good ones are processed, and nothing ends in "internal error" or a
traceback. Names that are not UTF-8 or hold a newline, and text stdout cannot encode,
are printed as escapes, still one line each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ecocompute.cli import main

from ..conftest import REPO
from ..made_reports import measured, write

HELD_14 = "synthetic-llama-2-7b-b1/FP8/energy.json"


def _idle_gpu_named_by_a_word() -> bytes:
    """A 1.4 report whose held GPUs' idle powers name a GPU "zero": its schema takes any
    key, and the upgrade's int() of it was an internal error of every reader."""
    doc = json.loads((REPO / "docs/validation/h200-map/map-7b" / HELD_14).read_text())
    doc["results"]["held_gpus"] = {
        "nvml_indices": [0, 1], "definition": "x", "summary_leads_with": "used_gpus",
        "summary_lead_reason": "x", "idle_window_watts_by_gpu": {"zero": 100.0},
        "per_format": {}, "energy_per_token_mj": 1.0, "fp16_energy_per_token_mj": 1.0,
        "vs_fp16_energy_pct": None, "vs_fp16_ci95_pct": None, "ci_method": None,
        "n_pairs": None, "verdict": None, "pairs": [],
    }  # fmt: skip
    return json.dumps(doc).encode()


def _bad_files(root: Path) -> dict[str, Path]:
    """name -> a file (named energy.json, in a folder of its own) a reader must refuse."""
    good_text = json.dumps(measured())
    contents: dict[str, bytes] = {
        "huge-number": good_text.replace(
            '"avg_power_watts": ', '"avg_power_watts": 1e308, "x": ', 1
        ).encode(),
        "float-overflow": good_text.replace("2400.0", "1e999", 1).encode(),
        "nan": good_text.replace("2400.0", "NaN", 1).encode(),
        "long-int": good_text.replace('"n_pairs": 10', '"n_pairs": ' + "9" * 5000).encode(),
        "deep-nesting": b"[" * 200_000 + b"]" * 200_000,
        "nested-object": ('{"a": ' * 900 + "1" + "}" * 900).encode(),
        "not-utf8": b'{"schema_version": "\xff\xfe"}',
        "lone-surrogate": good_text.replace('"synthetic:made-1.1b"', '"\\ud800"').encode(),
        "not-an-object": b"[1, 2, 3]",
        "empty": b"",
        "idle-gpu-a-word": _idle_gpu_named_by_a_word(),
    }
    files = {}
    for name, data in contents.items():
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "energy.json").write_bytes(data)
        files[name] = folder / "energy.json"
    loop = root / "link-loop"
    loop.mkdir()
    os.symlink("energy.json", loop / "energy.json")
    files["link-loop"] = loop / "energy.json"
    return files


@pytest.fixture
def tree(tmp_path):
    goods = [write(measured(delta=d), tmp_path / f"good{d}") for d in (10.0, 12.0)]
    return tmp_path, goods, _bad_files(tmp_path / "bad")


def test_validate_reports_every_file_once(tree, capsys):
    root, goods, bads = tree
    assert main(["validate", str(root)]) == 1
    captured = capsys.readouterr()
    assert captured.err == ""
    lines = captured.out.splitlines()
    for good in goods:
        assert lines.count(f"{good}: valid") == 1
    for name, bad in bads.items():  # a link loop too: found, and it cannot be read
        mine = [ln for ln in lines if ln.startswith(f"{bad}: ")]
        assert len(mine) == 1 and mine[0].startswith(f"{bad}: INVALID "), (name, mine)
    word = f"{bads['idle-gpu-a-word']}: INVALID $.results.held_gpus.idle_window_watts_by_gpu: "
    assert f"{word}key 'zero' is no GPU's NVML index (0, 1, ...)" in lines
    assert main(["validate", str(bads["link-loop"])]) == 1
    assert "INVALID cannot read" in capsys.readouterr().out


def test_aggregate_and_plot_skip_each_bad_file_and_use_the_rest(tree, capsys):
    root, _, bads = tree
    assert main(["aggregate", str(root)]) == 0
    captured = capsys.readouterr()
    assert "internal error" not in captured.err and "Traceback" not in captured.err
    skipped = [ln for ln in captured.err.splitlines() if ln.startswith("  ")]
    assert len(skipped) == len(bads)  # the link loop too: never skipped in silence
    assert f"skipped {len(bads)} invalid file(s):" in captured.err
    row = [ln for ln in captured.out.splitlines() if ln.startswith("synthetic:made-1.1b")]
    assert len(row) == 1 and " 2 " in row[0]  # the two good reports, pooled
    picture = root / "p.png"
    assert main(["plot", str(root), "-o", str(picture)]) == 0
    assert picture.stat().st_size > 0
    assert f"skipped {len(bads)} invalid file(s):" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name", ["huge-number", "float-overflow", "nan", "long-int", "deep-nesting", "lone-surrogate"]
)
def test_check_refuses_each_bad_file_in_lines_of_its_own(tree, capsys, name):
    _, _, bads = tree
    assert main(["check", str(bads[name])]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{bads[name]}: INVALID ")
    assert err[-1] == "ecocompute check: not gradeable: not a valid report (exit 2)"
    assert not any("internal error" in ln or "Traceback" in ln for ln in err)


def _run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "ecocompute", *args],
        capture_output=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        timeout=120,
    )


def test_names_and_text_stdout_cannot_show_are_escaped_in_one_line(tmp_path):
    """An ASCII stdout, a file name that is not UTF-8, one with a newline, and a model
    name outside ASCII: still one line per file, exit as usual, no traceback."""
    doc = measured(model="modèle-ünïcode-1.1b")
    write(doc, tmp_path / "unicode")
    undecodable = os.fsencode(str(tmp_path)) + b"/caf\xe9"
    os.mkdir(undecodable)
    write(measured(), Path(os.fsdecode(undecodable)))
    write(measured(delta=21.0), tmp_path / "new\nline")  # two reports, not one twice
    ascii_out = {"PYTHONIOENCODING": "ascii"}
    done = _run("validate", str(tmp_path), env=ascii_out)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode("ascii").splitlines()
    assert len(lines) == 3 and all(ln.endswith(": valid") for ln in lines)
    assert any("caf\\xe9" in ln for ln in lines) and any("new\\nline" in ln for ln in lines)
    done = _run("aggregate", str(tmp_path), env=ascii_out)
    assert done.returncode == 0 and done.stderr == b""
    assert "mod\\xe8le-\\xfcn\\xefcode" in done.stdout.decode("ascii")
