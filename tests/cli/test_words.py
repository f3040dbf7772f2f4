"""Words a newcomer reads before any code (help, the package description, the parameters
file, the container steps, the docs' folder layouts) say what the code does today."""

from __future__ import annotations

import re
import shlex
import tomllib

from ecocompute.cli.dispatch import build_parser
from ecocompute.formats.table import FORMATS

from ..conftest import REPO

QUANTIZED = sorted({str(spec.precision) for spec in FORMATS} - {"FP16"})


def test_every_description_names_every_format():
    description = build_parser().description or ""
    package = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["description"]
    yaml_line = next(
        line
        for line in (REPO / "workspace/parameters/energy_params.yaml").read_text().splitlines()
        if line.startswith("precision:")
    )
    for text in (description, package, yaml_line):
        missing = [f for f in QUANTIZED if not re.search(rf"\b{f}\b", text)]
        assert missing == [], (text, missing)


def _sweep_help() -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return " ".join((sub.choices["sweep"].description or "").split())


def test_sweep_help_and_docs_give_the_folders_a_sweep_writes():
    from ecocompute.sweeps.plan import point_folder

    # what the sweep writes, as placeholders: one format, several, and -b<N>
    assert point_folder("m", ["NF4"], None) == "m-NF4"
    assert point_folder("m", ["NF4", "INT4"], None) == "m"
    assert point_folder("m", ["NF4", "INT4"], 4) == "m-b4"
    text = _sweep_help()
    assert "<model>-<format>/energy.json" in text
    assert "<model>/<format>/energy.json" in text and "-b<N>" in text
    docs = (REPO / "docs/results-tools.md").read_text()
    assert "D/<model-slug>/<format>/energy.json" in docs
    assert "D/<model-slug>-b<N>/<format>/" in docs


def _docker_run(text: str) -> list[str]:
    """The first `docker run ... ` command in text, its continuation lines joined."""
    joined = text.replace("\\\n", " ")
    line = next(x for x in joined.splitlines() if x.strip().startswith("docker run"))
    return shlex.split(line.split("#")[0])


def test_the_ci_step_that_runs_the_readme_command_runs_it():
    smoke = (REPO / ".ci/container-smoke").read_text()
    step = smoke.split('step "10. plain docker run, as the README shows it', 1)[1]
    readme = (REPO / "README.md").read_text().split("docker build -f Dockerfile.cpu", 1)[1]
    ours = [w.replace("$work/out", "$PWD/out") for w in _docker_run(step)]
    assert ours == _docker_run(readme)


def test_aggregate_prints_model_names_whole(tmp_path):
    from ecocompute.pooling.aggregate import aggregate, render_table
    from ecocompute.results.collect import read_reports

    from ..made_reports import measured, write

    name = "an-organisation/a-model-name-longer-than-28-characters"
    write(measured(model=name), tmp_path / "a")
    reports, _ = read_reports([tmp_path])
    assert name in render_table(aggregate(reports))


def test_the_docs_prompt_length_sweeps_run_as_written(tmp_path, capsys):
    """docs/map.md and docs/method.md showed `sweep --prompt_tokens 128,1024,4096`, which
    --context_length's default (2048) refuses."""
    from ecocompute.cli import main

    for doc in ("docs/map.md", "docs/method.md"):
        (shown,) = re.findall(r"`(sweep --prompt_tokens [^`]+)`", (REPO / doc).read_text())
        out = str(tmp_path / doc)
        argv = [*shlex.split(shown), "--models", "synthetic:qwen2.5-0.5b", "--dry_run", "-q"]
        assert main([*argv, "--output_dir", out]) == 0, (doc, capsys.readouterr().err)


def test_the_docs_dry_run_sweep_prints_what_the_command_prints(tmp_path, capsys):
    """docs/results-tools.md showed the summary's first line without the protocol the
    command prints after the card."""
    from ecocompute.cli import main

    text = (REPO / "docs/results-tools.md").read_text().replace("\\\n", " ")
    block = text.split("$ ecocompute sweep ", 1)[1].split("```", 1)[0]
    command, shown = block.split("\n", 1)
    argv = ["sweep", *shlex.split(command)]
    out = str(tmp_path / "sw")
    assert main([*(out if a == "/tmp/sw" else a for a in argv)]) == 0
    assert capsys.readouterr().out.replace(out, "/tmp/sw") == shown
