"""Agent ids, checked before they become folder names.

An agent id is used as a folder name under the factory's data directory, so it must never
be able to leave that folder or hide in it: 1-128 characters of ASCII letters, digits,
`.`, `_` and `-`, not starting with `.` (which excludes `.`, `..` and hidden folders).
ASCII only, on purpose: non-ASCII letters would pass `str.isalnum()` but file systems
normalise and case-fold them differently (macOS stores NFD), so two ids could name one
folder or one id could name two.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import InvalidAgentIdError

__all__ = ["MAX_AGENT_ID_LENGTH", "validate_agent_id"]

MAX_AGENT_ID_LENGTH = 128

# `\Z`, not `$`: `$` would also accept a trailing newline.
_AGENT_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}\Z", re.ASCII)


def validate_agent_id(agent_id: Any, what: str = "agent_id") -> str:
    """Return `agent_id` unchanged if it is a safe folder name, else raise InvalidAgentIdError.

    Scope ids (memory several agents share) follow the same rule; `what` names the
    argument in the message.
    """
    if not isinstance(agent_id, str):
        raise InvalidAgentIdError(f"{what} must be a str, not {type(agent_id).__name__}")
    if _AGENT_ID.match(agent_id) is None:
        shown = agent_id if len(agent_id) <= 40 else agent_id[:40] + "..."
        raise InvalidAgentIdError(
            f"{what} {shown!r} is not allowed: use 1-{MAX_AGENT_ID_LENGTH} ASCII letters, "
            "digits, '.', '_' or '-', not starting with '.'"
        )
    return agent_id
