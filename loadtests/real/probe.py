"""Read a running server's own view of its work: llama.cpp's ``/slots``, and any Prometheus
``/metrics`` text (llama.cpp's, vLLM's or the gateway's) as sums per sample name.

``wait_for`` polls an async check until it holds or ``timeout_s`` passes (a real server
offers no event to wait on); it returns the seconds it took, or raises ``TimeoutError`` with
the last value seen. Parameters: ``poll_s`` between checks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx2 as httpx
from prometheus_client.parser import text_string_to_metric_families

T = TypeVar("T")


async def slots(http: httpx.AsyncClient, url: str) -> list[dict[str, Any]]:
    """llama.cpp's slots (started with ``--slots``): ``is_processing``, ``id_task``, ..."""
    response = await http.get(url + "/slots")
    response.raise_for_status()
    found: list[dict[str, Any]] = response.json()
    return found


async def busy_slots(http: httpx.AsyncClient, url: str) -> int:
    return sum(1 for slot in await slots(http, url) if slot.get("is_processing"))


async def metrics(http: httpx.AsyncClient, url: str) -> dict[str, float]:
    """Every sample of ``url/metrics`` by sample name, summed over labels; also by
    ``name{label="value",...}`` with all its labels (sorted), and by ``name{label="value"}``
    for each single label, summed over the others."""
    response = await http.get(url + "/metrics")
    response.raise_for_status()
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            totals[sample.name] = totals.get(sample.name, 0.0) + float(sample.value)
            for key, value in sample.labels.items():
                one = f'{sample.name}{{{key}="{value}"}}'
                totals[one] = totals.get(one, 0.0) + float(sample.value)
            if len(sample.labels) > 1:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                totals[f"{sample.name}{{{labels}}}"] = float(sample.value)
    return totals


async def wait_for(
    read: Callable[[], Awaitable[T]],
    holds: Callable[[T], bool],
    *,
    timeout_s: float,
    poll_s: float = 0.05,
) -> float:
    """Poll ``read()`` until ``holds`` its value; the seconds that took."""
    start = time.monotonic()
    while True:
        value = await read()
        if holds(value):
            return time.monotonic() - start
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"still {value!r} after {timeout_s:.1f} s")
        await asyncio.sleep(poll_s)
