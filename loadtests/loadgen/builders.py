"""Message builders, one per request-class kind.

Algorithm: a builder is made once per class from the run seed (so pools such as tenant
system prompts and FAQ paraphrases are fixed for the run), then called per request with the
request RNG and scheduled offset. Parameters come from the class (see ``workload``):

- tenant prompts: ``shared_prefix_tokens`` of text common to all tenants, then
  ``tenant_prefix_tokens`` per tenant; the volatile line (timestamp + request id) goes at the
  ``head`` (defeats naive prefix caching) or ``tail``.
- FAQ: question ``k`` (0-based) is picked with weight ``1 / (k + 1) ** zipf_s``; the
  paraphrase is uniform.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loadtests.loadgen import texts
from loadtests.loadgen.workload import (
    ChitChat,
    Faq,
    HardTask,
    RequestClass,
    Synthetic,
    TenantChat,
)


@dataclass(frozen=True, slots=True)
class Prompt:
    messages: list[dict[str, Any]]
    headers: dict[str, str] = field(default_factory=dict)


Builder = Callable[[random.Random, float], Prompt]


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _synthetic(cls: Synthetic) -> Builder:
    def build(rng: random.Random, at_s: float) -> Prompt:
        messages = [_user(texts.filler(rng, cls.prompt_tokens.sample(rng)))]
        if cls.system_prompt:
            messages.insert(0, {"role": "system", "content": cls.system_prompt})
        return Prompt(messages)

    return build


def _tenant_chat(cls: TenantChat, seed: int) -> Builder:
    shared = texts.filler(random.Random(f"{seed}:shared"), cls.shared_prefix_tokens or 1)
    shared = shared if cls.shared_prefix_tokens else ""
    bodies = [
        f"{shared}\nYou are the assistant of tenant {i}. "
        f"{texts.filler(random.Random(f'{seed}:tenant:{i}'), cls.tenant_prefix_tokens)}"
        for i in range(cls.tenants)
    ]

    def build(rng: random.Random, at_s: float) -> Prompt:
        tenant = rng.randrange(cls.tenants)
        volatile = f"Current time: {texts.timestamp(at_s)}. Request id: {texts.request_id(rng)}."
        body = bodies[tenant]
        system = {"head": f"{volatile}\n{body}", "tail": f"{body}\n{volatile}", "none": body}[
            cls.volatile_position
        ]
        session = f"t{tenant}-s{rng.randrange(cls.sessions_per_tenant)}"
        headers = {"x-gateway-session": session}
        if cls.api_key_template:
            headers["authorization"] = "Bearer " + cls.api_key_template.format(tenant=tenant)
        user = _user(texts.filler(rng, cls.user_tokens.sample(rng)))
        return Prompt([{"role": "system", "content": system}, user], headers)

    return build


def _faq(cls: Faq, seed: int) -> Builder:
    pool = texts.faq_pool(random.Random(f"{seed}:faq:{cls.name}"), cls.questions, cls.paraphrases)
    weights = [1.0 / (k + 1) ** cls.zipf_s for k in range(len(pool))]

    def build(rng: random.Random, at_s: float) -> Prompt:
        question = rng.choices(pool, weights=weights, k=1)[0]
        return Prompt([_user(rng.choice(question))])

    return build


def _chitchat(rng: random.Random, at_s: float) -> Prompt:
    return Prompt([_user(texts.chitchat(rng))])


def _hard(rng: random.Random, at_s: float) -> Prompt:
    return Prompt([_user(texts.hard_task(rng))])


def make_builder(cls: RequestClass, seed: int) -> Builder:
    """The builder for one request class under run seed ``seed``."""
    if isinstance(cls, Synthetic):
        return _synthetic(cls)
    if isinstance(cls, TenantChat):
        return _tenant_chat(cls, seed)
    if isinstance(cls, Faq):
        return _faq(cls, seed)
    if isinstance(cls, ChitChat):
        return _chitchat
    if isinstance(cls, HardTask):
        return _hard
    raise TypeError(f"unknown request class {type(cls).__name__}")
