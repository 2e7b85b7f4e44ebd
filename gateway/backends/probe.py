"""One control-plane GET to a backend (health probe, metrics scrape), and its failures told
once.

The GET goes through the request path's own connection pool with the backend's origin, so a
probe reaches the backend exactly as requests do: same root prefix, TLS settings, proxy and
upstream key. A failure is described in words (``ProbeFailed``); what the backend said goes
into it only after the policy's ``Redactor`` (a backend quoting the key it got must not put
it in the gateway's log). ``ProblemLog`` logs a backend's problem when it starts or changes
and once when it clears, never on every probe.
"""

from __future__ import annotations

import asyncio
import logging

from gateway.policy.compile import BackendSpec
from gateway.security.redact import Redactor
from gateway.upstream import ConnectionPool, UpstreamIOError

_MAX_BODY = 4 * 1024 * 1024  # a vLLM /metrics page is far below this
_EXCERPT = 200  # characters of a failing answer's body told in the log


class ProbeFailed(Exception):
    """The backend could not be reached or did not answer 200: ``reason`` says why, stable from
    one probe to the next; ``detail`` is what the backend said (an excerpt of its body)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason + detail)
        self.reason = reason
        self.detail = detail


async def probe_get(
    pool: ConnectionPool, spec: BackendSpec, path: str, timeout_s: float, redactor: Redactor
) -> bytes:
    """The body of a 200 answer to ``GET path``; ``ProbeFailed`` otherwise."""
    origin = spec.origin
    headers = [("accept", "*/*")]
    if spec.api_key is not None:
        headers.append(spec.api_key.authorization())
    url = origin.url(path)
    try:
        async with asyncio.timeout(timeout_s):
            response = await pool.request(
                origin, "GET", path, headers, b"", connect_timeout_s=timeout_s
            )
            body = await response.read(_MAX_BODY)
    except TimeoutError:
        raise ProbeFailed(f"GET {url} timed out after {timeout_s:g} s") from None
    except UpstreamIOError as exc:
        raise ProbeFailed(f"GET {url}: {exc}") from None
    if response.status != 200:
        raise ProbeFailed(f"GET {url} answered {response.status}", _excerpt(body, redactor))
    return body


def _excerpt(body: bytes, redactor: Redactor) -> str:
    text = redactor.clipped(body[:_EXCERPT].decode("utf-8", "replace").strip(), _EXCERPT)
    return f": {text}" if text else ""


class ProblemLog:
    """Logs each backend's current problem when it appears or changes, and its end. Problems
    are told apart by their reason only: a body that differs on every answer (a request id,
    a time) must not make every probe a new problem."""

    def __init__(self, logger: logging.Logger, what: str) -> None:
        self._log = logger
        self._what = what
        self._problems: dict[str, str] = {}

    def note(self, backend: str, problem: ProbeFailed | None) -> None:
        before = self._problems.get(backend)
        if (problem.reason if problem is not None else None) == before:
            return
        if problem is None:
            del self._problems[backend]
            self._log.info("%s of backend %s works again", self._what, backend)
        else:
            self._problems[backend] = problem.reason
            self._log.warning("%s of backend %s fails: %s", self._what, backend, problem)
