"""`AgentMemoryConfig`: one agent's memory settings, and the checks on factory settings.

Shared by the factory and anything that builds agent configs (a program's own config
loader): validation only, nothing here touches the disk or opens a database.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..agent_ids import validate_agent_id
from ..config import StoreConfig, validation_message
from ..errors import InvalidArgumentError
from ..rules.paths import absolute_path

__all__ = [
    "AGENTS_FOLDER",
    "DB_FILE_NAME",
    "SCOPES_FOLDER",
    "AgentMemoryConfig",
    "absolute_folder",
    "check_agents",
]

DB_FILE_NAME = "memory.db"
AGENTS_FOLDER = "agents"
SCOPES_FOLDER = "scopes"


class AgentMemoryConfig(BaseModel):
    """One agent's memory settings.

    `data_dir` is the agent's own folder (its file is `data_dir/memory.db`); without it the
    agent lives under the factory's `data_dir/agents/<agent_id>/`. Configs compare by value,
    which is how `MemoryFactory.reload` tells a changed agent from an unchanged one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    data_dir: Path | None = None
    store: StoreConfig = Field(default_factory=StoreConfig)

    def __init__(self, **data: Any) -> None:
        store = data.get("store")
        if isinstance(store, Mapping) and all(isinstance(k, str) for k in store):
            # Built here rather than by pydantic, whose message for an error inside a
            # nested model with a custom __init__ is "store: Value error, StoreConfig...".
            try:
                data["store"] = StoreConfig(**store)
            except InvalidArgumentError as exc:
                message = str(exc).replace("StoreConfig.", "AgentMemoryConfig.store.")
                raise InvalidArgumentError(message) from None
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InvalidArgumentError(validation_message(exc, "AgentMemoryConfig")) from None

    @field_validator("data_dir", mode="before")
    @classmethod
    def _non_empty_path(cls, value: Any) -> Any:
        # Path("") is ".", the current directory: almost certainly a config mistake.
        if isinstance(value, (str, os.PathLike)) and not os.fspath(value):
            raise ValueError("must be a non-empty path or None")
        if isinstance(value, str) and "\x00" in value:
            raise ValueError("must not contain NUL characters")
        return value


def absolute_folder(value: Any, name: str) -> Path | None:
    """A folder setting as an absolute path, without touching the disk."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise InvalidArgumentError(f"{name} must be a path or None, not {type(value).__name__}")
    text = os.fspath(value)
    if not isinstance(text, str) or not text or "\x00" in text:
        raise InvalidArgumentError(f"{name} must be a non-empty path or None")
    return absolute_path(text, name)


def check_agents(
    agents: Mapping[str, AgentMemoryConfig] | None,
) -> dict[str, AgentMemoryConfig] | None:
    """Validate a per-agent config mapping and take a private copy of it."""
    if agents is None:
        return None
    if not isinstance(agents, Mapping):
        raise InvalidArgumentError("agents must be a mapping of agent id to AgentMemoryConfig")
    checked: dict[str, AgentMemoryConfig] = {}
    for agent_id, config in agents.items():
        validate_agent_id(agent_id)
        if not isinstance(config, AgentMemoryConfig):
            raise InvalidArgumentError(f"agents[{agent_id!r}] must be an AgentMemoryConfig")
        checked[agent_id] = config
    return checked
