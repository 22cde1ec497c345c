"""SPEC 8 (0.2): `MemoryFactory.resolve_scope`, memory shared by several agents, under the
rules that apply to agents (id validation, lazy, same object, bounded, closed with the
factory)."""

from __future__ import annotations

from pathlib import Path

import pytest

import sqlmem
from sqlmem import AgentMemoryConfig, Fact, MemoryFactory, StoreConfig


def test_a_scope_lives_in_its_own_folder_and_is_opened_once(tmp_path: Path) -> None:
    with MemoryFactory(tmp_path) as factory:
        assert not (tmp_path / "scopes").exists()  # lazy: nothing before the first resolve
        scope = factory.resolve_scope("user-42")
        assert scope.path == tmp_path / "scopes" / "user-42" / "memory.db"
        assert factory.resolve_scope("user-42") is scope
        scope.facts.index(Fact(content="The user is vegetarian."))
        # an agent and a scope of the same name are two different files
        agent = factory.resolve("user-42")
        assert agent is not None and agent is not scope
        assert agent.facts.count() == 0
        assert agent.path == tmp_path / "agents" / "user-42" / "memory.db"


@pytest.mark.parametrize("bad", ["", "../x", "a/b", ".hidden", "x" * 129, "a:b", "é", None, 3])
def test_bad_scope_ids_are_refused_before_touching_disk(tmp_path: Path, bad: object) -> None:
    with (
        MemoryFactory(tmp_path / "data") as factory,
        pytest.raises(sqlmem.InvalidAgentIdError, match="scope_id"),
    ):
        factory.resolve_scope(bad)  # type: ignore[arg-type]
    assert not (tmp_path / "data").exists()


def test_a_factory_without_data_dir_refuses_scopes(tmp_path: Path) -> None:
    agents = {"a": AgentMemoryConfig(data_dir=tmp_path / "a")}
    with (
        MemoryFactory(None, agents=agents) as factory,
        pytest.raises(sqlmem.InvalidArgumentError, match="data_dir"),
    ):
        factory.resolve_scope("team")


def test_scopes_ignore_the_agents_list_and_use_the_default_store_settings(
    tmp_path: Path,
) -> None:
    default = AgentMemoryConfig(store=StoreConfig(history_search=False))
    with MemoryFactory(tmp_path, agents={}, default=default) as factory:
        assert factory.resolve("anyone") is None  # not in `agents`
        scope = factory.resolve_scope("team")
        assert scope.config.history_search is False


def test_scopes_count_towards_max_open_and_handles_survive_eviction(tmp_path: Path) -> None:
    with MemoryFactory(tmp_path, max_open=1) as factory:
        scope = factory.resolve_scope("team")
        scope.facts.index(Fact(content="deploy with make release"))
        agent = factory.resolve("a1")
        assert agent is not None
        agent.facts.index(Fact(content="agent fact"))
        assert factory.open_count == 1
        assert [f.content for f in scope.facts.search("deploy")] == ["deploy with make release"]
        assert factory.open_count == 1


def test_reload_keeps_scopes_and_close_closes_them(tmp_path: Path) -> None:
    factory = MemoryFactory(tmp_path)
    scope = factory.resolve_scope("team")
    factory.reload({"a1": AgentMemoryConfig()})
    assert factory.resolve_scope("team") is scope
    factory.close()
    with pytest.raises(sqlmem.StoreClosedError):
        scope.facts.count()
    with pytest.raises(sqlmem.StoreClosedError):
        factory.resolve_scope("team")
