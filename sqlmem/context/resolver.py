"""`ContradictionResolver`: a model decides whether a new fact without a key replaces one
the memory holds ("moved to Berlin" replaces "lives in Paris").

Passed as `facts.remember(fact, resolver=...)`. Before the write, outside the write lock,
the model sees the new fact and the closest live facts (hybrid search when the store has
an embedder, else mode "any") with their ids, and answers `{"supersedes": "<id>" | null}`.
A named candidate is superseded (as `facts.supersede`). Every failure (the model raised,
a blank or unusable answer, an id that is not a candidate) stores the fact as new: the
resolver never deletes and never loses a fact.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import InvalidArgumentError
from ..protocols import SearchMode, has_vector_search
from .llm_json import ask_json, one_line

if TYPE_CHECKING:
    from ..protocols import FactStore
    from ..records import Fact

__all__ = ["ContradictionResolver"]

_log = logging.getLogger("sqlmem.resolver")

_PROMPT = """You keep an assistant's long-term memory. A new fact is about to be stored.
If it makes one of the stored facts below no longer true (the same thing about the
user changed: a new city, job, diet, preference), answer with that fact's id.
Otherwise (it adds information, or is about something else) answer null.

New fact: {new}

Stored facts:
{candidates}

Answer with one JSON object and nothing else: {{"supersedes": "<id>"}} or {{"supersedes": null}}"""


class ContradictionResolver:
    """Asks `complete(prompt) -> str` which live fact a new fact supersedes."""

    def __init__(self, complete: Callable[[str], str], *, candidates: int = 5) -> None:
        if not callable(complete):
            raise InvalidArgumentError(
                "complete must be a callable taking a prompt and returning text"
            )
        if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
            raise InvalidArgumentError(f"candidates must be an int >= 1, got {candidates!r}")
        self.complete = complete
        self.candidates = candidates

    def closest(self, store: FactStore, fact: Fact) -> list[Fact]:
        """The live facts the model chooses among: hybrid with an embedder, else "any"."""
        mode: SearchMode = "hybrid" if has_vector_search(store) else "any"
        found = store.search(fact.content, top_k=self.candidates, mode=mode, layer=fact.layer)
        return [f for f in found if f.id != fact.id]

    def prompt(self, fact: Fact, candidates: list[Fact]) -> str:
        lines = "\n".join(f"- id {c.id}: {one_line(c.content)}" for c in candidates)
        return _PROMPT.format(new=one_line(fact.content), candidates=lines)

    def resolve(self, store: FactStore, fact: Fact) -> str | None:
        """The id of the candidate `fact` supersedes, or None (any failure: None)."""
        candidates = self.closest(store, fact)
        if not candidates:
            return None
        answer, problem = ask_json(self.complete, self.prompt(fact, candidates))
        if answer is None:
            _log.warning("contradiction check skipped: %s", problem)
            return None
        chosen = answer.get("supersedes")
        ids = {c.id for c in candidates}
        if chosen is None:
            return None
        if not isinstance(chosen, str) or chosen not in ids:
            _log.warning("contradiction check skipped: %r is not a candidate id", chosen)
            return None
        return chosen
