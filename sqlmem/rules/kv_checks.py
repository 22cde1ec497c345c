"""The arguments of a key-value port, checked alike on every backend: namespaces and keys
are any text UTF-8 holds, values bytes, a ttl a positive int of milliseconds; and the key
range of a prefix (code point order, which is UTF-8 byte order)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import InvalidArgumentError
from .checks import check_text

__all__ = [
    "bytes_value",
    "check_key",
    "check_namespace",
    "check_ttl_ms",
    "checked_keys",
    "pairs",
    "prefix_upper_bound",
]

_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


def prefix_upper_bound(prefix: str) -> str | None:
    """The least string greater than every string starting with `prefix` (None: no such
    string, every key from `prefix` on matches). Code point order, surrogates skipped
    (UTF-8 cannot hold them, so no key has one)."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop()) + 1
        if last in _SURROGATES:
            last = _SURROGATES.stop
        if last <= _MAX_CODE_POINT:
            return "".join(chars) + chr(last)
    return None


def check_ttl_ms(ttl_ms: Any) -> None:
    if ttl_ms is not None and (
        isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or not 0 < ttl_ms < 2**53
    ):
        raise InvalidArgumentError(f"ttl_ms must be None or an int from 1 to 2**53, got {ttl_ms!r}")


def check_namespace(namespace: Any) -> None:
    check_text(namespace, "namespace")


def check_key(key: Any, name: str) -> str:
    return check_text(key, name)


def checked_keys(keys: Any) -> list[str]:
    if isinstance(keys, (str, bytes)) or not isinstance(keys, Iterable):
        raise InvalidArgumentError("keys must be a sequence of str")
    return [check_key(key, f"keys[{i}]") for i, key in enumerate(keys)]


def pairs(pairs: Any) -> Iterable[Sequence[Any]]:
    if isinstance(pairs, (str, bytes, dict)) or not isinstance(pairs, Iterable):
        raise InvalidArgumentError("key_value_pairs must be a sequence of (str, bytes) pairs")
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InvalidArgumentError(f"key_value_pairs[{i}] must be a (key, value) pair")
        yield pair


def bytes_value(value: Any, i: int) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise InvalidArgumentError(f"key_value_pairs[{i}][1] must be bytes, not {type(value).__name__}")
