"""The first_token, streaming and non_streaming phases: sequential trials on one gateway.

A trial sends the phase's request, waits until it is in the phase (streaming: the first event
with content has been read), records ``t0`` and closes the socket; the delay runs from ``t0``
until the upstream saw the departure, bounded by ``bound_s``. A phase stops early after
``max_misses`` undetected trials.
"""

from __future__ import annotations

import argparse
import time

from loadtests.cancellation.raw_client import peek_event, read_first_content, send
from loadtests.cancellation.trial import Headers, PhaseRun, Trial
from loadtests.cancellation.upstreams import Target


def one_trial(
    gateway: tuple[str, int], target: Target, phase: str, bound_s: float, headers: Headers = ()
) -> Trial:
    target.start_trial(phase)
    sock = send(*gateway, target.body(phase), headers)
    saw_event: bool | None = None
    try:
        if phase == "streaming":
            read_first_content(sock)
        else:
            target.wait_in_phase(phase)
            if phase == "first_token":
                saw_event = peek_event(sock)
        t0 = time.monotonic()
    finally:
        sock.close()
    trial = target.wait_seen(phase, bound_s)
    trial.saw_event = saw_event
    if trial.delay_s is not None:
        trial.delay_s -= t0
    target.settle(trial)
    return trial


def run_phase(
    gateway: tuple[str, int],
    target: Target,
    phase: str,
    args: argparse.Namespace,
    headers: Headers = (),
) -> PhaseRun:
    """``args.trials`` sequential trials (``args.bound_s``, ``args.max_misses``)."""
    run = PhaseRun(target.name, phase)
    began = time.monotonic()
    misses = 0
    for _ in range(args.trials):
        trial = one_trial(gateway, target, phase, args.bound_s, headers)
        run.trials.append(trial)
        misses += trial.delay_s is None
        if misses >= args.max_misses:
            run.stopped_early = True
            break
    run.seconds = time.monotonic() - began
    return run
