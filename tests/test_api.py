"""The Python API: estimate(), sweep(), read_report() give typed results, raise the
command line's errors, install no signal handler, and the README's example runs and
prints what the README says it prints."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
from pathlib import Path

import pytest

import ecocompute
from ecocompute.cli import main
from ecocompute.core.precision import Precision
from ecocompute.errors import InputError, ReportInvalid
from ecocompute.params import RunParams

from .fakes import StandInQuantBackend, fake_machine

REPO = Path(__file__).resolve().parent.parent


def test_estimate_without_a_gpu_is_the_labelled_published_figure(tmp_path):
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    result = ecocompute.estimate("TinyLlama/TinyLlama-1.1B-Chat-v1.0", precision="NF4")
    assert {s: signal.getsignal(s) for s in before} == before  # nothing installed
    assert result.basis in ("interpolated", "extrapolated") and not result.measured
    assert result.verdict is None and result.interval_pct is None
    assert result.delta_pct == result.report.results.vs_fp16_energy_pct_exact
    (path,) = result.write(tmp_path / "o")
    assert path == tmp_path / "o" / "energy.json"
    assert ecocompute.read_report(path).basis == result.basis


def test_several_formats_are_one_result_each_and_write_a_folder_each(tmp_path):
    result = ecocompute.estimate("synthetic:llama-2-7b", ["NF4", "INT4"], gpu_arch="h200")
    assert [f.format for f in result.formats] == ["NF4", "INT4"]
    assert result.by_format()["INT4"].basis == "unavailable"  # never borrowed
    paths = result.write(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == [
        "NF4/energy.json",
        "INT4/energy.json",
    ]


@pytest.mark.slow
def test_estimate_measures_on_a_machine_of_stand_ins(tmp_path, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))
    backend = StandInQuantBackend()
    result = ecocompute.estimate(
        "synthetic:tiny-test", "NF4", tokens=4, iterations=3, warmup=0, idle_seconds=0.2,
        machine=fake_machine(backend=lambda: backend),
    )  # fmt: skip
    assert result.measured and result.verdict in ("saves", "costs", "inconclusive")
    assert result.formats[0].n_pairs == 3 and result.interval_pct is not None
    assert backend.loads == ["FP16", "NF4"]


def test_bad_input_raises_the_command_lines_error():
    with pytest.raises(InputError, match="precision"):
        ecocompute.estimate("synthetic:tiny-test", "FP4")
    with pytest.raises(InputError, match="not an option of estimate"):
        ecocompute.estimate("synthetic:tiny-test", "NF4", iterationz=3)


def test_estimate_takes_the_parameters_model_whole():
    from ecocompute.params import RunParams

    params = RunParams(model_name="synthetic:llama-2-7b", precision="NF4,INT4", gpu_arch="h200")
    result = ecocompute.estimate(params)
    assert [f.format for f in result.formats] == ["NF4", "INT4"]
    again = ecocompute.estimate(params, "INT8", batch_size=8)  # keywords over the model
    assert [f.format for f in again.formats] == ["INT8"]
    assert again.report.workload.batch_size == 8


@pytest.mark.parametrize(
    ("kwargs", "field", "says"),
    [
        ({"precision": None}, "precision", "expected a non-empty string"),
        ({"params_b": 10**400}, "params_b", "expected a finite number"),
        ({"batch_size": "4"}, "batch_size", "expected a whole number"),  # typed, not text
        ({"batch_size": True}, "batch_size", "not true/false"),
        ({"tokens": [8]}, "tokens", "expected a whole number"),
        ({"model": None}, "model_name", "expected a non-empty string"),
        ({"model": b"gpt-1b"}, "model_name", "expected a non-empty string"),
        ({"share": True}, "share", "a command-line option of energy_estimate"),
        ({"prefetch": True}, "prefetch", "a command-line option of energy_estimate"),
        ({"formats": ["NF4"]}, "formats", "give a session's formats as precision"),
        ({"output_dir": "o"}, "output_dir", "estimate() writes nothing"),
    ],
)
def test_wrong_keyword_arguments_are_input_errors_naming_the_field(kwargs, field, says):
    kwargs = {"model": "synthetic:tiny-test", "params_b": 0.001, **kwargs}
    with pytest.raises(InputError) as info:
        ecocompute.estimate(kwargs.pop("model"), **kwargs)
    assert info.value.field == field and says in str(info.value)


def test_read_report_refuses_what_is_not_a_report(tmp_path):
    bad = tmp_path / "energy.json"
    bad.write_text(json.dumps({"schema_version": "ecocompute-energy/9.9"}))
    with pytest.raises(ReportInvalid, match="not a report format this tool reads"):
        ecocompute.read_report(bad)


def test_sweep_returns_its_typed_sweep(tmp_path):
    done = ecocompute.sweep(["synthetic:qwen2.5-0.5b", "synthetic:tinyllama-1.1b"], ["NF4"],
                            output_dir=tmp_path / "sw", dry_run=True, gpu_arch="ada")  # fmt: skip
    assert isinstance(done, ecocompute.Sweep)
    assert [r.status for r in done.runs] == ["ok", "ok"] and done.failed == []
    assert [r.basis for r in done.runs] == ["interpolated"] * 2
    (fit,) = done.fits
    assert fit.status == "skipped" and "derived from the published curve" in (fit.reason or "")
    assert json.loads((tmp_path / "sw" / "sweep.json").read_text()) == done.document()


def test_sweep_takes_the_parameters_model_too(tmp_path):
    from ecocompute.params import resolve

    params = resolve(None, {"dry_run": True, "gpu_arch": "ada", "tokens": 128})
    done = ecocompute.sweep(["synthetic:qwen2.5-0.5b"], output_dir=tmp_path, params=params)
    report = json.loads((tmp_path / (done.runs[0].report or "")).read_text())
    assert report["workload"]["max_new_tokens"] == 128
    with pytest.raises(InputError, match="not both"):
        ecocompute.sweep(["m"], output_dir=tmp_path, params=params, tokens=4)
    with pytest.raises(InputError, match="set per point by the sweep"):
        ecocompute.sweep(["m"], output_dir=tmp_path, model_name="x")


def test_a_sweep_whose_point_fails_raises_with_its_sweep(tmp_path, monkeypatch):
    import ecocompute.jobs.report_job as job
    from ecocompute.errors import RunError

    def run(params, progress, machine=None):
        raise RunError("out of memory (scripted)")

    monkeypatch.setattr(job, "run_energy_estimate", run)
    with pytest.raises(ecocompute.SweepFailed, match="1 of 1 run") as failed:
        ecocompute.sweep(["synthetic:qwen2.5-0.5b"], output_dir=tmp_path, gpu_arch="ada")
    assert isinstance(failed.value, RunError)
    (point,) = failed.value.sweep.failed
    assert point.error == "out of memory (scripted)"
    assert (tmp_path / "sweep.json").is_file()


def test_the_readmes_python_example_runs_and_prints_what_it_says(tmp_path, monkeypatch):
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## From Python") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    said = re.search(r"On a machine without a GPU this prints\s*```text\n(.*?)```", section, re.S)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue().strip() == said.group(1).strip()
    assert (tmp_path / "outputs" / "python" / "energy.json").is_file()
    assert (tmp_path / "outputs" / "sweep" / "sweep.json").is_file()


def _process_state():
    """What a library call must leave as it found it: the environment, every signal's
    handler, the progress-bar settings of huggingface_hub and transformers, and torch's
    global random state (a synthetic checkpoint's first build seeds its own fork)."""
    import torch
    from huggingface_hub import utils as hub
    from transformers.utils import logging as tf_logging

    handlers = {
        s: signal.getsignal(s)
        for s in signal.valid_signals()
        if s not in (signal.SIGKILL, signal.SIGSTOP)
    }
    bars = (hub.are_progress_bars_disabled(), tf_logging.is_progress_bar_enabled())
    return dict(os.environ), handlers, bars, torch.random.get_rng_state().numpy().tobytes()


@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_the_api_leaves_the_environment_and_the_signal_handlers_as_it_found_them(
    tmp_path, monkeypatch
):
    """estimate() on the published path, measured on the stand-ins and in the compiled
    regime, and sweep(): each leaves os.environ, the signal handlers and the libraries'
    progress bars exactly as it found them (issue 28). The heavy libraries are imported
    first: importing transformers' models makes inductor set its own default cache
    folder, which is torch's doing, not the API's."""
    pytest.importorskip("torch")
    import transformers

    assert transformers.LlamaForCausalLM  # its import is the one that sets inductor's default
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)  # the compiled run sets it
    tiny = {"tokens": 16, "iterations": 2, "warmup": 1, "idle_seconds": 1.0}
    calls = {
        "published": lambda: ecocompute.estimate("TinyLlama/TinyLlama-1.1B-Chat-v1.0"),
        "measured": lambda: ecocompute.estimate(
            "synthetic:tiny-test", "NF4", machine=fake_machine(), **tiny
        ),
        "compiled": lambda: ecocompute.estimate(
            "synthetic:tiny-test", "NF4", decode="compiled", machine=fake_machine(), **tiny
        ),
        "sweep": lambda: ecocompute.sweep(
            ["synthetic:qwen2.5-0.5b", "synthetic:tinyllama-1.1b"],
            output_dir=tmp_path / "sw",
            dry_run=True,
            gpu_arch="ada",
        ),
    }
    for name, call in calls.items():
        before = _process_state()
        result = call()
        after = _process_state()
        env = {k: (before[0].get(k), after[0].get(k)) for k in {*before[0], *after[0]}}
        assert {k: v for k, v in env.items() if v[0] != v[1]} == {}, name
        assert after[1:] == before[1:], name
        if name == "compiled":  # it did set the cache folder while it compiled
            decode = result.report.model_dump(mode="json")["measurement"]["decode"]
            assert decode["regime"] == "compiled"
            assert decode["compiler"]["inductor_cache_dir"] == str(tmp_path / "cache/inductor")


