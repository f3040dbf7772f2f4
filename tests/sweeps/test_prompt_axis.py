"""sweep --prompt_tokens: the prompt length as an axis beside --batch_sizes (a sweep.json
per length, never pooled), and the map saying which phase decides."""

from __future__ import annotations

import json

import pytest

from ecocompute.boundary.progress import Progress
from ecocompute.errors import InputError
from ecocompute.sweeps.batch_axis import phase_words
from ecocompute.sweeps.document import BatchPoint, PhaseDelta, PointPhases
from ecocompute.sweeps.plan import split_prompt_lengths
from ecocompute.sweeps.sweep import prompt_sweep

from ..fakes import StandInQuantBackend, fake_machine


def test_prompt_lengths_are_whole_and_increasing():
    assert split_prompt_lengths("128,1024,4096") == [128, 1024, 4096]
    assert split_prompt_lengths(None) is None
    for bad in ("1024,128", "0,4", "a,b", "12,12"):
        with pytest.raises(InputError, match=r"^invalid prompt_tokens"):
            split_prompt_lengths(bad)


def _point(batch, workload, verdict, decided):
    phases = PointPhases(
        prompt_tokens=1024,
        new_tokens=256,
        prefill=PhaseDelta(delta_pct=80.0, verdict="costs"),
        decode=PhaseDelta(delta_pct=-10.0, verdict="saves"),
        workload=PhaseDelta(delta_pct=workload, verdict=verdict),
        decided_by=decided,
    )
    return BatchPoint(batch_size=batch, delta_pct=-10.0, verdict="saves", phases=phases)


def test_the_map_says_which_phase_decides_the_workload():
    words = phase_words(
        "NF4",
        [_point(1, -5.0, "saves", "decode"), _point(16, 30.0, "costs", "prefill")],
    )
    assert words.startswith(" (decode); for 1024 in, 256 out: NF4 saves at batch 1, costs")
    assert "the decode decides at batch 1" in words and "the prefill decides at batch 16" in words
    assert phase_words("NF4", [BatchPoint(batch_size=1, delta_pct=1.0)]) == ""


@pytest.mark.slow
def test_a_sweep_over_prompt_lengths_and_batch_sizes_on_the_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))
    backend = StandInQuantBackend()
    options = {"tokens": 4, "iterations": 3, "warmup": 0, "idle_seconds": 0,
               "decode": "graphs", "phases": "apart", "prefill_window_s": 0.01,
               "quality_probe": False, "quiet": True}  # fmt: skip
    done = prompt_sweep(
        ["synthetic:tiny-test"],
        ["NF4"],
        tmp_path / "sw",
        [16, 48],
        options=options,
        progress=Progress(quiet=True),
        machine=fake_machine(backend=lambda: backend),
        batch_sizes=[1, 2],
    )
    assert sorted(done) == [16, 48]
    assert backend.loads == ["FP16", "NF4"]  # loaded once for every length and batch
    for n in (16, 48):
        folder = tmp_path / "sw" / f"p{n}"
        doc = json.loads((folder / "sweep.json").read_text())
        assert doc == done[n].document()
        assert [r["batch_size"] for r in doc["runs"]] == [1, 2]
        for run in doc["runs"]:
            report = json.loads((folder / run["report"]).read_text())
            assert report["workload"]["prompt_tokens"] == n
            assert report["workload"]["prompt_source"] == "prompt_tokens"
        assert f"prompt {n}" in doc["protocol"] and "phases apart" in doc["protocol"]
        (entry,) = doc["batch_axis"]
        assert all(p["phases"]["prompt_tokens"] == n for p in entry["points"])
        assert f"for {n} in, 4 out: NF4" in entry["map"]


def test_the_command_line_takes_a_list_of_prompt_lengths(tmp_path, capsys):
    from ecocompute.cli import main

    args = ["sweep", "--models", "synthetic:tiny-test", "--output_dir", str(tmp_path / "o")]
    assert main([*args, "--prompt_tokens", "1024,128"]) == 2
    assert "invalid prompt_tokens '1024,128'" in capsys.readouterr().err
    fit = ["sweep", "--fit_only", "--output_dir", str(tmp_path / "o")]  # no --models: none run
    assert main([*fit, "--prompt_tokens", "16,32"]) == 2
    assert "not with --fit_only" in capsys.readouterr().err
    assert main([*args, "--prompt_tokens", "16,32", "--fit_only"]) == 2
    assert (
        "invalid models 'synthetic:tiny-test': only without --fit_only" in capsys.readouterr().err
    )
    # a dry run over two lengths: a sweep.json under each length's folder
    args[2] = "synthetic:qwen2.5-0.5b"
    capsys.readouterr()
    assert main([*args, "--prompt_tokens", "16,32", "--dry_run", "--quiet"]) == 0
    out = capsys.readouterr().out
    for n in (16, 32):
        doc = json.loads((tmp_path / "o" / f"p{n}" / "sweep.json").read_text())
        assert len(doc["runs"]) == 1
        # the published figures are of one prompt: the same figure at each length, said so
        not_applied = f"--prompt_tokens {n} was not applied"
        assert not_applied in doc["decode_note"] and not_applied in out


def test_the_python_api_runs_a_prompt_axis(tmp_path, monkeypatch):
    import ecocompute

    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))
    done = ecocompute.prompt_sweep(
        ["synthetic:qwen2.5-0.5b"], [16, 32], output_dir=tmp_path / "o", dry_run=True
    )
    assert sorted(done) == [16, 32]
    assert all((tmp_path / "o" / f"p{n}" / "sweep.json").is_file() for n in (16, 32))
    with pytest.raises(InputError, match="give one list"):
        ecocompute.prompt_sweep(
            ["synthetic:qwen2.5-0.5b"], [16], output_dir=tmp_path / "x", prompt_tokens=16
        )
