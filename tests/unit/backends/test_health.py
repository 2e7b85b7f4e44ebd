"""record_probe: eject and restore by streaks of probe results."""

from __future__ import annotations

import pytest

from gateway.backends.health import record_probe
from gateway.backends.state import BackendState, Health
from gateway.schema import Health as HealthSettings
from tests.unit.gateway.helpers import spec

H, U, X = Health.HEALTHY, Health.UNKNOWN, Health.UNHEALTHY
T, F = True, False

# id -> (failures_to_eject, successes_to_restore, probes, health after each probe)
SEQUENCES: dict[str, tuple[int, int, list[bool], list[Health]]] = {
    "unknown to healthy on first success": (2, 3, [T], [H]),
    "unknown to unhealthy on first failure": (3, 1, [F], [X]),
    "healthy until N consecutive failures": (3, 1, [T, F, F, F], [H, H, H, X]),
    "a success resets the failure streak": (3, 1, [T, F, F, T, F, F, F], [H, H, H, H, H, H, X]),
    "N=1 ejects at once": (1, 1, [T, F, T, F], [H, X, H, X]),
    "unhealthy needs M consecutive successes": (1, 3, [F, T, T, T], [X, X, X, H]),
    "a failure resets the success streak": (1, 2, [F, T, F, T, T], [X, X, X, X, H]),
    "successes before ejection do not count": (1, 2, [T, T, F, T, T], [H, H, X, X, H]),
    "failures keep it unhealthy": (2, 1, [F, F, F, F, T], [X, X, X, X, H]),
    "long healthy run": (2, 2, [T] * 5 + [F, F] + [T, T], [H] * 5 + [H, X, X, H]),
}


@pytest.mark.parametrize(
    ("eject", "restore", "probes", "expected"), SEQUENCES.values(), ids=SEQUENCES.keys()
)
def test_probe_sequence(
    eject: int, restore: int, probes: list[bool], expected: list[Health]
) -> None:
    settings = HealthSettings(failures_to_eject=eject, successes_to_restore=restore)
    backend = BackendState(spec("a"))
    assert backend.health is Health.UNKNOWN

    seen = []
    for ok in probes:
        returned = record_probe(backend, ok, settings)
        assert returned is backend.health
        seen.append(returned)

    assert seen == expected


def test_streak_counters() -> None:
    settings = HealthSettings(failures_to_eject=5, successes_to_restore=5)
    backend = BackendState(spec("a"))
    for ok in (T, T, F, F):
        record_probe(backend, ok, settings)
    assert (backend.failures, backend.successes) == (2, 0)
    record_probe(backend, True, settings)
    assert (backend.failures, backend.successes) == (0, 1)
