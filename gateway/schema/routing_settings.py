"""Policy schema: tier rules that route requests to pools, and the classifier they use."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gateway.schema.strict import Name, _Strict

LengthName = Literal["short", "medium", "long"]


PriorityName = Literal["critical", "standard", "sheddable"]


class RuleWhen(_Strict):
    """Conditions of a tier rule; all given ones must hold (none given: always)."""

    length: list[LengthName] | None = Field(
        default=None, description="Length classes that match: short, medium, long"
    )
    difficulty_at_least: float | None = Field(
        description="Matches a difficulty score at least this", default=None, ge=0, le=1
    )
    difficulty_below: float | None = Field(
        description="Matches a difficulty score below this", default=None, ge=0, le=1
    )
    priority: list[PriorityName] | None = Field(
        default=None, description="Priorities that match: critical, standard, sheddable"
    )
    model: list[Name] | None = Field(default=None, description="Public model names asked for")
    tenant: list[Name] | None = Field(default=None, description="Tenants asking")


class Rule(_Strict):
    """A tier rule for ``route: auto`` models: the first that matches picks the pool."""

    name: Name = Field(description="Name of the rule, shown in x-gateway-route-reason")
    when: RuleWhen = Field(
        default=RuleWhen(),
        description="Conditions, all of which must hold (an empty when always matches)",
    )
    pool: Name = Field(description="The pool a matching request goes to")


class AutoSplit(_Strict):
    """``route: auto`` by difficulty: after the tier rules, the hardest requests go to the
    large pool and the rest to the small one."""

    enabled: bool | None = Field(
        default=None,
        description="Default: on when there are no tier rules and two pools whose served"
        " models' names state different sizes (1.5B, 70B); naming a pool turns it on",
    )
    small: Name | None = Field(
        default=None, description="Default: the smaller model's pool, else routing.default_pool"
    )
    large: Name | None = Field(
        default=None, description="Default: the bigger model's pool, else the other of two"
    )
    large_share: float = Field(
        default=0.3,
        gt=0,
        lt=1,
        description="Share of requests for the large pool, on the difficulty model's training"
        " data (the score threshold is derived from it)",
    )
    threshold: float | None = Field(
        default=None, ge=0, le=1, description="A difficulty score threshold instead of the share"
    )


class Routing(_Strict):
    """How ``route: auto`` models choose a pool: tier rules, the difficulty split, then the
    default pool."""

    default_pool: Name | None = Field(
        default=None,
        description="Pool for auto-routed requests no rule matched (default: the first backend's "
        "pool)",
    )
    rules: list[Rule] = Field(
        description="Tier rules for `route: auto` models; the first match wins",
        default_factory=list,
    )
    auto: AutoSplit = Field(
        default=AutoSplit(), description="The difficulty split, after the rules"
    )


class Knn(_Strict):
    """A kNN vote over embedded, labelled exemplars, blended into the difficulty score."""

    enabled: bool = Field(default=False, description="Turn the vote on (loads the embedding model)")
    exemplars: str = Field(
        default="policies/exemplars/difficulty.jsonl",
        description="JSON lines of {prompt, label: easy|hard}; relative to the working directory",
    )
    k: int = Field(description="Exemplars that vote", default=7, ge=1, le=100)
    weight: float = Field(default=0.3, ge=0, le=1, description="Share of the vote in the score")


class DifficultyModelSettings(_Strict):
    """The learned difficulty model that scores ``route: auto`` requests: weights of the
    request's words and word pairs and of the ten cheap features, per prompt format (no
    embedding needed); optionally, its embedding part over the request's sentence embedding."""

    enabled: bool = Field(
        default=True, description="false: the cue-word heuristic scores requests instead"
    )
    embedding: bool = Field(
        default=False,
        description="Score with the model's embedding part instead (the request's MiniLM"
        " embedding: the semantic cache's, else one made for routing; loads the embedding"
        " model), the text parts' score when no embedding is ready in time",
    )
    weights: str | None = Field(
        default=None,
        description="Weights file written by `latency-gateway fit-router`, relative to the"
        " working directory; default: the bundled weights (fitted on the training halves of"
        " RouteLLM's MMLU and GSM8K outcomes)",
    )


class Classify(_Strict):
    """Length classes and the difficulty threshold of the classify stage."""

    medium_from: int = Field(default=512, ge=1, description="Prompt tokens where medium starts")
    long_from: int = Field(default=4096, ge=2, description="Prompt tokens where long starts")
    difficulty_threshold: float = Field(
        description="Score at which a request counts as hard", default=0.5, gt=0, lt=1
    )
    knn: Knn = Field(
        default=Knn(),
        description="kNN vote over embedded exemplars, blended into the difficulty score",
    )
    model: DifficultyModelSettings = Field(
        default=DifficultyModelSettings(),
        description="The learned difficulty model over the request's embedding",
    )

    @model_validator(mode="after")
    def _ordered(self) -> Classify:
        if self.medium_from >= self.long_from:
            raise ValueError("medium_from must be below long_from")
        return self
