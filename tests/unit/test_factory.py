"""MemoryFactory: lazy per-agent databases, agent ids, isolation, failures, reload, close."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sqlmem.config import StoreConfig
from sqlmem.errors import (
    CorruptDatabaseError,
    InvalidAgentIdError,
    InvalidArgumentError,
    SqlmemError,
    StoreClosedError,
)
from sqlmem.factory import (
    AgentMemoryConfig,
    MemoryFactory,
    open_fact_store,
    open_history_store,
)
from sqlmem.factory import agents as factory_module
from sqlmem.protocols import FactStore, HistoryStore
from sqlmem.records import Fact, Message
from sqlmem.sqlite.db import MemoryDB


@pytest.fixture
def make_factory() -> Iterator[Callable[..., MemoryFactory]]:
    """`make_factory(data_dir, **kwargs)`: a MemoryFactory closed when the test ends."""
    made: list[MemoryFactory] = []

    def _make(data_dir: object, **kwargs: object) -> MemoryFactory:
        made.append(MemoryFactory(data_dir, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    yield _make
    for factory in made:
        factory.close()


def _files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*")) if folder.exists() else []


# -- paths and laziness -------------------------------------------------------------------


@pytest.mark.parametrize("as_str", [False, True], ids=["Path", "str"])
def test_agent_file_lives_under_data_dir_agents(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory], as_str: bool
) -> None:
    data_dir = tmp_path / "data"
    factory = make_factory(str(data_dir) if as_str else data_dir)
    db = factory.resolve("alice")
    assert db is not None
    assert db.path == data_dir / "agents" / "alice" / "memory.db"
    assert db.path.is_file()


def test_agent_with_its_own_folder(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    own = tmp_path / "elsewhere" / "bob-memory"
    agents = {"bob": AgentMemoryConfig(data_dir=own), "carol": AgentMemoryConfig()}
    factory = make_factory(tmp_path / "data", agents=agents)
    bob, carol = factory.resolve("bob"), factory.resolve("carol")
    assert bob is not None and carol is not None
    assert bob.path == own / "memory.db"
    assert carol.path == tmp_path / "data" / "agents" / "carol" / "memory.db"
    # An agent with its own folder needs no factory data_dir at all.
    alone = make_factory(None, agents={"bob2": AgentMemoryConfig(data_dir=tmp_path / "b2")})
    db = alone.resolve("bob2")
    assert db is not None and db.path == tmp_path / "b2" / "memory.db"


def test_construction_touches_no_file(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    make_factory(tmp_path / "data", agents={"a": AgentMemoryConfig(data_dir=tmp_path / "own")})
    make_factory(tmp_path / "data2")
    assert _files(tmp_path) == []


def test_first_resolve_opens_and_migrates_then_caches(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory], monkeypatch: pytest.MonkeyPatch
) -> None:
    opens: list[Path] = []
    real_open = factory_module._open_db

    def counting_open(path: Path, config: StoreConfig) -> MemoryDB:
        opens.append(path)
        return real_open(path, config)

    monkeypatch.setattr(factory_module, "_open_db", counting_open)
    factory = make_factory(tmp_path)
    db = factory.resolve("a")
    assert db is not None and db.stats()["schema_version"] >= 1
    assert factory.resolve("a") is db
    assert factory.resolve_history("a") is db.history
    assert factory.resolve_facts("a") is db.facts
    assert len(opens) == 1


def test_history_and_facts_share_one_database(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    factory = make_factory(tmp_path)
    facts = factory.resolve_facts("a")
    history = factory.resolve_history("a")
    db = factory.resolve("a")
    assert db is not None and facts is db.facts and history is db.history
    assert isinstance(facts, FactStore) and isinstance(history, HistoryStore)
    facts.index(Fact(content="shared file"))
    history.append("s", Message(role="user", content="hello"))
    assert db.stats()["facts"] == 1 and db.stats()["messages_active"] == 1


def test_agent_store_config_is_used(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    store = StoreConfig(max_history_len=2, busy_timeout_ms=777)
    factory = make_factory(tmp_path, default=AgentMemoryConfig(store=store))
    db = factory.resolve("a")
    assert db is not None and db.config == store


# -- agents without memory ----------------------------------------------------------------


def test_disabled_agent_resolves_to_none(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    agents = {"off": AgentMemoryConfig(enabled=False, data_dir=tmp_path / "own")}
    factory = make_factory(tmp_path / "data", agents=agents)
    assert factory.resolve("off") is None
    assert factory.resolve_history("off") is None
    assert factory.resolve_facts("off") is None
    off_by_default = make_factory(tmp_path / "data", default=AgentMemoryConfig(enabled=False))
    assert off_by_default.resolve("anyone") is None
    assert _files(tmp_path) == []


def test_unknown_agent_resolves_to_none_when_agents_given(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    factory = make_factory(tmp_path / "data", agents={"known": AgentMemoryConfig()})
    assert factory.resolve("stranger") is None
    assert factory.resolve_facts("stranger") is None
    assert _files(tmp_path) == []
    assert factory.resolve("known") is not None


def test_no_folder_resolves_to_none(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    factory = make_factory(None)
    assert factory.resolve("a") is None
    assert factory.resolve_history("a") is None
    assert _files(tmp_path) == []


# -- agent ids ----------------------------------------------------------------------------

BAD_IDS = [
    "",
    "../x",
    "..",
    ".",
    "a/b",
    "a\\b",
    ".hidden",
    "/abs",
    "a" * 129,
    "a\x00b",
    "a b",
    "a\n",
    "caf\u00e9",
    "\u0661",  # an Arabic-Indic digit: isdigit() but not ASCII
    None,
    7,
    b"bytes",
]


@pytest.mark.parametrize("agent_id", BAD_IDS)
def test_bad_agent_ids_are_refused_before_disk(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory], agent_id: object
) -> None:
    factory = make_factory(tmp_path / "data")
    for resolve in (factory.resolve, factory.resolve_history, factory.resolve_facts):
        with pytest.raises(InvalidAgentIdError):
            resolve(agent_id)  # type: ignore[arg-type]
    with pytest.raises(InvalidAgentIdError):
        make_factory(tmp_path / "data", agents={agent_id: AgentMemoryConfig()})
    assert _files(tmp_path) == []


@pytest.mark.parametrize("agent_id", ["a", "A-b_c.d", "a" * 128, "0", "-dash", "x..y", "v1.2"])
def test_good_agent_ids(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory], agent_id: str
) -> None:
    db = make_factory(tmp_path).resolve(agent_id)
    assert db is not None and db.path.parent.name == agent_id


def test_invalid_agent_id_error_is_a_value_error() -> None:
    assert issubclass(InvalidAgentIdError, InvalidArgumentError)
    assert issubclass(InvalidAgentIdError, ValueError)


# -- isolation ----------------------------------------------------------------------------


def test_one_agents_data_never_shows_in_anothers_search(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    factory = make_factory(tmp_path)
    for agent in ("alice", "bob"):
        facts, history = factory.resolve_facts(agent), factory.resolve_history(agent)
        assert facts is not None and history is not None
        facts.index(Fact(content=f"secret password of {agent} is swordfish"))
        history.append("chat", Message(role="user", content=f"{agent} says swordfish"))
    for agent, other in (("alice", "bob"), ("bob", "alice")):
        facts, history = factory.resolve_facts(agent), factory.resolve_history(agent)
        assert facts is not None and history is not None
        found = facts.search("swordfish password")
        assert [f.content for f in found] == [f"secret password of {agent} is swordfish"]
        assert all(other not in f.content for f in facts.search(other, mode="any"))
        messages = history.search("swordfish")
        assert [m.content for m in messages] == [f"{agent} says swordfish"]


def test_two_agents_may_not_share_one_file(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    shared = AgentMemoryConfig(data_dir=tmp_path / "same")
    factory = make_factory(tmp_path, agents={"a": shared, "b": shared})
    assert factory.resolve("a") is not None
    with pytest.raises(InvalidArgumentError, match="share one database file"):
        factory.resolve("b")


# -- concurrency --------------------------------------------------------------------------


def test_many_threads_get_exactly_one_database_per_agent(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory], monkeypatch: pytest.MonkeyPatch
) -> None:
    opens: Counter[Path] = Counter()
    count_lock = threading.Lock()
    real_open = factory_module._open_db

    def counting_open(path: Path, config: StoreConfig) -> MemoryDB:
        with count_lock:
            opens[path] += 1
        return real_open(path, config)

    monkeypatch.setattr(factory_module, "_open_db", counting_open)
    factory = make_factory(tmp_path, max_open=1000)
    agents = [f"agent-{i}" for i in range(200)]
    barrier = threading.Barrier(16)
    seen: list[dict[str, MemoryDB]] = []
    errors: list[BaseException] = []

    def worker(offset: int) -> None:
        try:
            barrier.wait()
            mine = {}
            for i in range(len(agents)):  # each thread starts at a different agent
                agent = agents[(i + offset * 13) % len(agents)]
                db = factory.resolve(agent)
                assert db is not None
                mine[agent] = db
            seen.append(mine)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(seen) == 16
    for agent in agents:
        assert len({id(view[agent]) for view in seen}) == 1
    assert len(opens) == 200 and set(opens.values()) == {1}


def test_slow_open_of_one_agent_does_not_block_others(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory], monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release = threading.Event(), threading.Event()
    real_open = factory_module._open_db

    def slow_for_one(path: Path, config: StoreConfig) -> MemoryDB:
        if path.parent.name == "slow":
            started.set()
            assert release.wait(10), "test never released the slow open"
        return real_open(path, config)

    monkeypatch.setattr(factory_module, "_open_db", slow_for_one)
    factory = make_factory(tmp_path)
    results: dict[str, MemoryDB | None] = {}

    def resolve_slow(key: str) -> None:
        results[key] = factory.resolve("slow")

    first = threading.Thread(target=resolve_slow, args=("first",))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=resolve_slow, args=("second",))  # waits for the first
    second.start()
    try:
        began = time.monotonic()
        fast = factory.resolve("fast")
        other = factory.resolve_facts("other")
        elapsed = time.monotonic() - began
        assert fast is not None and other is not None
        assert elapsed < 5, f"resolving other agents took {elapsed:.1f}s during a slow open"
        assert "first" not in results and "second" not in results
    finally:
        release.set()
        first.join(10)
        second.join(10)
    assert results["first"] is not None
    assert results["first"] is results["second"] is factory.resolve("slow")


# -- failures -----------------------------------------------------------------------------


def test_failed_open_is_a_clear_error_and_not_cached(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    # A regular file where the agent's folder should be: fails even for root, unlike chmod.
    blocker = tmp_path / "agents" / "a"
    blocker.parent.mkdir()
    blocker.write_text("not a folder")
    factory = make_factory(tmp_path)
    for _ in range(2):  # the failure is not cached as a failure either
        with pytest.raises(SqlmemError) as info:
            factory.resolve("a")
        assert not isinstance(info.value, OSError)
        assert str(blocker) in str(info.value)
    blocker.unlink()
    db = factory.resolve("a")
    assert db is not None and db.path == blocker / "memory.db"
    db.facts.index(Fact(content="works now"))
    assert factory.resolve("a") is db


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through chmod 0500")
def test_unwritable_folder_fails_then_recovers(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o500)
    try:
        factory = make_factory(data)
        with pytest.raises(SqlmemError):
            factory.resolve("a")
        assert not (data / "agents").exists()
    finally:
        data.chmod(0o700)
    assert factory.resolve("a") is not None


def test_corrupt_file_raises_corrupt_error_then_recovers(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    path = tmp_path / "agents" / "a" / "memory.db"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database" * 100)
    factory = make_factory(tmp_path)
    with pytest.raises(CorruptDatabaseError):
        factory.resolve("a")
    path.unlink()
    assert factory.resolve("a") is not None


@pytest.mark.parametrize(
    "failure",
    [OSError(28, "No space left on device"), PermissionError(13, "Permission denied")],
)
def test_os_errors_from_open_become_sqlmem_errors(
    tmp_path: Path,
    make_factory: Callable[..., MemoryFactory],
    monkeypatch: pytest.MonkeyPatch,
    failure: OSError,
) -> None:
    def failing_open(path: Path, config: StoreConfig) -> MemoryDB:
        raise failure

    monkeypatch.setattr(factory_module, "_open_db", failing_open)
    factory = make_factory(tmp_path)
    with pytest.raises(SqlmemError, match="agent 'a'") as info:
        factory.resolve("a")
    assert not isinstance(info.value, OSError)
    assert info.value.__cause__ is failure
    monkeypatch.undo()
    assert factory.resolve("a") is not None


def test_apsw_errors_from_open_become_sqlmem_errors(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory], monkeypatch: pytest.MonkeyPatch
) -> None:
    import apsw

    failure = apsw.CantOpenError("unable to open database file")

    def failing_open(path: Path, config: StoreConfig) -> MemoryDB:
        raise failure

    monkeypatch.setattr(factory_module, "_open_db", failing_open)
    factory = make_factory(tmp_path)
    with pytest.raises(SqlmemError) as info:
        factory.resolve("a")
    assert not isinstance(info.value, apsw.Error)
    assert info.value.__cause__ is failure


def test_handle_closed_by_its_user_is_reopened_on_resolve(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    factory = make_factory(tmp_path)
    db = factory.resolve("a")
    assert db is not None
    db.facts.index(Fact(content="kept"))
    db.close()
    again = factory.resolve("a")
    assert again is not None and again is not db and not again.closed
    assert [f.content for f in again.facts.search("kept")] == ["kept"]


# -- reload and close ---------------------------------------------------------------------


def test_reload_keeps_unchanged_and_forgets_changed_or_removed(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    agents = {
        "same": AgentMemoryConfig(),
        "tuned": AgentMemoryConfig(),
        "moved": AgentMemoryConfig(),
        "gone": AgentMemoryConfig(),
        "off": AgentMemoryConfig(),
    }
    factory = make_factory(tmp_path / "data", agents=agents)
    before = {name: factory.resolve(name) for name in agents}
    for db in before.values():
        assert db is not None
        db.facts.index(Fact(content="remember me"))

    factory.reload(
        {
            "same": AgentMemoryConfig(),  # equal by value: unchanged
            "tuned": AgentMemoryConfig(store=StoreConfig(busy_timeout_ms=10)),
            "moved": AgentMemoryConfig(data_dir=tmp_path / "moved"),
            "off": AgentMemoryConfig(enabled=False),
            "new": AgentMemoryConfig(),
        }
    )
    assert factory.resolve("same") is before["same"]
    assert before["same"] is not None and before["same"].facts.count() == 1
    for name in ("tuned", "moved", "gone", "off"):
        old = before[name]
        assert old is not None and old.closed
        with pytest.raises(StoreClosedError):
            old.facts.count()
    tuned = factory.resolve("tuned")
    assert tuned is not None and tuned is not before["tuned"]
    assert tuned.config.busy_timeout_ms == 10 and tuned.facts.count() == 1  # same file
    moved = factory.resolve("moved")
    assert moved is not None and moved.path == tmp_path / "moved" / "memory.db"
    assert factory.resolve("gone") is None
    assert factory.resolve("off") is None
    assert factory.resolve("new") is not None


def test_reload_validates_before_changing_anything(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    factory = make_factory(tmp_path, agents={"a": AgentMemoryConfig()})
    db = factory.resolve("a")
    with pytest.raises(InvalidAgentIdError):
        factory.reload({"../evil": AgentMemoryConfig()})
    with pytest.raises(InvalidArgumentError, match="agents"):
        factory.reload({"a": {"enabled": True}})  # type: ignore[dict-item]
    assert factory.resolve("a") is db and db is not None and not db.closed


def test_close_closes_everything_and_refuses_later_use(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory]
) -> None:
    factory = make_factory(tmp_path)
    db = factory.resolve("a")
    history, facts = factory.resolve_history("b"), factory.resolve_facts("b")
    assert db is not None and history is not None and facts is not None
    factory.close()
    factory.close()  # idempotent
    assert factory.closed and db.closed
    for call in (
        lambda: factory.resolve("a"),
        lambda: factory.resolve_history("c"),
        lambda: factory.resolve_facts("c"),
        lambda: factory.reload(None),
        lambda: db.facts.count(),
        lambda: history.append("s", Message(role="user", content="x")),
        lambda: facts.search("x"),
    ):
        with pytest.raises(StoreClosedError):
            call()


def test_context_manager(tmp_path: Path) -> None:
    with MemoryFactory(tmp_path) as factory:
        db = factory.resolve("a")
        assert db is not None
    assert factory.closed and db.closed


def test_close_waits_for_an_open_in_flight(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started, release = threading.Event(), threading.Event()
    opened: list[MemoryDB] = []
    real_open = factory_module._open_db

    def slow_open(path: Path, config: StoreConfig) -> MemoryDB:
        started.set()
        release.wait(10)
        opened.append(real_open(path, config))
        return opened[-1]

    monkeypatch.setattr(factory_module, "_open_db", slow_open)
    factory = MemoryFactory(tmp_path)
    errors: list[BaseException] = []

    def resolve() -> None:
        try:
            factory.resolve("a")
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=resolve)
    thread.start()
    assert started.wait(10)
    threading.Timer(0.2, release.set).start()
    factory.close()
    assert opened and opened[0].closed  # nothing of the factory outlives close()
    thread.join(10)
    assert len(errors) == 1 and isinstance(errors[0], StoreClosedError)


def test_reload_during_an_open_gives_the_new_config(
    tmp_path: Path, make_factory: Callable[..., MemoryFactory], monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release = threading.Event(), threading.Event()
    opened: list[MemoryDB] = []
    real_open = factory_module._open_db

    def slow_first_open(path: Path, config: StoreConfig) -> MemoryDB:
        if not opened:
            started.set()
            release.wait(10)
        opened.append(real_open(path, config))
        return opened[-1]

    monkeypatch.setattr(factory_module, "_open_db", slow_first_open)
    factory = make_factory(tmp_path, agents={"a": AgentMemoryConfig()})
    result: list[MemoryDB | None] = []
    thread = threading.Thread(target=lambda: result.append(factory.resolve("a")))
    thread.start()
    assert started.wait(10)
    tuned = AgentMemoryConfig(store=StoreConfig(busy_timeout_ms=10))
    factory.reload({"a": tuned})
    release.set()
    thread.join(10)
    assert len(opened) == 2 and opened[0].closed  # the stale open was thrown away
    assert result == [opened[1]] and opened[1].config == tuned.store
    assert factory.resolve("a") is opened[1]


# -- configuration validation -------------------------------------------------------------


@pytest.mark.parametrize("max_open", [0, -1, True, 1.5, "3", None])
def test_max_open_is_validated(tmp_path: Path, max_open: object) -> None:
    with pytest.raises(InvalidArgumentError, match="max_open"):
        MemoryFactory(tmp_path, max_open=max_open)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"enabled": "maybe"}, "enabled"),
        ({"data_dir": 123}, "data_dir"),
        ({"data_dir": ""}, "data_dir"),
        ({"store": {"busy_timeout_ms": -1}}, "store.busy_timeout_ms"),
        ({"store": "fast"}, "store"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_agent_config_errors_name_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"AgentMemoryConfig\.{field}"):
        AgentMemoryConfig(**kwargs)


def test_agent_config_is_frozen_and_compares_by_value(tmp_path: Path) -> None:
    config = AgentMemoryConfig(data_dir=str(tmp_path))
    assert config.data_dir == tmp_path and config.enabled and config.store == StoreConfig()
    assert config == AgentMemoryConfig(data_dir=tmp_path)
    with pytest.raises(ValueError):
        config.enabled = False


@pytest.mark.parametrize(
    "kwargs",
    [
        {"data_dir": 5},
        {"data_dir": ""},
        {"agents": ["a"]},
        {"agents": {"a": None}},
        {"default": {"enabled": True}},
    ],
)
def test_factory_arguments_are_validated(kwargs: dict[str, object]) -> None:
    data_dir = kwargs.pop("data_dir", "somewhere")
    with pytest.raises(InvalidArgumentError):
        MemoryFactory(data_dir, **kwargs)  # type: ignore[arg-type]


# -- single stores outside a factory ------------------------------------------------------


def test_open_history_store(tmp_path: Path) -> None:
    path = tmp_path / "h" / "memory.db"
    with open_history_store(path) as history:
        assert isinstance(history, HistoryStore)
        assert history.append("s", Message(role="user", content="hello")) == 1
    with pytest.raises(StoreClosedError):
        history.count("s")
    history = open_history_store(str(path), StoreConfig(busy_timeout_ms=100))
    try:
        assert [m.content for m in history.get_all("s")] == ["hello"]
    finally:
        history.close()
    history.close()  # idempotent


def test_open_fact_store(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with open_fact_store(path) as facts:
        assert isinstance(facts, FactStore)
        facts.index(Fact(content="the sky is blue"))
        assert len(facts) == 1
    with pytest.raises(StoreClosedError):
        facts.search("sky")
    with open_fact_store(path) as facts:
        assert [f.content for f in facts.search("sky")] == ["the sky is blue"]


def test_open_store_keeps_its_database_alive(tmp_path: Path) -> None:
    import gc

    facts = open_fact_store(tmp_path / "memory.db")
    gc.collect()  # the MemoryDB behind the store must not go away with its last name
    try:
        facts.index(Fact(content="still here"))
        assert facts.count() == 1
    finally:
        facts.close()


def test_open_store_rejects_bad_config(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError):
        open_fact_store(tmp_path / "memory.db", {"wal": False})  # type: ignore[arg-type]
    assert _files(tmp_path) == []
