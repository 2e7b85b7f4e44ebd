"""Whole numbers as JSON Schema counts them: an integer, or a number with no fractional part.

JSON Schema's ``integer`` type admits ``186902.0``, and so does the gateway wherever its
OpenAPI document says ``integer`` (``n``, ``max_tokens``, ``dimensions``, token ids, ...): a
client's integral float is read as that integer, for checks and limits alike, and forwarded
as the client wrote it (vLLM and OpenAI read it as the integer too). Booleans are not
numbers here, and a float with a fractional part is not whole.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator


def whole_number(value: object) -> int | None:
    """``value`` as an integer when it is one (an ``int`` that is no ``bool``, or an integral
    finite ``float``), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _integral(value: object) -> object:
    whole = whole_number(value)
    return value if whole is None else whole


# Marks an ``int`` field of a strict model that also takes integral floats (its JSON Schema
# stays ``{"type": "integer"}``); anything else still fails the strict ``int`` check. Put it
# after a ``Field``'s bounds (``Annotated[int, Field(ge=1), INTEGRAL]``) so that they appear
# in the JSON Schema as ``minimum``/``maximum``.
INTEGRAL = BeforeValidator(_integral)
Whole = Annotated[int, INTEGRAL]
