"""Judge cost: a price table (USD per 1,000 input / output tokens), the cost of a call, a
budget, and the dry-run estimate of a judging pass.

The built-in prices are the providers' public list prices as read on 2026-11 for a few common
judge models; they change, so pass your own table (``configure(prices=...)``) to be exact.
Local models cost 0. A model with no price has an unknown cost (``None``), and a budget
(``max_cost``) cannot be enforced for it: that is an error, not a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

Price = tuple[float, float]  # (input USD per 1k tokens, output USD per 1k tokens)

DEFAULT_PRICES: dict[str, Price] = {
    "openai:gpt-4o-mini": (0.00015, 0.0006),
    "openai:gpt-4o": (0.0025, 0.01),
    "openai:gpt-4.1-mini": (0.0004, 0.0016),
    "openai:gpt-4.1": (0.002, 0.008),
    "anthropic:claude-3-5-haiku-latest": (0.0008, 0.004),
    "anthropic:claude-sonnet-4-0": (0.003, 0.015),
}

CHARS_PER_TOKEN = 4.0  # rough English average, used only by the dry-run estimate


def price_for(model: str, prices: dict[str, Price] | None = None) -> Price | None:
    """The price of judge ``model`` (its pinned id, e.g. ``openai:gpt-4o-mini``); the table
    may also name the bare model (``gpt-4o-mini``). Local models are free."""
    table = {**DEFAULT_PRICES, **(prices or {})}
    if model in table:
        return table[model]
    bare = model.split("#", 1)[-1].split(":", 1)[-1]
    if bare in table:
        return table[bare]
    if model.startswith("local:"):
        return (0.0, 0.0)
    return None


def call_cost(
    model: str,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    prices: dict[str, Price] | None = None,
) -> float | None:
    price = price_for(model, prices)
    if price is None or prompt_tokens is None or completion_tokens is None:
        return None
    return prompt_tokens / 1000.0 * price[0] + completion_tokens / 1000.0 * price[1]


class BudgetReachedError(Exception):
    pass


class Budget:
    """Spending so far against ``max_cost`` (USD; None = no limit)."""

    def __init__(self, max_cost: float | None = None) -> None:
        self.max_cost = max_cost
        self.spent = 0.0
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def check(self) -> None:
        if self.max_cost is not None and self.spent >= self.max_cost:
            raise BudgetReachedError(f"budget reached ({self.spent:.4f} of {self.max_cost} USD)")

    def add(self, cost: float | None, prompt_tokens: int | None, completion: int | None) -> None:
        self.calls += 1
        self.spent += cost or 0.0
        self.prompt_tokens += prompt_tokens or 0
        self.completion_tokens += completion or 0


@dataclass
class Estimate:
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None when the model has no price
    cases: int = 0  # the cases estimated

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "cases": self.cases,
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
        }


def tokens_of(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1
