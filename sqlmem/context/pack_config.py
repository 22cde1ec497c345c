"""`PackConfig`: how a memory pack picks and budgets memory items.

Validated once when built, like `StoreConfig`: a bad value raises InvalidArgumentError
naming the field, never a bare pydantic error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..config import validation_message
from ..errors import InvalidArgumentError

__all__ = ["LAYER_ORDER", "WEIGHT_NAMES", "PackConfig"]

Layer = Literal["semantic", "procedural", "episodic"]

#: The order of a pack's sections: stable facts first, then how-tos, then recent events.
LAYER_ORDER: tuple[Layer, ...] = ("semantic", "procedural", "episodic")

#: What a candidate's score weighs.
WEIGHT_NAMES = ("relevance", "salience", "confidence", "recency")


def _default_top_k() -> dict[Layer, int]:
    return {"semantic": 6, "procedural": 4, "episodic": 8}


def _default_half_life() -> dict[Layer, float]:
    return {"episodic": 30.0}


def _default_weights() -> dict[str, float]:
    return {"relevance": 0.6, "salience": 0.2, "confidence": 0.1, "recency": 0.1}


class PackConfig(BaseModel):
    """The memory-pack settings: what is kept per layer and how the budget is spent.

    `top_k`: candidates kept per layer (a layer missing or 0 is skipped); each store is
    asked for `4 * top_k` per layer. `soft_budget_tokens` fills freely; past it only items
    scoring at least `overflow_min_score` get in, up to `max_budget_tokens`.
    `half_life_days`: layers whose items decay with age (by `updated_at`); others do not.
    `weights` of relevance, salience, confidence and recency, normalised by their sum.
    `min_confidence` drops candidates below it. `estimator` counts tokens (None: the
    default `estimate_tokens`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    top_k: dict[Layer, int] = Field(default_factory=_default_top_k)
    soft_budget_tokens: int = Field(default=1800, ge=0)
    max_budget_tokens: int = Field(default=3500, ge=0)
    overflow_min_score: float = Field(default=0.75, ge=0.0, le=1.0, allow_inf_nan=False)
    half_life_days: dict[Layer, float] = Field(default_factory=_default_half_life)
    weights: dict[str, float] = Field(default_factory=_default_weights)
    min_confidence: float = Field(default=0.0, ge=0.0, le=1.0, allow_inf_nan=False)
    estimator: Callable[[str], int] | None = None

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InvalidArgumentError(validation_message(exc, "PackConfig")) from None

    @field_validator("top_k")
    @classmethod
    def _counts(cls, value: dict[Layer, int]) -> dict[Layer, int]:
        for layer, count in value.items():
            if isinstance(count, bool) or count < 0 or count > 10_000:
                raise ValueError(f"{layer}: must be an int in [0, 10000], got {count!r}")
        return value

    @field_validator("half_life_days")
    @classmethod
    def _half_lives(cls, value: dict[Layer, float]) -> dict[Layer, float]:
        for layer, days in value.items():
            if not math.isfinite(days) or days <= 0:
                raise ValueError(f"{layer}: must be a finite number of days > 0, got {days!r}")
        return value

    @field_validator("weights")
    @classmethod
    def _weights(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(WEIGHT_NAMES))
        if unknown:
            raise ValueError(f"unknown weights {unknown}; use {', '.join(WEIGHT_NAMES)}")
        for name, weight in value.items():
            if not math.isfinite(weight) or weight < 0:
                raise ValueError(f"{name}: must be a finite number >= 0, got {weight!r}")
        if not sum(value.values()) > 0:
            raise ValueError("must not all be 0")
        return value

    @model_validator(mode="after")
    def _budgets(self) -> PackConfig:
        if self.max_budget_tokens < self.soft_budget_tokens:
            raise ValueError(
                "max_budget_tokens must be >= soft_budget_tokens "
                f"({self.max_budget_tokens} < {self.soft_budget_tokens})"
            )
        if self.estimator is not None and not callable(self.estimator):
            raise ValueError("estimator must be callable or None")
        return self

    def normalised_weights(self) -> dict[str, float]:
        """Each weight divided by their sum (missing ones are 0)."""
        total = sum(self.weights.values())
        return {name: self.weights.get(name, 0.0) / total for name in WEIGHT_NAMES}
