"""When two texts are one fact: the normalisation and the ids derived from it.

The extractor stores a fact under an id derived from its normalised text, so the same fact
extracted twice (or by two processes) is stored once; import and the in-memory store use
the same rule. A memory item's `fingerprint` is the full digest of that same
normalised text: `remember` merges facts whose fingerprints agree.
"""

from __future__ import annotations

import hashlib
import unicodedata

__all__ = ["FACT_ID_PREFIX", "fact_id", "fingerprint", "normalise_fact"]

#: Ids of extracted facts: this prefix and 32 hex digits (128 bits) of a SHA-256.
FACT_ID_PREFIX = "fact-"


def normalise_fact(text: str) -> str:
    """The form two phrasings of one fact share: NFKC, casefolded, whitespace collapsed,
    trailing full stops dropped ("User likes tea." and "user  likes tea" are one fact)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(folded.split()).rstrip(". ")


def fingerprint(text: str) -> str:
    """Hex SHA-256 of the normalised text: equal for two phrasings of one fact.

    Never raises: a lone surrogate (which no stored text holds: records refuse it) is
    hashed as its code point, so callers refuse such text with their own error.

    Cached by text: a `Fact` computes its fingerprint when built and the store again
    when it writes it (the record may have changed since), ~2 µs each for a short fact;
    the second is then a dict lookup (a str caches its own hash). Bounded by clearing,
    by count and by the characters held.
    """
    global _cached_chars
    found = _FINGERPRINTS.get(text)
    if found is None:
        normal = normalise_fact(text).encode("utf-8", "surrogatepass")
        found = hashlib.sha256(normal).hexdigest()
        if len(text) > _FINGERPRINT_CACHED_LEN:
            return found
        if len(_FINGERPRINTS) >= _FINGERPRINTS_MAX or _cached_chars > _FINGERPRINT_CHARS:
            _FINGERPRINTS.clear()
            _cached_chars = 0
        _FINGERPRINTS[text] = found
        _cached_chars += len(text)
    return found


#: Fingerprints by text: enough for the batches `index_many` is given (built, then
#: written), at most ~4 million characters of text held.
_FINGERPRINTS: dict[str, str] = {}
_FINGERPRINTS_MAX = 16_384
_FINGERPRINT_CHARS = 4_000_000
_FINGERPRINT_CACHED_LEN = 4096
_cached_chars = 0


def fact_id(text: str) -> str:
    """Stable id of a fact's normalised text (its fingerprint's first 128 bits)."""
    return FACT_ID_PREFIX + fingerprint(text)[:32]
