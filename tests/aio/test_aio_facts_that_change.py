"""Facts that change, awaited on every backend: supersede, history, as_of and forget."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from pathlib import Path

import pytest
from targets import BACKENDS, Target, backend_target

import sqlmem
import sqlmem.aio
from sqlmem import Fact, ForgetReport, Message


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    return backend_target(request, tmp_path)


def test_awaited_chains_and_forget(target: Target) -> None:
    async def main() -> None:
        adb = await sqlmem.aio.open(target.target, agent_id=target.agent_id)
        async with adb:
            day = datetime(2024, 1, 1, tzinfo=timezone.utc)
            old = await adb.facts.remember(Fact(content="lives in Paris", key="k", valid_from=day))
            new = await adb.facts.supersede(old, Fact(content="lives in Oslo"))
            chain = await adb.facts.history(key="k")
            assert [f.id for f in chain] == [old, new]
            then = await adb.facts.search("lives", as_of=day)
            assert [f.id for f in then] == [old]
            await adb.history.append("s", Message(role="user", content="hi"))
            await adb.facts.remember(Fact(content="said hi", references=["msg:s#1"]))
            assert await adb.forget("s") == ForgetReport(messages=1, facts=1)

    asyncio.run(main())
