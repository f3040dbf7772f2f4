"""Issue 30 (the fourth hostile round): paths taken exactly as given (item 2), the Python
API's arguments (item 4) and the smaller promises (item 12), each a case that broke."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import ecocompute
from ecocompute.cli import main
from ecocompute.errors import InputError
from ecocompute.sweeps.plan import split_batches

from ..conftest import REPO

SWEEP = ["sweep", "--models", "gpt-1b", "--dry_run", "-q"]


@pytest.fixture
def no_plot(monkeypatch):
    """A sweep whose plot is not what is tested draws none (matplotlib "missing"): the
    plot is the slowest part of a dry-run sweep."""
    import ecocompute.sweeps.fits as fits

    monkeypatch.setattr(fits, "missing_fit_stack", lambda: ["matplotlib"])


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


# --- item 2: paths taken as given ---------------------------------------------------------


def test_an_output_dir_with_a_leading_space_is_that_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "o").mkdir()
    argv = ["energy_estimate", "--dry_run", "-q", "--model", "gpt-1b", "--output_dir", " o"]
    assert main(argv) == 0
    capsys.readouterr()
    assert (tmp_path / " o" / "energy.json").is_file()
    assert list((tmp_path / "o").iterdir()) == []


@pytest.mark.parametrize("folder", [" ", " res"])
def test_a_sweeps_folder_with_spaces_holds_its_reports_and_sweep_json(
    tmp_path, monkeypatch, capsys, folder, no_plot
):
    monkeypatch.chdir(tmp_path)
    assert main([*SWEEP, "--output_dir", folder]) == 0
    capsys.readouterr()
    doc = json.loads((tmp_path / folder / "sweep.json").read_text())
    assert (tmp_path / folder / doc["runs"][0]["report"]).is_file()
    assert sorted(os.listdir(tmp_path)) == [folder]  # nothing beside it, nothing at /


def test_an_empty_sweep_folder_is_refused_as_energy_estimate_refuses_it(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert main([*SWEEP, "--output_dir", ""]) == 2
    assert _one_error(capsys) == (
        "ecocompute: error: invalid output_dir '': expected a non-empty string"
    )
    assert main(["energy_estimate", "--dry_run", "-q", "--output_dir", ""]) == 2
    assert _one_error(capsys) == (
        "ecocompute: error: invalid output_dir '': expected a non-empty string"
    )
    assert os.listdir(tmp_path) == []


# --- item 4: the Python API's arguments -----------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field", "says"),
    [
        ({"output_dir": None}, "output_dir", "the folder the sweep writes its reports"),
        ({"output_dir": b"sw"}, "output_dir", "expected a non-empty string"),
        ({"output_dir": ""}, "output_dir", "expected a non-empty string"),
        ({"batch_sizes": 4}, "batch_sizes", "give a list of whole numbers"),
        ({"batch_sizes": [1, 1]}, "batch_sizes", "lists a batch size twice"),
        ({"batch_sizes": [1.0, 1]}, "batch_sizes", "whole numbers >= 1"),
        ({"batch_sizes": [1, 2.0]}, "batch_sizes", "whole numbers >= 1"),
        ({"batch_sizes": [True, 2]}, "batch_sizes", "whole numbers >= 1"),
        ({"batch_sizes": [4, 1]}, "batch_sizes", "increasing order"),
        ({"batch_sizes": []}, "batch_sizes", "give a list of whole numbers"),
        ({"models": None}, "models", "give a list of names"),
        ({"models": ["gpt-1b", None]}, "models", "give a list of names"),
        ({"precisions": [None]}, "precisions", "give a list of names"),
        ({"frobnicate": 1}, "frobnicate", "not a run parameter"),
    ],
)
def test_wrong_sweep_arguments_are_input_errors_and_write_nothing(
    tmp_path, monkeypatch, kwargs, field, says
):
    monkeypatch.chdir(tmp_path)
    given = {"models": ["gpt-1b"], "output_dir": "sw", "dry_run": True, **kwargs}
    with pytest.raises(InputError) as info:
        ecocompute.sweep(given.pop("models"), **given)
    assert info.value.field == field and says in str(info.value), str(info.value)
    assert os.listdir(tmp_path) == []


def test_a_model_or_format_given_as_text_is_one_list_never_its_letters(tmp_path, no_plot):
    done = ecocompute.sweep("gpt-1b", "NF4,INT8", output_dir=tmp_path / "sw", dry_run=True)
    assert [(r.model_name, r.precision) for r in done.runs] == [
        ("gpt-1b", "NF4"),
        ("gpt-1b", "INT8"),
    ]


@pytest.mark.parametrize("text", ["1,01", "4,004"])
def test_the_command_line_refuses_one_batch_size_written_twice(text):
    with pytest.raises(InputError, match="lists a batch size twice"):
        split_batches(text)


def test_matplotlib_says_nothing_on_stderr_with_an_unwritable_home(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME")}
    env.pop("XDG_CACHE_HOME", None)
    env.update(HOME="/dev/null/home", PYTHONPATH=str(REPO))
    code = "from ecocompute.plots.files import require_matplotlib; require_matplotlib()"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr


# --- item 12: the smaller promises ----------------------------------------------------


def test_an_unwritable_sweep_png_costs_no_sweep_json(tmp_path, capsys):
    out = tmp_path / "sw"
    (out / "sweep.png").mkdir(parents=True)
    assert main([*SWEEP, "--output_dir", str(out)]) == 0
    capsys.readouterr()
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["plot"] is None and "sweep.png" in doc["plot_note"], doc["plot_note"]
    assert doc["runs"][0]["status"] == "ok"


def test_an_unwritable_sweep_json_costs_the_plot_too(tmp_path, capsys):
    """Nor the other way round: a sweep.json that cannot be written (a folder in its
    place) is found before the plot is drawn, so no sweep.png stands that no line names."""
    out = tmp_path / "sw"
    (out / "sweep.json").mkdir(parents=True)
    assert main([*SWEEP, "--output_dir", str(out)]) == 1
    assert "no sweep.json was written" in capsys.readouterr().err
    assert not (out / "sweep.png").exists()


# --- item 3: --scheduler checked as input, never echoing a password --------------------


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("tcp://alice:s3cret@host:1", "must not carry a user name or password"),
        ("tcp://alice:s3/cret@host:1", "must not carry a user name or password"),
        ("", "expected a Dask scheduler's address"),
        ("tcp://host:99999", "port 1..65535"),
        ("tcp://host:abc", "port 1..65535"),
        ("tcp://[::1", "port 1..65535"),
        ("tcp://host", "port 1..65535"),
        ("http://host:8786", "schemes: tcp, tls, ws, wss, ucx"),
        ("tcp://host:8786/x?k=v", "without a path, query or fragment"),
        ("tcp://ho st:8786", "without spaces"),
    ],
)
def test_a_scheduler_address_is_checked_before_anything_runs(tmp_path, capsys, address, says):
    out = tmp_path / "sw"
    status = main([*SWEEP, "--output_dir", str(out), "--scheduler", address])
    line = _one_error(capsys)
    assert status == 2, line
    assert line.startswith("ecocompute: error: invalid scheduler "), line
    assert says in line and "alice" not in line and "s3" not in line, line
    assert not out.exists()


@pytest.mark.parametrize("address", ["tcp://host:8786", "host:8786", "tls://[::1]:8786"])
def test_a_well_formed_scheduler_address_is_taken_as_given(address):
    from ecocompute.fleet.options import check_scheduler

    assert check_scheduler(address) == address


# --- item 5: a closed stdout is exit 3 (files written) or one line, never an internal error


def _closed_stdout_main(monkeypatch, capsys, argv: list[str]) -> tuple[int, str]:
    """entry.main as the process runs it, with stdout closed at start (`>&-`: Python
    sets sys.stdout to None)."""
    from ecocompute.cli.entry import main as entry_main

    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", None)
    status = entry_main(argv, exiting=False)
    return status, _one_error(capsys)


@pytest.mark.parametrize(
    ("argv", "written"),
    [
        (["energy_estimate", "--dry_run", "-q", "--output_dir", "{d}/one"], ["one/energy.json"]),
        (
            ["energy_estimate", "--dry_run", "-q", "--precision", "NF4,INT8", "--output_dir",
             "{d}/two"],
            ["two/NF4/energy.json", "two/INT8/energy.json"],
        ),
        ([*SWEEP, "--output_dir", "{d}/sw"], ["sw/sweep.json"]),
    ],
)  # fmt: skip
def test_a_closed_stdout_after_the_reports_are_written_is_exit_3_naming_them(
    tmp_path, monkeypatch, capsys, argv, written, no_plot
):
    argv = [a.replace("{d}", str(tmp_path)) for a in argv]
    status, line = _closed_stdout_main(monkeypatch, capsys, argv)
    assert status == 3, line
    names = ", ".join(str(tmp_path / w) for w in written)
    assert line.startswith(f"ecocompute: {names} w"), line
    assert line.endswith("but the summary could not be printed: stdout is closed"), line
    assert all((tmp_path / w).is_file() for w in written)


def test_aggregate_and_plot_into_a_closed_stdout(tmp_path, monkeypatch, capsys):
    assert main(_SIZES[0] + ["--output_dir", str(tmp_path / "r1")]) == 0
    assert main(_SIZES[1] + ["--output_dir", str(tmp_path / "r2")]) == 0
    status, line = _closed_stdout_main(monkeypatch, capsys, ["aggregate", str(tmp_path)])
    assert status == 1 and line == (
        "ecocompute: error: could not print the output: stdout is closed; nothing was written"
    )  # the table is the output: lost, and said so, never exit 0
    for argv, name in (
        (["aggregate", str(tmp_path), "-o", str(tmp_path / "t.csv")], "t.csv"),
        (["plot", str(tmp_path), "-o", str(tmp_path / "p.png")], "p.png"),
    ):
        capsys.readouterr()
        monkeypatch.setattr(sys, "stdout", None)
        from ecocompute.cli.entry import main as entry_main

        status = entry_main(argv, exiting=False)
        err = capsys.readouterr().err
        assert status == 3, err
        assert f"{tmp_path / name} was written (complete)" in err, err
        assert "nothing was written" not in err, err


_SIZES = [
    ["energy_estimate", "--dry_run", "-q", "--model", "synthetic:llama-2-7b", "--gpu_arch", "ada"],
    ["energy_estimate", "--dry_run", "-q", "--model", "synthetic:llama-2-13b", "--gpu_arch", "ada"],
]


def test_a_process_started_with_stdout_closed_keeps_descriptor_1_out_of_its_files(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        f'"{sys.executable}" -m ecocompute energy_estimate --dry_run -q --output_dir "{out}" >&-',
        shell=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert "internal error" not in done.stderr
    assert json.loads((out / "energy.json").read_text())["ecocompute_format"] == "2.0"


# --- item 9: files that are not regular ------------------------------------------------


def _not_regular(root):
    """energy.json as a FIFO, a link to /dev/zero, a link to nothing and a socket, each in
    a folder of its own under root; none may be opened (a FIFO would block)."""
    import socket

    for name in ("fifo", "zero", "dangling", "socket"):
        (root / name).mkdir(parents=True)
    os.mkfifo(root / "fifo" / "energy.json")
    (root / "zero" / "energy.json").symlink_to("/dev/zero")
    (root / "dangling" / "energy.json").symlink_to(root / "gone" / "energy.json")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "socket" / "energy.json"))
    return sock


def test_reports_that_are_no_regular_file_are_each_said_in_one_line(tmp_path, capsys):
    root = tmp_path / "r"
    sock = _not_regular(root)
    try:
        assert main(["validate", str(root)]) == 1
        lines = capsys.readouterr().out.strip().splitlines()
        assert main(["aggregate", str(root)]) == 1
        err = capsys.readouterr().err
    finally:
        sock.close()
    said = {line.split(": INVALID ")[0]: line.split(": INVALID ")[1] for line in lines}
    assert said == {
        f"{root}/dangling/energy.json": "not a file: a symbolic link to "
        f"{root}/gone/energy.json, which does not exist",
        f"{root}/fifo/energy.json": "not a file: a FIFO, not a report (not read)",
        f"{root}/socket/energy.json": "not a file: a socket, not a report (not read)",
        f"{root}/zero/energy.json": "not a file: a symbolic link to /dev/zero, a character "
        "device, not a report (not read)",
    }
    assert "skipped 4 invalid file(s)" in err and "a FIFO" in err


def test_a_torchinductor_cache_dir_the_user_set_to_inductors_default_is_kept(tmp_path, monkeypatch):
    from ecocompute.core import environment
    from ecocompute.llm import compiled

    default = str(tmp_path / "torchinductor_user")
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(compiled, "_inductor_default", lambda: default)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", default)
    monkeypatch.setitem(environment.AT_START, "TORCHINDUCTOR_CACHE_DIR", default)
    with environment.environment_kept():
        assert compiled.inductor_cache_dir() == (
            default,
            "TORCHINDUCTOR_CACHE_DIR, set before the run",
        )
    # the same value set later, by a library's import, is not the user's wish
    monkeypatch.delitem(environment.AT_START, "TORCHINDUCTOR_CACHE_DIR")
    with environment.environment_kept():
        path, why = compiled.inductor_cache_dir()
    assert path == str(tmp_path / "cache" / "inductor") and why.startswith("the tool's cache")


def test_a_deleted_working_folder_is_one_line_not_an_internal_error(tmp_path, monkeypatch, capsys):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert main(["energy_estimate", "--dry_run", "-q"]) == 1
    line = _one_error(capsys)
    assert line.startswith("ecocompute: error: the current folder no longer exists"), line
    assert line.endswith("give absolute paths; nothing was written"), line


# --- item 10: the fleet ------------------------------------------------------------------


def test_the_local_clusters_workers_leave_the_terminals_process_group(monkeypatch):
    """A Ctrl-C at the terminal goes to its whole foreground process group: the local
    cluster's workers (and their points) must not be in it, or they die of it."""
    distributed = pytest.importorskip("distributed")
    from ecocompute.fleet import cluster

    made: dict = {}
    monkeypatch.setattr(distributed, "SpecCluster", lambda **kw: made.update(kw))
    cluster.local_cluster(("0", "1"))
    assert made["workers"] and all(
        w["options"]["preload"] == ["ecocompute.fleet.worker_setup"]
        for w in made["workers"].values()
    )
    code = (
        "import os; from ecocompute.fleet.worker_setup import dask_setup; "
        "before = os.getpgid(0); dask_setup(None); "
        "print(before != os.getpid(), os.getpgid(0) == os.getpid())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.split() == ["True", "True"], done.stderr


def test_a_second_sweep_into_a_folder_in_use_is_refused_before_it_runs(tmp_path, capsys, no_plot):
    import fcntl

    out = tmp_path / "sw"
    out.mkdir()
    held = os.open(out, os.O_RDONLY | os.O_DIRECTORY)  # the first sweep, still running
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(InputError, match="another sweep is writing into this folder now"):
            ecocompute.sweep(["gpt-1b"], output_dir=out, dry_run=True)
        assert main([*SWEEP, "--output_dir", str(out)]) == 2
        assert "another sweep is writing into this folder now" in _one_error(capsys)
        assert main([*SWEEP, "--fit_only", "--output_dir", str(out)]) == 2
        capsys.readouterr()
        assert os.listdir(out) == []
    finally:
        os.close(held)
    assert main([*SWEEP, "--output_dir", str(out)]) == 0  # released: it runs
    capsys.readouterr()
    assert (out / "sweep.json").is_file()


@pytest.mark.parametrize("folder", ["", None, b"x"])
def test_an_estimates_write_takes_no_empty_or_non_path_folder(tmp_path, monkeypatch, folder):
    monkeypatch.chdir(tmp_path)
    for answer in (
        ecocompute.estimate("gpt-1b", dry_run=True),
        ecocompute.estimate("gpt-1b", "NF4,INT8", dry_run=True),
    ):
        with pytest.raises(InputError, match=r"invalid output_dir .*expected a non-empty string"):
            answer.write(folder)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("tool", ["validate", "aggregate"])
@pytest.mark.parametrize(
    ("given", "says"),
    [("", "expected a non-empty path"), ("energy.json/", "ends in a '/', but names no folder")],
)
def test_a_path_to_read_is_taken_exactly_as_given(tmp_path, monkeypatch, capsys, tool, given, says):
    """'' is never this folder, and 'energy.json/' never the file energy.json (pathlib
    reads both so): bad input, as errors.md says of every path."""
    assert main(["energy_estimate", "--dry_run", "-q", "--output_dir", str(tmp_path)]) == 0
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main([tool, given]) == 2
    assert f"invalid PATH {given!r}: {says}" in capsys.readouterr().err


def test_an_interrupted_rerun_leaves_no_sweep_json_that_contradicts_its_reports(
    tmp_path, capsys, monkeypatch, no_plot
):
    """A sweep run again into its folder replaces its points' reports one by one: the
    earlier sweep.json is removed when it begins (it named the old reports), and the
    interrupt line says what stands (it said 'earlier files are untouched')."""
    import ecocompute.sweeps.run as sweep_run

    out = tmp_path / "sw"
    two = ["sweep", "--models", "gpt-1b,gpt-3b", "--dry_run", "-q", "--output_dir", str(out)]
    assert main(two) == 0 and (out / "sweep.json").is_file()
    (out / "sweep.png").write_bytes(b"the earlier sweep's plot")  # no_plot: drawn by hand
    capsys.readouterr()
    real, calls = sweep_run.run_point, []

    def second_interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep_run, "run_point", second_interrupted)
    assert main(two) == 130
    line = _one_error(capsys)
    assert "interrupted by SIGINT: no sweep.json was written" in line
    assert "energy.json of every point that finished stands" in line
    assert "earlier" in line and "was removed when the sweep began" in line
    assert not (out / "sweep.json").exists() and not (out / "sweep.png").exists()


def test_a_prompt_length_sweep_takes_the_folder_lock_too(tmp_path):
    import fcntl

    out = tmp_path / "sw"
    out.mkdir()
    held = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(InputError, match="another sweep is writing into this folder now"):
            ecocompute.prompt_sweep(["gpt-1b"], [16, 32], output_dir=out, dry_run=True)
        assert os.listdir(out) == []
    finally:
        os.close(held)
