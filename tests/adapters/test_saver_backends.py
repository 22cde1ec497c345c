"""`SqlmemSaver` / `AsyncSqlmemSaver` on PostgreSQL and in memory: the
`langgraph-checkpoint-conformance` suite for both classes and every capability, then the
savers' own tests that take a database (imported from test_langgraph_saver, run here over
each backend)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")

from backends import BACKENDS, open_backend, other_backend_db
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import Capability

from sqlmem.adapters.langgraph import AsyncSqlmemSaver, SqlmemSaver

SAVERS = [SqlmemSaver, AsyncSqlmemSaver]


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest) -> Iterator[Any]:
    yield from other_backend_db(request)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("capability", [c.value for c in Capability])
@pytest.mark.parametrize("cls", SAVERS, ids=lambda c: c.__name__)
async def test_conformance_on_backend(
    cls: type[SqlmemSaver], capability: str, backend: str, request: pytest.FixtureRequest
) -> None:
    opened: list[SqlmemSaver] = []

    async def factory() -> AsyncGenerator[SqlmemSaver, None]:
        saver = cls(open_backend(request, backend))  # a fresh agent / database each time
        opened.append(saver)
        yield saver
        saver.close()

    registered = checkpointer_test(name=f"{cls.__name__}-{backend}-{capability}")(factory)
    report = await validate(registered, capabilities={capability})
    result = report.results[capability]
    assert result.detected, f"{capability} not detected"
    assert result.failures == [], result.failures
    assert result.passed is True and result.tests_passed > 0
    assert opened and not any(s.db.closed for s in opened if backend == "postgres")


# -- the saver's own tests, over each backend ---------------------------------------------------

from test_langgraph_saver import (  # noqa: E402
    test_bad_input_is_refused_clearly,
    test_list_pages_through_a_long_history,
    test_metadata_whole_and_filters_by_dotted_paths,
    test_pending_writes_read_back_in_langgraph_order,
    test_the_saver_shares_the_file_with_the_other_stores,
    test_versions_increase_as_strings,
)

__all__ = [
    "test_bad_input_is_refused_clearly",
    "test_list_pages_through_a_long_history",
    "test_metadata_whole_and_filters_by_dotted_paths",
    "test_pending_writes_read_back_in_langgraph_order",
    "test_the_saver_shares_the_file_with_the_other_stores",
    "test_versions_increase_as_strings",
]