def test_read_report_names_the_file_it_read_and_says_nothing_of_writing(tmp_path):
    """Issue 31, item 6: a read is not a write, and the missing path is named."""
    missing = tmp_path / "gone" / "energy.json"
    with pytest.raises(ReportInvalid) as caught:
        ecocompute.read_report(missing)
    text = str(caught.value)
    assert text.startswith(f"{missing}: not a report this tool reads: cannot read")
    assert "nothing written" not in text and caught.value.read_from == str(missing)


def test_sweep_without_an_output_dir_is_an_input_error_and_a_comma_text_is_a_list(tmp_path):
    with pytest.raises(InputError, match="invalid output_dir None: the folder the sweep"):
        ecocompute.sweep("synthetic:qwen2.5-0.5b", dry_run=True)
    done = ecocompute.sweep(
        "synthetic:qwen2.5-0.5b,synthetic:qwen2.5-3b",
        "NF4,INT8",
        output_dir=tmp_path / "sw",
        dry_run=True,
        gpu_arch="ada",
    )
    assert [(r.model_name, r.precision) for r in done.runs] == [
        ("synthetic:qwen2.5-0.5b", "NF4"),
        ("synthetic:qwen2.5-0.5b", "INT8"),
        ("synthetic:qwen2.5-3b", "NF4"),
        ("synthetic:qwen2.5-3b", "INT8"),
    ]


