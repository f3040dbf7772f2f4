"""The CLI end to end on the reference path, through a subprocess as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ..conftest import PARAMS_FILE, REPO, derived_source, read_report

DERIVED = "ecocompute-dataset (no local GPU): "  # a figure derived, not measured


def test_shipped_parameters_write_a_valid_reference_report(run_cli, tmp_path):
    out = tmp_path / "outputs"
    done = run_cli(
        "energy_estimate", "--parameters_file", str(PARAMS_FILE), "--output_dir", str(out)
    )
    assert done.returncode == 0, done.stderr
    report = read_report(out)
    assert report["results"]["basis"] in ("interpolated", "extrapolated")
    assert derived_source(report).startswith(DERIVED + "no GPU found")
    assert report["results"]["fallback_reason"] == "no_gpu"
    assert "pass --gpu_arch to choose another" in report["results"]["note"]
    assert "pass --gpu_arch to choose another" in done.stdout
    assert "RTX 4090/4090D" in done.stdout
    check = run_cli("validate", str(out / "energy.json"))
    assert check.returncode == 0, check.stdout


def test_acceptance_dry_run_tinyllama_nf4_ada(run_cli, tmp_path):
    done = run_cli(
        "energy_estimate",
        "--dry_run",
        "--model",
        "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
        "--params_b",
        "1.1",
        "--precision",
        "NF4",
        "--gpu_arch",
        "ada",
        "--output_dir",
        str(tmp_path / "x"),
    )
    assert done.returncode == 0, done.stderr
    res = read_report(tmp_path / "x")["results"]
    assert res["fp16_energy_per_token_mj"] == pytest.approx(1585.71, abs=0.005)
    assert round(res["vs_fp16_energy_pct"], 1) == 24.8  # the site's Ada anchors at 1.1B
    assert res["basis"] == "interpolated"
    assert derived_source(read_report(tmp_path / "x")) == DERIVED + "--dry_run"
    assert "+24.8%" in done.stdout


def test_turing_int8_is_unavailable_with_no_invented_delta(run_cli, tmp_path):
    done = run_cli(
        "energy_estimate",
        "--dry_run",
        "--gpu_arch",
        "turing",
        "--precision",
        "INT8",
        "--output-dir",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    res = read_report(tmp_path)["results"]
    assert res["basis"] == "unavailable"
    assert res["vs_fp16_energy_pct"] is None and res["energy_per_token_mj"] is None
    assert "no figure" in done.stdout


def test_mlcube_style_key_value_flags_and_aliases(run_cli, tmp_path):
    done = run_cli(
        "energy_estimate",
        f"--parameters_file={PARAMS_FILE}",
        f"--output_dir={tmp_path}",
        "--model_name=Qwen/Qwen2.5-3B",
        "--gpu-arch=RTX 5090",
    )
    assert done.returncode == 0, done.stderr
    report = read_report(tmp_path)
    assert report["workload"]["params_b"] == 1.1  # the file's params_b, not the name's
    assert report["system_under_test"]["gpu_arch"] == "blackwell"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--precision", "FP4"], "precision"),
        (["--gpu_arch", "pascal"], "gpu_arch"),
        (["--tokens", "0"], "tokens"),
        (["--iterations", "-1"], "iterations"),
        (["--batch_size", "0"], "batch_size"),
        (["--params_b", "-3"], "params_b"),
        (["--warmup", "-1"], "warmup"),
        (["--sample_rate_hz", "500"], "sample_rate_hz"),
        (["--parameters_file", "/nonexistent.yaml"], "parameters_file"),
        (["--model", "my-org/custom", "--params_b", "x"], "params_b"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(run_cli, tmp_path, args, field):
    out = tmp_path / "o"
    done = run_cli("energy_estimate", "--dry_run", "--output_dir", str(out), *args)
    assert done.returncode == 2
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, done.stderr
    assert field in lines[0]
    assert not out.exists()


def test_model_without_size_asks_for_params_b(run_cli, tmp_path):
    done = run_cli("energy_estimate", "--dry_run", "--model", "gpt2", "--output_dir", str(tmp_path))
    assert done.returncode == 2
    assert "--params_b" in done.stderr
    assert not (tmp_path / "energy.json").exists()


def test_output_dir_that_is_a_file(run_cli, tmp_path):
    target = tmp_path / "file"
    target.write_text("keep me")
    done = run_cli("energy_estimate", "--dry_run", "--output_dir", str(target))
    assert done.returncode == 2
    assert "output_dir" in done.stderr
    assert target.read_text() == "keep me"


def test_validate_exit_codes_and_paths(run_cli, tmp_path):
    run_cli("energy_estimate", "--dry_run", "--output_dir", str(tmp_path))
    good = tmp_path / "energy.json"
    bad = tmp_path / "bad.json"
    doc = json.loads(good.read_text())
    doc["results"]["basis"] = "guessed"
    del doc["workload"]["precision"]
    bad.write_text(json.dumps(doc))
    assert run_cli("validate", str(good)).returncode == 0
    done = run_cli("validate", str(good), str(bad))
    assert done.returncode == 1
    assert "$.results.basis" in done.stdout
    assert "$.workload.precision: Field required" in done.stdout


def test_reference_path_does_not_import_torch():
    code = (
        "import sys; from ecocompute.cli import main; "
        "rc = main(['energy_estimate', '--dry_run', '--quiet', '--output_dir', sys.argv[1]]); "
        "heavy = sorted(m for m in ('torch', 'transformers', 'bitsandbytes', 'matplotlib') "
        "if m in sys.modules); print(rc, heavy)"
    )
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [sys.executable, "-c", code, out], capture_output=True, text=True, cwd=REPO, timeout=120
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "0 []"


def test_an_unknown_synthetic_preset_is_named_without_a_gpu(tmp_path, capsys):
    from ecocompute.cli import main

    status = main(
        [
            "energy_estimate",
            "--dry_run",
            "--model",
            "synthetic:nope",
            "--output_dir",
            str(tmp_path / "o"),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert status == 2 and "\n" not in err
    assert err.startswith(
        "ecocompute: error: invalid model_name 'synthetic:nope': unknown synthetic preset"
    )
    assert "synthetic:tinyllama-1.1b" in err and "params_b" not in err
    assert not (tmp_path / "o").exists()


def test_help_states_each_default_once(capsys):
    import pytest

    from ecocompute.cli import main

    with pytest.raises(SystemExit):
        main(["energy_estimate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: None)" not in text
    for flag_help in text.split(" --")[1:]:  # each flag's help names its default at most once
        assert flag_help.count("default:") <= 1, flag_help
