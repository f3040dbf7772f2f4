"""`python -m ecocompute`. Its first statements hold SIGINT, SIGTERM and SIGHUP, before
even entry.py is imported: a signal from here on ends the run with its one-line message
(entry.py says why and how)."""

import _signal

_arrived: list[int] = []
for _signum in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
    if _signal.getsignal(_signum) != _signal.SIG_IGN:
        _signal.signal(_signum, lambda signum, frame: _arrived.append(signum))

from ecocompute.cli.entry import main  # noqa: E402 - only once the signals are held

raise SystemExit(main(arrived=_arrived))