def test_the_sweeps_take_their_arguments_as_estimate_does(tmp_path, capsys):
    """A review's findings (2026-12-04): prompt_sweep() read a text of models or formats
    letter by letter and took any prompt lengths; sweep() read its options as the command
    line reads text ("4" for batch_size), took share= and power_trace=, which estimate()
    refuses, and crashed on params="x"; with params= it printed on stderr unasked."""
    from ecocompute.params import resolve

    out = tmp_path / "sw"
    done = ecocompute.prompt_sweep(
        "synthetic:qwen2.5-0.5b", [128], "NF4,INT8", output_dir=out, dry_run=True
    )
    assert list(done) == [128] and {r.precision for r in done[128].runs} == {"NF4", "INT8"}
    for lengths, says in (
        ([], "give a list"),
        ([128.0], "whole numbers"),
        (["128"], "whole numbers"),
        ([256, 128], "increasing order"),
        ([128, 128], "twice"),
        (None, "give a list"),
    ):
        with pytest.raises(InputError, match=says):
            ecocompute.prompt_sweep(["m-1b"], lengths, output_dir=out, dry_run=True)
    for options, field in (
        ({"batch_size": "4"}, "batch_size"),
        ({"tokens": 8.0}, "tokens"),
        ({"dry_run": "yes"}, "dry_run"),
        ({"share": True}, "share"),
        ({"power_trace": True}, "power_trace"),
    ):
        with pytest.raises(InputError) as info:
            ecocompute.sweep(["m-1b"], output_dir=out, **options)
        assert info.value.field == field
    with pytest.raises(InputError, match="invalid params 'x'"):
        ecocompute.sweep(["m-1b"], output_dir=out, params="x")
    capsys.readouterr()
    params = resolve(None, {"dry_run": True, "gpu_arch": "ada"})
    ecocompute.sweep(["synthetic:qwen2.5-0.5b"], output_dir=tmp_path / "p", params=params)
    assert capsys.readouterr().err == ""  # progress=False: silent, whatever params say


