"""LoadWatcher: between full scrapes, only the backends sent more than they ran are read."""

from __future__ import annotations

from gateway.backends.load_watch import LoadWatcher, fold_load
from gateway.backends.scrape import Load
from gateway.backends.state import BackendState, Health
from gateway.schema import Engine
from tests.unit.gateway.helpers import policy, spec

POLICY = """
backends:
  - {name: a, url: http://127.0.0.1:8001, model: m, pool: small}
models:
  fast: {pool: small}
"""


class _Watcher(LoadWatcher):
    """Records whom it would read instead of reading."""

    read: list[str]

    async def _scrape(self, state: BackendState, timeout_s: float) -> None:
        self.read.append(state.name)


def _state(
    name: str, reads: list[Load], inflight: int, engine: Engine = Engine.VLLM
) -> BackendState:
    state = BackendState(spec(name, engine=engine, max_inflight=64))
    state.inflight = inflight
    for second, load in enumerate(reads):
        fold_load(state, load, float(second))
    return state


async def test_only_backends_sent_more_than_they_ran_are_read_at_once() -> None:
    states = [
        _state("over", [Load(running=3)], 5),  # sent 5, seen running 3: read now
        _state("within", [Load(running=3)], 3),
        _state("probing", [Load(running=3, waiting=1)], 4),  # the probe beyond one full read
        # its batch is confirmed: the first read came with the probe's cap (8) unfilled,
        # the next two a second apart with its cap filled
        _state("known", [Load(running=3, waiting=1)] * 3, 4),
        _state("never-read", [], 9),  # no read yet: the next full scrape
        _state("no-metrics", [Load(running=3)], 5, engine=Engine.OPENAI),
    ]
    down = _state("down", [Load(running=3)], 5)
    down.health = Health.UNHEALTHY
    states.append(down)
    compiled = policy(POLICY)
    watcher = _Watcher(None, lambda: compiled, lambda: states)  # type: ignore[arg-type]
    watcher.read = []
    await watcher.scrape_overflowing()
    assert sorted(watcher.read) == ["over", "probing"]


def _seen(name: str, others: int, known: bool) -> BackendState:
    """A replica read at t=10 with ``others`` requests of other gateways in it (ours: 1)."""
    state = BackendState(spec(name, max_inflight=64), clock=lambda: 10.0)
    state.inflight = 1
    if known:  # its batch of 4 is known: a full read with the probe's cap (8) unfilled,
        # then two with its cap (5) filled, far enough apart
        for second in (4.0, 5.0, 7.0):
            fold_load(state, Load(running=4, waiting=1), second)
    fold_load(state, Load(running=1 + others), 10.0)
    return state


async def test_on_the_shared_tick_replicas_other_gateways_use_are_read_too() -> None:
    states = [
        _seen("alone", 0, known=True),
        _seen("others, batch known", 2, known=True),
        _seen("others, batch not known yet", 2, known=False),
    ]
    compiled = policy(POLICY)
    watcher = _Watcher(None, lambda: compiled, lambda: states)  # type: ignore[arg-type]
    watcher.read = []
    await watcher.scrape_overflowing(shared=True)
    assert sorted(watcher.read) == ["others, batch known", "others, batch not known yet"]
    watcher.read = []
    await watcher.scrape_overflowing(shared=False)  # between shared ticks: none of them
    assert watcher.read == []
