"""Deterministic prompt text built to a target length in pseudo-tokens.

Algorithm: filler text is a sequence of pieces, each either a word of at most five letters
preceded by a space (one token for ``loadtests.sim.tokenizer``) or a full stop (one token),
drawn from an injected RNG; so ``count_tokens(filler(rng, n)) == n`` exactly. Templated
texts (FAQ questions, chit-chat, code and maths tasks) fill slots from small word lists.

Parameters: ``FILLER_WORDS`` (vocabulary), ``SENTENCE_END_P`` (chance a piece is a full stop).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

FILLER_WORDS: tuple[str, ...] = (
    "the", "user", "asked", "about", "data", "from", "their", "last", "order", "and",
    "we", "need", "to", "check", "every", "item", "in", "list", "then", "reply",
    "keep", "tone", "calm", "short", "clear", "never", "share", "keys", "with", "other",
    "team", "rules", "apply", "when", "price", "plan", "tier", "quota", "limit", "cost",
    "ship", "store", "city", "route", "time", "zone", "date", "fee", "bill", "card",
)  # fmt: skip

SENTENCE_END_P = 0.08

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


def filler(rng: random.Random, n_tokens: int) -> str:
    """Text of exactly ``n_tokens`` pseudo-tokens (``n_tokens >= 1``)."""
    out: list[str] = []
    for i in range(n_tokens):
        # A full stop never opens the text or follows another one, so it reads like prose.
        if i and out[-1] != "." and rng.random() < SENTENCE_END_P:
            out.append(".")
        else:
            out.append(" " + rng.choice(FILLER_WORDS))
    return "".join(out).lstrip()


def timestamp(offset_s: float) -> str:
    """A wall-clock-looking timestamp ``offset_s`` after a fixed epoch (seeded runs stay equal)."""
    return (EPOCH + timedelta(seconds=offset_s)).isoformat(timespec="milliseconds")


def request_id(rng: random.Random) -> str:
    return f"req-{rng.getrandbits(64):016x}"


_FAQ_VERBS = ("reset", "change", "cancel", "export", "update", "delete", "recover", "verify")
_FAQ_OBJECTS = (
    "my password", "the billing address", "my subscription", "my account data",
    "the payment card", "two-factor login", "my email address", "an old invoice",
    "the team workspace", "my username",
)  # fmt: skip
_FAQ_TEMPLATES = (
    "How do I {x}?",
    "What is the way to {x}?",
    "Can you tell me how to {x}?",
    "I need to {x}. How can I do that?",
    "Please explain the steps to {x}.",
    "What are the steps if I want to {x}?",
    "Is there a quick way to {x}?",
    "Help me {x}, please.",
)


def faq_pool(rng: random.Random, n_questions: int, paraphrases: int) -> list[list[str]]:
    """``n_questions`` distinct questions, each with ``paraphrases`` distinct wordings."""
    topics = [f"{v} {o}" for v in _FAQ_VERBS for o in _FAQ_OBJECTS]
    if n_questions > len(topics):
        raise ValueError(f"at most {len(topics)} FAQ questions")
    if paraphrases > len(_FAQ_TEMPLATES):
        raise ValueError(f"at most {len(_FAQ_TEMPLATES)} paraphrases")
    chosen = rng.sample(topics, n_questions)
    return [[t.format(x=x) for t in rng.sample(_FAQ_TEMPLATES, paraphrases)] for x in chosen]


_CHITCHAT = (
    "Hi! How are you today?",
    "Thanks, that was helpful.",
    "Good morning! Any tip for a rainy day?",
    "Tell me a fun fact about cats.",
    "What's a good name for a goldfish?",
    "Can you say hello in French?",
    "I'm bored. Suggest a quick game.",
    "What colour goes well with navy blue?",
    "Recommend a short book for a train ride.",
    "How do you say thank you in Japanese?",
)


def chitchat(rng: random.Random) -> str:
    return rng.choice(_CHITCHAT)


_CODE_TASKS = (
    "Write a Python function that returns the {n}-th prime using a sieve, then explain "
    "its time complexity step by step and add unit tests for edge cases.",
    "Implement an LRU cache with capacity {n} in Python without functools, explain each "
    "design choice, and analyse the cost of get and put.",
    "Given a list of {n} intervals, write code that merges overlapping ones; reason about "
    "correctness step by step and list the tricky inputs.",
    "Refactor a recursive Fibonacci of depth {n} into an iterative version, prove both "
    "agree, and compare their memory use.",
)
_MATH_TASKS = (
    "A tank fills at {a} litres per minute and drains at {b} litres per minute. Starting "
    "with {n} litres, when is it empty or full at 1000 litres? Show every step.",
    "Prove by induction that the sum of the first {n} odd numbers is {n} squared, then "
    "generalise the argument to arithmetic series.",
    "Solve the system {a}x + {b}y = {n} and {b}x - {a}y = 7, verify the solution, and "
    "explain each elimination step.",
    "How many ways can {n} people sit at a round table if two of them refuse to sit "
    "together? Derive the formula step by step.",
)


def hard_task(rng: random.Random) -> str:
    """A multi-step code or maths prompt with randomised numbers."""
    template = rng.choice(_CODE_TASKS + _MATH_TASKS)
    return template.format(n=rng.randint(5, 500), a=rng.randint(2, 40), b=rng.randint(2, 40))
