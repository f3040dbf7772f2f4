"""Progress on stderr, and --quiet silencing it, the libraries' own bars included (for the
block that asks, and put back after it)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from ecocompute.boundary.progress import Progress, library_progress_bars_hidden


def test_progress_lines_go_to_the_stream_unless_quiet():
    loud, quiet = io.StringIO(), io.StringIO()
    Progress(stream=loud)("loading")
    Progress(quiet=True, stream=quiet)("loading")
    assert loud.getvalue().rstrip().endswith("] loading")
    assert quiet.getvalue() == ""


def test_quiet_silences_the_libraries_bars_for_the_block_only(monkeypatch):
    transformers_logging = pytest.importorskip("transformers.utils.logging")
    hub_utils = pytest.importorskip("huggingface_hub.utils")
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    # Both libraries' switches are process-wide: start from "on" and let monkeypatch
    # put them back, so no other test sees the change.
    monkeypatch.setattr(transformers_logging, "_tqdm_active", True)
    hub_bars = sys.modules["huggingface_hub.utils.tqdm"]  # the module, not its class
    monkeypatch.setattr(hub_bars, "progress_bar_states", {})
    with library_progress_bars_hidden():
        assert not transformers_logging.is_progress_bar_enabled()
        assert hub_utils.are_progress_bars_disabled()
        assert "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ  # no process-wide switch
    assert transformers_logging.is_progress_bar_enabled()  # as it found them
    assert not hub_utils.are_progress_bars_disabled()
    with library_progress_bars_hidden(hidden=False):
        assert transformers_logging.is_progress_bar_enabled()


@pytest.mark.slow
def test_quiet_before_transformers_is_imported_holds_after_the_import():
    pytest.importorskip("transformers")
    code = (
        "import sys\n"
        "from ecocompute.boundary.progress import library_progress_bars_hidden\n"
        "assert 'transformers' not in sys.modules\n"
        "with library_progress_bars_hidden():\n"
        "    import transformers.utils.logging as l\n"
        "    print(l.is_progress_bar_enabled())\n"
        "print(l.is_progress_bar_enabled())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"},
    ).stdout
    assert out.split() == ["False", "True"]  # quiet in the block, its own setting after