def test_a_path_that_is_not_one_is_bad_input(tmp_path):
    """read_report() and pool_units() refuse None, bytes or a number (pool_units searched
    a folder named 'None'), and pool_units() a path that does not exist (it pooled the
    others without a word); estimate(model_name=) names the field (a TypeError before)."""
    for bad in (None, b"energy.json", 3, ""):
        with pytest.raises(InputError):
            ecocompute.read_report(bad)
        with pytest.raises(InputError):
            ecocompute.pool_units(bad)
    with pytest.raises(InputError, match="does not exist"):
        ecocompute.pool_units(tmp_path / "missing")
    with pytest.raises(InputError, match="invalid model_name"):
        ecocompute.estimate("m-1b", model_name="m-7b", dry_run=True)


def test_a_first_import_inside_estimate_leaves_no_variable_and_no_bars(tmp_path):
    """In a fresh process, estimate() on the stand-ins imports transformers itself, which
    makes inductor set TORCHINDUCTOR_CACHE_DIR; the call puts the environment back and
    hides the bars the libraries draw ("Loading weights") unless progress=True."""
    import subprocess
    import sys

    script = (
        "import contextlib, io, os\n"
        "from tests.fakes import fake_machine\n"
        "import ecocompute\n"
        "before, err = dict(os.environ), io.StringIO()\n"
        "with contextlib.redirect_stderr(err):\n"
        "    r = ecocompute.estimate('synthetic:tiny-test', 'NF4', machine=fake_machine(),\n"
        "                            tokens=4, iterations=2, warmup=0, idle_seconds=0.2)\n"
        "assert r.basis == 'measured', r.basis\n"
        "changed = {k for k in {*before, *os.environ} if before.get(k) != os.environ.get(k)}\n"
        "print(sorted(changed), repr(err.getvalue()))\n"
    )
    env = {**os.environ, "ECOCOMPUTE_CACHE": str(tmp_path / "cache")}
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] ''", done.stdout


