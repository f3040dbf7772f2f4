"""One HTTP GET with a deadline for the whole request, and a cap on what is read.

urllib's timeout applies to each socket operation, so a server that sends a byte a
second (in the status line, the headers or the body) holds a request forever. Here
the request runs in a daemon thread and the caller waits at most deadline_s for all of
it (name lookup, connection, headers, body); past that, every socket the request
opened is shut down, which ends any read in progress, and the caller is told it timed
out. At most max_bytes + 1 of the body are read. Standard library only.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

SHUTDOWN_WAIT_S = 0.5  # after the deadline, how long the request may take to unwind


class GetFailed(Exception):
    """The request gave no body: answered says whether the server answered at all (an
    HTTP error status is an answer), reason says why in the system's or server's words."""

    def __init__(self, reason: str, *, answered: bool) -> None:
        self.reason = reason
        self.answered = answered
        super().__init__(reason)


class _Sockets:
    """The sockets a request opened, to shut down at the deadline."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self.closed = False

    def watch(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            self._open.append(sock)
            if self.closed:  # opened after the deadline: shut at once
                _shut(sock)
        return sock

    def shut_all(self) -> None:
        with self._lock:
            self.closed = True
            for sock in self._open:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    # the plain socket's shutdown, also under an SSL socket: it wakes a blocked read
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _opener(sockets: _Sockets) -> urllib.request.OpenerDirector:
    def watched(base: type[http.client.HTTPConnection]) -> Any:
        class Watched(base):  # type: ignore[valid-type,misc]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                create = socket.create_connection
                self._create_connection = lambda *a, **k: sockets.watch(create(*a, **k))

        return Watched

    http_conn = watched(http.client.HTTPConnection)
    https_conn = watched(http.client.HTTPSConnection)

    class HTTP(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> Any:
            return self.do_open(http_conn, req)

    class HTTPS(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> Any:
            return self.do_open(https_conn, req, context=getattr(self, "_context", None))

    class Redirects(urllib.request.HTTPRedirectHandler):
        """Followed to http(s) only: urllib would follow one to ftp://, on a socket this
        module does not watch, past the deadline."""

        def redirect_request(
            self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
        ) -> Any:
            scheme = urllib.parse.urlsplit(newurl).scheme.lower()
            if scheme not in ("http", "https"):
                why = f"redirected to a {scheme or 'schemeless'} URL, which is not followed"
                raise urllib.error.HTTPError(newurl, code, why, headers, fp)
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    return urllib.request.build_opener(HTTP(), HTTPS(), Redirects())


def get_bounded(
    url: str, headers: Mapping[str, str], *, deadline_s: float, max_bytes: int
) -> bytes:
    """The body of a GET of url (at most max_bytes + 1 bytes of it), all of it within
    deadline_s. Raises GetFailed."""
    sockets = _Sockets()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            request = urllib.request.Request(url, headers=dict(headers))
            with _opener(sockets).open(request, timeout=deadline_s) as response:
                outcome["body"] = response.read(max_bytes + 1)
        except BaseException as exc:  # handed to the caller, in its thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="ecocompute-prefetch", daemon=True)
    worker.start()
    worker.join(deadline_s)
    if worker.is_alive():
        sockets.shut_all()
        worker.join(SHUTDOWN_WAIT_S)
        raise GetFailed(f"timed out ({deadline_s:g} s for the whole request)", answered=False)
    if "error" in outcome:
        raise _failure(outcome["error"]) from None
    body: bytes = outcome["body"]
    return body


def _failure(exc: BaseException) -> GetFailed:
    if isinstance(exc, urllib.error.HTTPError):  # before URLError: it is one
        exc.close()
        return GetFailed(f"HTTP {exc.code} {exc.reason}", answered=True)
    if isinstance(exc, urllib.error.URLError):
        return GetFailed(_reason(exc.reason), answered=False)
    if isinstance(exc, (OSError, http.client.HTTPException, ValueError)):
        return GetFailed(_reason(exc), answered=False)
    raise exc  # a bug, or an interrupt: not a network problem


def _reason(exc: object) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return "timed out"
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return str(text)
