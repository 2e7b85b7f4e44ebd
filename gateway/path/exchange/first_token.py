"""Hold a stream's response head until its first token: until then the request can move.

Algorithm: once the replica's 200 head came, its event stream is read here, before anything
goes to the client, until the first event that carries a token (a role-only first chunk is
not one), the end of an answer with no token at all, or a failure. The chunks read are kept
(``Primed.held``) and relayed first, unchanged, once the client's response starts; so the
client's head leaves with its first token, never before, and the time until it sees the
head is the first token's. Everything that goes wrong before that point (a connection cut,
an error event, an invalid stream, a stall, the replica taken back) leaves the client with
nothing seen: a failure is raised as a retryable ``ServiceUnavailable`` (503 with
Retry-After if nothing else can serve it) and the dispatch stage tries another replica
(``dispatch.py``); a stall or a take-back moves it within the first-token race
(``race.py``). A client's 4xx from the backend (an error event with a 4xx status) stays the
client's answer.

Per-event work here is the relay's own (``events.EventRelay``, without the cache's capture:
the relay re-reads the held chunks with it), for the few events before the first token only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gateway.admission.retry_after import retry_after_s
from gateway.errors import GatewayError, ServiceUnavailable
from gateway.path.exchange.events import EventRelay
from gateway.path.exchange.lease import Lease
from gateway.upstream import UpstreamIOError, UpstreamResponse
from gateway.upstream import failures as upstream_errors

# Codes of failures before the first token that are the replica's, not the request's.
STALL = "upstream_stall"
TAKEN_BACK = "taken_back"


@dataclass(slots=True)
class Primed:
    """An attempt at its first token: what the relay starts from."""

    lease: Lease
    response: UpstreamResponse
    held: list[bytes] = field(default_factory=list)  # upstream chunks read so far
    first_token_at: float | None = None  # None: not a stream, or an answer without a token


def before_first_token(error: GatewayError, backend: str) -> GatewayError:
    """A failure before the first token, as the client would get it if nothing else can
    serve the request: a replica's fault is a retryable 503 (the request can move); a
    refusal of the request itself (a 4xx) stays as it is."""
    if error.http_status() < 500 or (isinstance(error, ServiceUnavailable) and error.retryable):
        return error
    return ServiceUnavailable(
        f"Backend '{backend}' failed before the first token ({error.message}); "
        "no other replica could serve the request.",
        code=error.code or "upstream_error",
        retry_after_s=retry_after_s(1.0),
        retryable=True,
    )


async def read_first_token(
    lease: Lease, response: UpstreamResponse, clock: Callable[[], float]
) -> Primed:
    """Read ``response`` up to its first token; raises a ``GatewayError`` (see the module's
    docstring) and closes the response when it fails. Bounded by the caller (the race's
    stall limit, the pool's timeouts)."""
    primed = Primed(lease, response)
    events = EventRelay(lease, None)
    backend = lease.backend.name
    try:
        while True:
            chunk = await response.next_chunk()
            if chunk is not None:
                primed.held.append(chunk)
            events.feed(chunk)
            if events.token_seen:
                primed.first_token_at = clock()
                lease.first_token()
                return primed
            if events.error is not None:
                raise events.error
            if events.done or chunk is None:
                return primed  # an answer without a token (an empty completion)
    except UpstreamIOError as exc:
        response.close()
        raise before_first_token(upstream_errors.from_exception(exc, backend), backend) from None
    except GatewayError as exc:
        response.close()
        raise before_first_token(exc, backend) from None
    except BaseException:
        response.close()
        raise
