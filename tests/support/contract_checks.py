"""Checks of our own that Schemathesis runs beside all of its own in the API contract test
(``tests/integration/test_api_contract.py``, loaded through ``schemathesis.toml``'s ``hooks``).

Each one is the strict half of a setting in that file that widens a built-in check:

- ``not_a_server_error`` lets 503 pass, because admission refuses with 503 by design (an
  ``x-gateway-deadline-ms`` of 1 cannot be met); ``refusals_are_admissions`` then requires
  that every 503 be one of admission's refusals, OpenAI-shaped, with ``Retry-After``.
- ``positive_data_acceptance`` lets 400 pass on vLLM's own routes (tokenize, detokenize,
  rerank, score), whose bodies the gateway relays unchecked but for ``model``;
  ``relayed_refusals_are_the_backends`` then requires that such a 400 to a schema-valid
  request come from a backend (``x-gateway-backend`` set), never from the gateway.
"""

from __future__ import annotations

from typing import Any

import schemathesis

# Admission's refusals (gateway/admission/controller.py), as in tests/integration/test_fuzz.py.
REFUSALS = {"deadline_unmeetable", "objective_unmeetable", "queue_full", "long_queue_full"}
PASS_THROUGH = {"/tokenize", "/detokenize", "/v1/rerank", "/v1/score"}


@schemathesis.check
def refusals_are_admissions(ctx: Any, response: Any, case: Any) -> bool | None:
    if response.status_code != 503:
        return None
    error = response.json()["error"]
    assert error["code"] in REFUSALS, f"503 that is no admission refusal: {error}"
    assert error["type"] == "service_unavailable", error
    assert "retry-after" in response.headers, "503 without Retry-After"
    return None


@schemathesis.check
def relayed_refusals_are_the_backends(ctx: Any, response: Any, case: Any) -> bool | None:
    meta = case.meta
    if response.status_code != 400 or case.operation.path not in PASS_THROUGH or meta is None:
        return None
    if meta.generation.mode.is_positive:
        assert "x-gateway-backend" in response.headers, (
            f"the gateway refused a schema-valid request: {response.text[:300]}"
        )
    return None
