"""The policy's ``cluster`` section: off by default, validated field by field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.schema import Cluster


def test_off_by_default() -> None:
    assert Cluster().enabled is False


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"redis_url": "http://127.0.0.1:6379"}, "redis://"),
        ({"lease_ttl_s": 2.0, "renew_interval_s": 1.5}, "half of lease_ttl_s"),
        ({"op_timeout_s": 0}, "greater than 0"),
        ({"unknown": 1}, "Extra inputs"),
    ],
)
def test_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Cluster(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "url", ["redis://127.0.0.1:6379/0", "rediss://cache:6380", "unix:///run/redis.sock"]
)
def test_accepted_urls(url: str) -> None:
    assert Cluster(redis_url=url).redis_url == url
