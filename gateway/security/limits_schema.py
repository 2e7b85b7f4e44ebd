"""The policy's input limits (``limits:``) as JSON Schema on the request schemas of the OpenAPI
document: what ``input_limits.py`` refuses, the document forbids, for the policy running now.

Algorithm: a table of rules, one per limit and field, each naming a request schema, a
property, the branch of the property's schema it bounds (the branch of one JSON type, as
pydantic writes a union: ``anyOf`` one branch per type; an array branch also by its items'
type), a keyword and a value. Limits that JSON Schema can state on one value become keywords:
``n`` (``maximum``, the lower of the model's and the policy's), ``max_tokens``,
``max_completion_tokens`` and ``max_output_tokens`` when the policy refuses above its cap
(``maximum``; when it clamps, a note says so and any value is accepted), an embeddings
request's ``dimensions`` (``maximum``), the number of
messages (``maxItems``), a message's string content and a string prompt or ``input``
(``maxLength``), a list of token ids as ``input`` (``maxItems``: an id counts as four
characters). Limits on a sum (a message's text parts and tool calls together, a list of
prompts, a Responses ``input`` with its ``instructions``) cannot be written in JSON Schema;
they are stated in the property's ``description``, as is the cap on a ``prompt`` of vLLM's
own routes (whose schema leaves every field but ``model`` to the backend). Parameters: the
policy's ``InputLimits``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gateway.schema import InputLimits

Schema = dict[str, Any]

# (schema, property) of each field ``limits.max_tokens`` caps.
_TOKEN_FIELDS = (
    ("ChatRequest", "max_tokens"),
    ("ChatRequest", "max_completion_tokens"),
    ("CompletionRequest", "max_tokens"),
    ("ResponsesRequest", "max_output_tokens"),
)


@dataclass(frozen=True, slots=True)
class Bound:
    """One limit as a keyword on one branch of one property."""

    schema: str
    field: str
    branch: str  # the JSON type of the branch it bounds: "integer", "string", "array"
    keyword: str  # "maximum", "maxLength", "maxItems"
    value: int
    items: str | None = None  # an array branch: its items' JSON type ("integer", "array")


@dataclass(frozen=True, slots=True)
class Note:
    """A limit JSON Schema cannot state, told in the property's description."""

    schema: str
    field: str | None  # None: the schema's own description
    text: str


def limited_schemas(schemas: Mapping[str, Schema], limits: InputLimits) -> dict[str, Schema]:
    """A copy of the request schemas (by component name) with the policy's limits on them."""
    out: dict[str, Schema] = copy.deepcopy(dict(schemas))
    for rule in bounds(limits):
        for branch in _branches(out[rule.schema]["properties"][rule.field], rule):
            old = branch.get(rule.keyword)
            branch[rule.keyword] = rule.value if old is None else min(old, rule.value)
    for note in notes(limits):
        schema = out[note.schema]
        prop = schema if note.field is None else schema["properties"][note.field]
        prop["description"] = " ".join(filter(None, (prop.get("description"), note.text)))
    return out


def bounds(limits: InputLimits) -> list[Bound]:
    rules = [Bound(s, "n", "integer", "maximum", limits.max_n) for s in _N_SCHEMAS]
    cap = limits.max_tokens
    if cap is not None and limits.max_tokens_action == "refuse":
        rules += [Bound(s, f, "integer", "maximum", cap) for s, f in _TOKEN_FIELDS]
    if limits.max_dimensions is not None:
        rules.append(
            Bound("EmbeddingsRequest", "dimensions", "integer", "maximum", limits.max_dimensions)
        )
    if limits.max_messages is not None:
        rules.append(Bound("ChatRequest", "messages", "array", "maxItems", limits.max_messages))
    if limits.max_message_chars is not None:
        rules.append(Bound("Message", "content", "string", "maxLength", limits.max_message_chars))
    chars = limits.max_prompt_chars
    if chars is not None:
        for schema, field in _PROMPT_FIELDS:
            rules.append(Bound(schema, field, "string", "maxLength", chars))
        rules.append(
            Bound("EmbeddingsRequest", "input", "array", "maxItems", chars // 4, "integer")
        )
    return rules


_N_SCHEMAS = ("ChatRequest", "CompletionRequest")
_PROMPT_FIELDS = (
    ("CompletionRequest", "prompt"),
    ("EmbeddingsRequest", "input"),
    ("ResponsesRequest", "input"),
)


def notes(limits: InputLimits) -> list[Note]:
    out = []
    cap = limits.max_tokens
    if cap is not None and limits.max_tokens_action == "clamp":
        text = f"Above {cap}, the gateway lowers it to {cap} (the policy's cap)."
        out += [Note(s, f, text) for s, f in _TOKEN_FIELDS]
    if limits.max_message_chars is not None:
        text = (
            f"At most {limits.max_message_chars} characters per message, counting a string "
            "content, the text parts of a list and the message's tool-call names and "
            "arguments together."
        )
        out.append(Note("Message", "content", text))
    chars = limits.max_prompt_chars
    if chars is not None:
        out += [
            Note("CompletionRequest", "prompt", f"At most {chars} characters of text in all."),
            Note(
                "EmbeddingsRequest",
                "input",
                f"At most {chars} characters in all; a token id counts as four.",
            ),
            Note(
                "ResponsesRequest",
                "input",
                f"At most {chars} characters with the instructions and every item's text.",
            ),
            Note("PassThroughRequest", None, f"A text 'prompt' has at most {chars} characters."),
        ]
    return out


def _branches(prop: Schema, rule: Bound) -> Iterator[Schema]:
    for branch in prop.get("anyOf", [prop]):
        if branch.get("type") != rule.branch:
            continue
        if rule.items is not None and branch.get("items", {}).get("type") != rule.items:
            continue
        yield branch