def test_the_api_names_a_format_as_the_command_line_folders_it(tmp_path, capsys):
    """The no-GPU path writes no per-format figures: .format fell back to the precision
    ("INT8"), and .write() put torchao's INT8 in INT8/ where the command line writes
    INT8-torchao/."""
    answer = ecocompute.estimate(
        "synthetic:qwen2.5-0.5b", "INT8,INT4", backend="torchao", dry_run=True
    )
    assert [r.format for r in answer.formats] == ["INT8-torchao", "INT4"]
    answer.write(tmp_path / "api")
    argv = ["energy_estimate", "--model", "synthetic:qwen2.5-0.5b", "--precision", "INT8,INT4",
            "--backend", "torchao", "--dry_run", "-q"]  # fmt: skip
    argv += ["--output_dir", str(tmp_path / "cli")]
    assert main(argv) == 0
    capsys.readouterr()
    assert sorted(os.listdir(tmp_path / "api")) == sorted(os.listdir(tmp_path / "cli"))
    assert "INT8-torchao" in os.listdir(tmp_path / "api")
    params = RunParams(model_name="synthetic:qwen2.5-0.5b", precision="INT8")
    assert params.spec("int8") == params.spec(Precision.INT8)
    with pytest.raises(InputError, match="invalid precision 'FP3'"):
        params.spec("FP3")


@pytest.mark.slow
def test_a_session_with_a_refused_format_says_so_and_keeps_the_session_layout(
    tmp_path, monkeypatch
):
    """A review (2026-12-05): NF4,INT4 whose NF4 failed to compile answered INT4 alone
    and wrote it as <folder>/energy.json, the layout of a one-format run; the command
    line writes <folder>/INT4/energy.json and says NF4 was not measured."""
    from ecocompute.llm.compiled import CompiledDecoder

    real_first_call = CompiledDecoder._first_call

    def first_call(self, *, fullgraph):
        if self.label == "NF4":
            raise RuntimeError("injected: NF4 does not compile here")
        return real_first_call(self, fullgraph=fullgraph)

    monkeypatch.setattr(CompiledDecoder, "_first_call", first_call)
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))
    tiny = {"tokens": 4, "iterations": 2, "warmup": 0, "idle_seconds": 0.2}
    e = ecocompute.estimate(
        "synthetic:tiny-test", "NF4,INT4", decode="compiled", machine=fake_machine(), **tiny
    )
    assert [f.format for f in e.formats] == ["INT4"] and list(e.refused) == ["NF4"]
    assert "does not compile here" in e.refused["NF4"]
    assert e.write(tmp_path / "out") == [tmp_path / "out" / "INT4" / "energy.json"]
    assert not (tmp_path / "out" / "energy.json").exists()


def test_progress_is_a_bool_a_checkpoint_a_path_and_a_prompt_sweep_needs_its_folder():
    """A review (2026-12-05): progress="no" printed progress (a truthy text); a
    checkpoint folder given as a Path was refused as "not a non-empty string"; and
    prompt_sweep() without output_dir raised TypeError where sweep() raises InputError."""
    with pytest.raises(InputError, match="invalid progress 'no': True or False"):
        ecocompute.estimate("TinyLlama/TinyLlama-1.1B-Chat-v1.0", progress="no")
    with pytest.raises(InputError, match="invalid progress"):
        ecocompute.sweep(["synthetic:qwen2.5-0.5b"], output_dir="x", dry_run=True, progress=1)
    as_text = ecocompute.estimate("TinyLlama/TinyLlama-1.1B-Chat-v1.0")
    as_path = ecocompute.estimate(Path("TinyLlama/TinyLlama-1.1B-Chat-v1.0"))
    assert as_path.delta_pct == as_text.delta_pct is not None
    with pytest.raises(InputError, match="output_dir"):
        ecocompute.prompt_sweep(["synthetic:qwen2.5-0.5b"], [128], dry_run=True)
