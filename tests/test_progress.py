"""Progress on stderr, and --quiet silencing it, the libraries' own bars included."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from ecocompute.boundary.progress import Progress, quiet_library_progress_bars


def test_progress_lines_go_to_the_stream_unless_quiet():
    loud, quiet = io.StringIO(), io.StringIO()
    Progress(stream=loud)("loading")
    Progress(quiet=True, stream=quiet)("loading")
    assert loud.getvalue().rstrip().endswith("] loading")
    assert quiet.getvalue() == ""


def test_quiet_silences_transformers_bars_already_imported(monkeypatch):
    transformers_logging = pytest.importorskip("transformers.utils.logging")
    hub_utils = pytest.importorskip("huggingface_hub.utils")
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    # Both libraries' switches are process-wide: start from "on" and let monkeypatch
    # put them back, so no other test sees the change.
    monkeypatch.setattr(transformers_logging, "_tqdm_active", True)
    hub_calls: list[str] = []
    monkeypatch.setattr(hub_utils, "disable_progress_bars", lambda: hub_calls.append("off"))
    quiet_library_progress_bars()
    assert not transformers_logging.is_progress_bar_enabled()
    assert hub_calls  # huggingface_hub told too (transformers also forwards it)
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"


@pytest.mark.slow
def test_quiet_before_transformers_is_imported_holds_after_the_import():
    pytest.importorskip("transformers")
    code = (
        "import sys\n"
        "from ecocompute.boundary.progress import quiet_library_progress_bars\n"
        "assert 'transformers' not in sys.modules\n"
        "quiet_library_progress_bars()\n"
        "import transformers.utils.logging as l\n"
        "print(l.is_progress_bar_enabled())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
