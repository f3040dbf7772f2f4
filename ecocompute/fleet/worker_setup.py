"""The Dask preload of the local cluster's worker processes (cluster.local_cluster).

A Ctrl-C typed at the terminal is sent to every process of its foreground process
group. The local cluster's workers are children of the sweep's process, so without this
they would share its group: each would die of the SIGINT with a traceback on stderr,
and its running point (a child of the worker, in the same group) with it, recorded as
"failed: worker lost". Here each worker leaves the group as it starts: the Ctrl-C
reaches the client alone, which cancels the points itself (a Dask Event; each point's
process gets SIGINT from its own worker, client.py and point.py) and records them as
cancelled, the workers alive to say so.

Imports nothing of the package: a worker imports it by name at start.
"""

from __future__ import annotations

import contextlib
import os


def dask_setup(worker: object) -> None:
    """Called by Dask in each worker process as it starts: makes it the leader of a
    process group of its own (its children follow it there). Never raises: where the
    system refuses, the worker is as it was."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
