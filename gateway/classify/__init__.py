"""Request classification: token counts, length class, context fit and difficulty score.

Pure functions and frozen configs; the pipeline calls ``classify_chat`` (or
``classify_completion``) once per request with a counter built by ``load_token_counter`` when
the policy is compiled, and ``check_context`` per candidate pool.
"""

from gateway.classify.classifier import (
    Classification,
    ClassifyConfig,
    classify_chat,
    classify_completion,
    count_tokens,
    request_features,
    with_model,
)
from gateway.classify.context_fit import ContextFit, check_context
from gateway.classify.difficulty import Difficulty, DifficultyWeights, score_difficulty
from gateway.classify.estimate import EstimateCalibration, EstimateCounter, estimate_tokens
from gateway.classify.features import FEATURE_NAMES, FeatureConfig, Features, extract_features
from gateway.classify.length import LengthClass, LengthThresholds, length_class
from gateway.classify.tokenizer_file import (
    TokenizerJsonCounter,
    TokenizerUnavailable,
    load_token_counter,
)
from gateway.classify.tokens import ChatOverhead, TokenCounter, count_prompt
from gateway.openai.messages import requested_max_tokens

__all__ = [
    "FEATURE_NAMES",
    "ChatOverhead",
    "Classification",
    "ClassifyConfig",
    "ContextFit",
    "Difficulty",
    "DifficultyWeights",
    "EstimateCalibration",
    "EstimateCounter",
    "FeatureConfig",
    "Features",
    "LengthClass",
    "LengthThresholds",
    "TokenCounter",
    "TokenizerJsonCounter",
    "TokenizerUnavailable",
    "check_context",
    "classify_chat",
    "classify_completion",
    "count_prompt",
    "count_tokens",
    "estimate_tokens",
    "extract_features",
    "length_class",
    "load_token_counter",
    "request_features",
    "requested_max_tokens",
    "score_difficulty",
    "with_model",
]
