"""Shared pieces of the policy schema: the strict base model and common field types."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

Name = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][\w.\-/:]*$")]


PositiveSeconds = Annotated[float, Field(gt=0, le=86_400)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
