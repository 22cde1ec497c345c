"""History search within one session takes a plan by the session's size on large files
(sqlmem.sqlite.stores.history_search): filter-then-rank for a small session, the exact statement
for a large one. The plan must answer as the exact statement does, so the twin agreement
machine runs again with it forced on every search, on files of any size.

`RARE_SHARE = 1.0` makes every word "rare", so each document count is taken exactly (on a
real large file a common word's count comes from the vocabulary, which may be a little
stale: scores then differ slightly, by design, as the "any" shortcut's do).
"""

from __future__ import annotations

from typing import Any, ClassVar

from test_history_stateful import HistoryAgreement, _settings

from sqlmem.sqlite.stores import history_search

_PLAN = {"PLAN_BELOW": 1, "RARE_SHARE": 1.0}


class _Forced(HistoryAgreement):
    forced: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        super().__init__()
        self._saved = {name: getattr(history_search, name) for name in self.forced}
        for name, value in self.forced.items():
            setattr(history_search, name, value)

    def teardown(self) -> None:
        for name, value in self._saved.items():
            setattr(history_search, name, value)
        super().teardown()


class FilterFirstAgreement(_Forced):
    forced: ClassVar[dict[str, Any]] = {**_PLAN, "SMALL_SESSION": 2**62}


TestFilterFirstAgreement = FilterFirstAgreement.TestCase
TestFilterFirstAgreement.settings = _settings
