"""Issue 13, class 9: writing "atomically" never replaces a device, FIFO or link.

As root, `aggregate -o /dev/stdout` used to rename a regular file onto the /dev/stdout
link. Now (boundary/atomic.py): a character device or FIFO is written through, a name
for an open descriptor (/dev/stdout) is written to that descriptor, a symbolic link
stays a link while the file it points to is replaced atomically, and a folder (or a
block device, a socket) is refused. The test runs as whatever user CI is; /dev/null
and /dev/full exist on every Linux.
"""

from __future__ import annotations

import os
import select
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ecocompute.boundary.atomic import THROUGH, write_mode, write_text_atomic
from ecocompute.cli import main
from ecocompute.errors import RunError

from ..conftest import REPO
from ..made_reports import measured, write

HEADER = "kind,card,model"


@pytest.fixture
def reports(tmp_path) -> Path:
    write(measured(), tmp_path / "r" / "a")
    return tmp_path / "r"


def _one_error(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_dev_null_is_written_through_and_stays_a_device(reports, capsys):
    before = os.stat("/dev/null")
    assert main(["aggregate", str(reports), "-o", "/dev/null"]) == 0
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert "wrote /dev/null" in capsys.readouterr().err


def test_dev_full_is_one_line_saying_part_may_have_reached_it(reports, capsys):
    assert main(["aggregate", str(reports), "-o", "/dev/full"]) == 1
    line = _one_error(capsys.readouterr().err)
    assert line.startswith("ecocompute: error: could not write /dev/full (a device, FIFO")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def _read_until_closed(fd: int, received: list[bytes]) -> None:
    """Everything a writer puts into the FIFO read end fd (opened before the writer came,
    non-blocking), until the writer closes it: select waits for the writer's data or its
    close, so a reader that opened first never mistakes "no writer yet" for the end."""
    chunks = []
    while True:
        select.select([fd], [], [], 30)
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    received.append(b"".join(chunks))


def test_a_fifo_with_a_reader_gets_the_table(reports, tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    # the reader is there before the command looks (a thread's own blocking open could
    # come after it: the command then rightly finds no reader, a flaky test)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    reader = threading.Thread(target=_read_until_closed, args=(fd, received))
    reader.start()
    try:
        assert main(["aggregate", str(reports), "-o", str(fifo)]) == 0
    finally:
        reader.join(timeout=30)
        os.close(fd)
    assert received and received[0].decode().startswith(HEADER)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_fifo_nobody_reads_is_refused_at_once(reports, tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["aggregate", str(reports), "-o", str(fifo)]) == 1
    line = _one_error(capsys.readouterr().err)
    assert line == (
        f"ecocompute: error: could not write {fifo}: it is a FIFO and no process is reading "
        "it; nothing was written"
    )
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_link_stays_a_link_and_its_file_is_replaced(reports, tmp_path, capsys):
    real = tmp_path / "elsewhere" / "table.csv"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "table.csv"
    link.symlink_to(real)
    assert main(["aggregate", str(reports), "-o", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text().startswith(HEADER)
    assert sorted(p.name for p in real.parent.iterdir()) == ["table.csv"]  # no temp left


def test_a_dangling_link_creates_the_file_it_names(reports, tmp_path):
    link = tmp_path / "table.csv"
    link.symlink_to("made.csv")
    assert main(["aggregate", str(reports), "-o", str(link)]) == 0
    assert link.is_symlink() and (tmp_path / "made.csv").read_text().startswith(HEADER)


def test_an_energy_json_that_is_a_link_keeps_the_link(tmp_path, capsys):
    kept = tmp_path / "kept.json"
    kept.write_text("{}")
    out = tmp_path / "out"
    out.mkdir()
    (out / "energy.json").symlink_to(kept)
    assert main(["energy_estimate", "--dry_run", "-q", "--output_dir", str(out)]) == 0
    assert (out / "energy.json").is_symlink()
    assert '"schema_version"' in kept.read_text()


def test_a_folder_is_refused_before_any_work(reports, tmp_path, capsys):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert main(["aggregate", str(reports), "-o", str(folder)]) == 2
    assert _one_error(capsys.readouterr().err) == (
        f"ecocompute: error: invalid output '{folder}': is a folder; name a file"
    )
    assert folder.is_dir() and list(folder.iterdir()) == []
    with pytest.raises(RunError, match="it is a folder"):
        write_text_atomic(folder, "x")  # the writer itself refuses too


def test_the_picture_goes_through_dev_null_too(reports, capsys):
    assert main(["plot", str(reports), "-o", "/dev/null"]) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_dev_stdout_is_written_to_the_descriptor_in_order(reports, tmp_path):
    """stdout on a regular file: the table and the CSV both land in it, in the order they
    were written, and /dev/stdout is still the link it was (as root, renaming onto it
    would have replaced it)."""
    link_before = os.readlink("/dev/stdout")
    captured = tmp_path / "captured.txt"
    with open(captured, "w") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "ecocompute", "aggregate", str(reports), "-o", "/dev/stdout"],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    text = captured.read_text()
    assert text.startswith(HEADER)  # the CSV first, then the table
    assert text.index(HEADER) < text.index("|  measured")
    assert os.path.islink("/dev/stdout") and os.readlink("/dev/stdout") == link_before


def test_write_mode_names_descriptors():
    assert write_mode(Path("/dev/stdout"))[::2] == (THROUGH, 1)
    assert write_mode(Path("/dev/stderr"))[::2] == (THROUGH, 2)
    assert write_mode(Path("/dev/null"))[::2] == (THROUGH, None)
