"""The classify stage: token count, length class and difficulty of one request.

Composes the pieces of this package in a fixed order: count the prompt's tokens with the
configured ``TokenCounter`` (template overhead included), derive the length class, extract
the features of the last user message, and score them: with the policy's learned text model
(``text_model.py``, which also reads the message's words, and its embedding when given one)
or else the heuristic (``difficulty.py``). Pure: the same request, counter, config and
embedding always give the same ``Classification``. Parameters live in ``ClassifyConfig``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from gateway.classify.difficulty import Difficulty, DifficultyWeights, score_difficulty
from gateway.classify.estimate import EstimateCounter
from gateway.classify.features import (
    FeatureConfig,
    Features,
    extract_features,
    scan,
    scanned_features,
)
from gateway.classify.length import LengthClass, LengthThresholds, length_class
from gateway.classify.model import DifficultyModel, Vector
from gateway.classify.scanning import Scan
from gateway.classify.text_model import TextModel
from gateway.classify.text_terms import same_window
from gateway.classify.tokens import TokenCounter, count_prompt
from gateway.classify.vector_use import VectorUse
from gateway.openai.messages import Message, chat_shape

_ESTIMATE = EstimateCounter()
_FEATURES = FeatureConfig()


@dataclass(frozen=True, slots=True)
class ClassifyConfig:
    """Every parameter of the classify stage (one per policy)."""

    length: LengthThresholds = field(default_factory=LengthThresholds)
    features: FeatureConfig = field(default_factory=FeatureConfig)
    weights: DifficultyWeights = field(default_factory=DifficultyWeights)
    # The learned model (classify.model), when on: the text model (default) or the
    # embedding-only model of a format-1 weights file.
    model: TextModel | DifficultyModel | None = None
    vector_use: VectorUse = VectorUse.NONE  # whether the score reads the request's embedding


@dataclass(frozen=True, slots=True)
class Classification:
    """What the classify stage learned about a request."""

    prompt_tokens: int
    tokens_exact: bool
    length: LengthClass
    features: Features
    difficulty: Difficulty

    @property
    def hard(self) -> bool:
        return self.difficulty.hard

    def reason(self, top: int = 2) -> str:
        """Compact, header-safe summary, e.g. ``len=short;diff=0.83;top=math+code;by=model``."""
        text = f"len={self.length.value};diff={self.difficulty.score:.2f}"
        reasons = self.difficulty.reasons(top)
        text += ";top=" + "+".join(reasons) if reasons else ""
        return text + (f";by={self.difficulty.source}" if self.difficulty.source else "")


def classify_chat(
    messages: Sequence[Message],
    *,
    max_tokens: int | None,
    counter: TokenCounter = _ESTIMATE,
    config: ClassifyConfig = ClassifyConfig(),
    vector: Vector | None = None,
) -> Classification:
    """Classify a ``/v1/chat/completions`` request from its ``messages`` (``vector``: its
    embedding, for a text model with an embedding part)."""
    shape = chat_shape(messages)
    tokens = counter.count_messages(messages)
    window = scan(shape.ask, config.features)
    features = scanned_features(
        window,
        prompt_tokens=tokens,
        max_tokens=max_tokens,
        user_turns=shape.user_turns,
        config=config.features,
    )
    return _classification(tokens, counter.exact, features, config, shape.ask, window, vector)


def count_tokens(
    messages: Sequence[Message] | None, prompt: object = None, counter: TokenCounter = _ESTIMATE
) -> tuple[int, bool]:
    """The prompt tokens ``classify_chat`` (``messages``) or ``classify_completion``
    (``prompt``) count, and whether exactly, without the features and the score: all that a
    request for a named model needs (its context check)."""
    tokens = count_prompt(counter, prompt) if messages is None else counter.count_messages(messages)
    return tokens, counter.exact


def classify_completion(
    prompt: object,
    *,
    max_tokens: int | None,
    counter: TokenCounter = _ESTIMATE,
    config: ClassifyConfig = ClassifyConfig(),
    vector: Vector | None = None,
) -> Classification:
    """Classify a legacy ``/v1/completions`` request from its ``prompt``."""
    tokens = count_prompt(counter, prompt)
    ask = prompt if isinstance(prompt, str) else ""
    window = scan(ask, config.features)
    features = scanned_features(
        window, prompt_tokens=tokens, max_tokens=max_tokens, user_turns=1, config=config.features
    )
    return _classification(tokens, counter.exact, features, config, ask, window, vector)


def with_model(
    classes: Classification, config: ClassifyConfig, vector: Vector | None
) -> Classification:
    """``classes`` scored by the embedding-only model (its heuristic fallback without
    ``vector``); unchanged when the policy has no such model (a text model scores in
    ``classify_chat`` and ``classify_completion``)."""
    model = config.model
    if not isinstance(model, DifficultyModel):
        return classes
    threshold = config.weights.threshold
    if vector is None:
        return replace(classes, difficulty=model.fallback(classes.difficulty, threshold))
    return replace(classes, difficulty=model.score(classes.features, vector, threshold))


def request_features(
    messages: Sequence[Message],
    *,
    max_tokens: int | None = None,
    counter: TokenCounter = _ESTIMATE,
    config: FeatureConfig = _FEATURES,
) -> Features:
    """Only the features of a chat request (for fitting and evaluation)."""
    shape = chat_shape(messages)
    return extract_features(
        shape.ask,
        prompt_tokens=counter.count_messages(messages),
        max_tokens=max_tokens,
        user_turns=shape.user_turns,
        config=config,
    )


def _classification(
    tokens: int,
    exact: bool,
    features: Features,
    config: ClassifyConfig,
    ask: str,
    window: Scan,
    vector: Vector | None,
) -> Classification:
    model = config.model
    if isinstance(model, TextModel):
        # The model reads the features' word split when both read the same window.
        split = window.whole if same_window(config.features) else None
        threshold = config.weights.threshold
        difficulty = model.score(ask, features, threshold, vector, split)
    else:
        difficulty = score_difficulty(features, config.weights)
    return Classification(
        prompt_tokens=tokens,
        tokens_exact=exact,
        length=length_class(tokens, config.length),
        features=features,
        difficulty=difficulty,
    )
