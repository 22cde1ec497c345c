"""Where Google ADK's sessions live in an agent's memory, on any backend.

ADK keeps three kinds of state (app-wide `app:` keys, per-user `user:` keys, the
session's own keys; `temp:` keys are never stored) and a list of events per session.
sqlmem keeps them in stores every backend has:

- events: the session's messages in `db.history` (history session `adk/<app>/<user>/<id>`
  with each part hashed), one message per event: its text as content (so
  `db.history.search` finds it) and the event itself, exactly as ADK serialises it, in
  the message's metadata;
- state: three JSON documents, disabled so they never enter a prompt:
  `adk/<app>/app.md`, `adk/<app>/<user>/user.md` and `adk/<app>/<user>/<id>.md`, the last
  holding the session's names and creation time too.

Names are hashed (20 hex digits of SHA-256) because a document path takes only a few
ASCII characters and at most 255 of them, while ADK's names are any text; the JSON keeps
the real names, and a read checks them, so two names never share a session.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = [
    "app_folder",
    "app_state_path",
    "history_id",
    "session_path",
    "state_from_json",
    "user_folder",
    "user_state_path",
]


def _hashed(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def app_folder(app_name: str) -> str:
    return f"adk/{_hashed(app_name)}"


def user_folder(app_name: str, user_id: str) -> str:
    return f"{app_folder(app_name)}/{_hashed(user_id)}"


def app_state_path(app_name: str) -> str:
    return f"{app_folder(app_name)}/app.md"


def user_state_path(app_name: str, user_id: str) -> str:
    return f"{user_folder(app_name, user_id)}/user.md"


def session_path(app_name: str, user_id: str, session_id: str) -> str:
    return f"{user_folder(app_name, user_id)}/{_hashed(session_id)}.md"


def history_id(app_name: str, user_id: str, session_id: str) -> str:
    return f"{user_folder(app_name, user_id)}/{_hashed(session_id)}"


def state_from_json(text: str) -> dict[str, Any]:
    value = json.loads(text)
    return value if isinstance(value, dict) else {}
