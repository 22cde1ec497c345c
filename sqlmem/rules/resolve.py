"""Who decides that a fact without a key replaces another: the rule every store applies to
the answer of the `Resolver` (declared with the protocols) that `remember(fact,
resolver=...)` takes.

A resolver runs before the write, outside the write lock (it may call a model): it
returns the id of a live fact the new one supersedes, or None. Whatever goes wrong in it
(an exception, an answer that names no live fact) stores the fact as new: a resolver can
make memory lose a fact's currency, never a fact.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..errors import InvalidArgumentError
from ..protocols import Resolver
from .chains import check_key
from .filters import is_fact_id

if TYPE_CHECKING:
    from ..protocols import FactStore
    from ..records import Fact

__all__ = ["Resolver", "check_history_args", "resolve_supersession"]

_log = logging.getLogger("sqlmem.resolver")


def resolve_supersession(store: FactStore, resolver: object, fact: Fact) -> str | None:
    """The resolver's answer when it names a live fact of `store`; None otherwise (a
    failure is logged, never raised: the fact is then stored as new)."""
    if not isinstance(resolver, Resolver):
        raise InvalidArgumentError("resolver must have a resolve(store, fact) method")
    try:
        old_id = resolver.resolve(store, fact)
    except Exception as exc:  # the model failed: store the fact as new
        _log.warning("resolver failed (%s: %s); the fact is stored as new", type(exc).__name__, exc)
        return None
    if not isinstance(old_id, str) or not old_id or old_id == fact.id:
        return None
    old = store.get(old_id)
    if old is None or old.superseded_by is not None:
        return None
    return old_id


def check_history_args(key: object, fact_id: object) -> str | None:
    """`history(key=... | id=...)`: exactly one of them; returns the key (None: by id)."""
    if (key is None) == (fact_id is None):
        raise InvalidArgumentError("history takes exactly one of key= and id=")
    if key is not None:
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError("key must be a non-empty string")
        try:
            return check_key(key)
        except ValueError as exc:
            raise InvalidArgumentError(str(exc)) from None
    if not isinstance(fact_id, str):
        raise InvalidArgumentError(f"fact ids are strings, got {type(fact_id).__name__}")
    return None


def no_such_fact(fact_id: str | None) -> bool:
    """True for an id no fact can have (a lone surrogate, too long): `history(id=...)` is
    then [] at once, where a driver would fail to encode it."""
    return fact_id is not None and not is_fact_id(fact_id)
