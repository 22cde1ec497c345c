"""Rendering the facts relevant to a query as a block for the next prompt.

The block is Markdown an LLM reads well and a person can eyeball in a log:

    ## Relevant Memory

    - The user's dog is called Rex
    - The user lives in Lisbon

Facts go in the store's rank order. The budget is measured on the whole rendered block
(header included) with the estimator, because a real tokenizer is not additive across
pieces. Filling stops at the first fact that would overflow: a later, smaller fact is not
tried, so a less relevant fact never displaces a more relevant one from the prompt.
"""

from __future__ import annotations

from ..errors import InvalidArgumentError
from ..protocols import FactStore
from .tokens import Estimator, estimate_tokens

__all__ = ["MEMORY_HEADER", "inject_memory"]

MEMORY_HEADER = "## Relevant Memory\n\n"


def _bullet(content: str) -> str:
    """One list item. Line breaks (any `str.splitlines` separator) become single spaces,
    and blank lines vanish, so a multi-line fact cannot end the list or start a new
    heading in the middle of the block."""
    lines = (line.strip() for line in content.splitlines())
    return "- " + " ".join(line for line in lines if line) + "\n"


def inject_memory(
    store: FactStore,
    query: str,
    *,
    max_facts: int = 10,
    max_tokens: int = 2000,
    estimator: Estimator | None = None,
) -> str:
    """The memory block for `query`, or `""` when nothing matches or nothing fits.

    `""` also for a blank query and for `max_facts` or `max_tokens` of 0 or less, so the
    result can be concatenated into a prompt unconditionally.
    """
    if not isinstance(query, str):
        raise InvalidArgumentError(f"query must be a str, not {type(query).__name__}")
    for name, value in (("max_facts", max_facts), ("max_tokens", max_tokens)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidArgumentError(f"{name} must be an int, not {type(value).__name__}")
    if estimator is not None and not callable(estimator):
        raise InvalidArgumentError("estimator must be callable or None")
    if max_facts <= 0 or max_tokens <= 0 or not query.strip():
        return ""
    estimate = estimator or estimate_tokens
    block = MEMORY_HEADER
    used = 0
    for fact in store.search(query, top_k=max_facts):
        candidate = block + _bullet(fact.content)
        if estimate(candidate) > max_tokens:
            break
        block = candidate
        used += 1
    return block if used else ""
