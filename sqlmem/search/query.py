"""Turning user text into FTS5 queries that cannot fail, and text into indexable text.

User text never reaches MATCH as syntax. A query is cut into words (runs of letters or
digits); each word becomes a quoted FTS5 phrase, so `C++`, `what's`, `AND`, `NEAR(a b)`
or a lone `"` are just words (or nothing). Words the store's tokenizer would reduce to no
token at all are dropped, because an empty phrase makes an AND query match nothing.

Scripts written without spaces (Chinese, Japanese, Korean, Thai, ...) would otherwise be
indexed as one giant token per run, so that `跑步` could never find `用户喜欢周日早上跑步`.
Both sides therefore set each such character apart with spaces (`segment`): the index
stores the segmented text and a query run becomes a phrase of single characters, which
matches exactly where that run of characters occurs.
"""

from __future__ import annotations

import re
import sys
import threading
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Literal, cast

import apsw

from ..errors import InvalidQueryError
from ..forksafe import sqlite_outside_engines
from .scripts import SEGMENTED_CLASS

__all__ = [
    "MAX_QUERY_TERMS",
    "MAX_QUERY_WORDS_READ",
    "QueryCompiler",
    "Term",
    "check_raw_query",
    "compiler_for",
    "phrases",
    "rarest_terms",
    "segment",
    "tokens_of",
]

#: The most distinct words a search in mode "any" or "all" sends to FTS5, and the most
#: words a `mode="raw"` query may hold (its operators AND, OR, NOT, NEAR not counted).
#: Why a cap: FTS5 scores every matching row over every phrase of the query, so a query's
#: cost grows with (matching rows x phrases): superlinear in its length. Uncapped, a query
#: of 10,000 words took seconds and a 1 MB raw query minutes, holding a
#: read snapshot (and so the WAL) all along. Measured on 19,000 facts with every query
#: word in ~110 of them, an OR of 32 words took 2.6 ms, 64 words 6.2 ms, 128 words 18 ms,
#: 512 words 116 ms: past 64 the cost turns superlinear, and 64 distinct words is far
#: more than people or agents ask with.
MAX_QUERY_TERMS = 64
#: The most distinct words read from one query's text: the text after them is not read,
#: so the work of reading a query (tokenizing; counting the rows of each word to keep the
#: rarest `MAX_QUERY_TERMS`, ~15 µs a word) is bounded too, whatever its length: at most
#: ~60-80 ms. Texts of 20 KB or so hold fewer distinct words and are read whole.
MAX_QUERY_WORDS_READ = 4096

# Scripts without word spaces (and Hangul, whose words carry suffixes): one token per char.
_NO_SPACE_CHAR = re.compile(f"[{SEGMENTED_CLASS}]")
_NO_SPACE_RUN = re.compile(f"[{SEGMENTED_CLASS}]+")


@cache
def _word_pattern() -> re.Pattern[str]:
    """Letters or digits, and the combining marks inside words (Thai vowels, NFD accents),
    which Python's `\\w` leaves out. Built on first use: scanning Unicode takes ~0.15 s."""
    marks: list[str] = []
    start = None
    for code in range(sys.maxunicode + 2):
        is_mark = code <= sys.maxunicode and unicodedata.category(chr(code)).startswith("M")
        if is_mark and start is None:
            start = code
        elif not is_mark and start is not None:
            marks.append(f"{re.escape(chr(start))}-{re.escape(chr(code - 1))}")
            start = None
    return re.compile(f"(?:[^\\W_]|[{''.join(marks)}])+")


_SURROGATE = re.compile("[\ud800-\udfff]")

Mode = Literal["any", "all"]


def segment(text: str) -> str | None:
    """Text as indexed when it holds no-space scripts, else None (index `content` as is).

    Every append and index calls this: ASCII text (most of it) skips the regex scan.
    """
    if text.isascii() or not _NO_SPACE_CHAR.search(text):
        return None
    return _NO_SPACE_CHAR.sub(lambda m: f" {m.group()} ", text)


def _pieces(word: str) -> list[str]:
    """A word split into Latin-like parts and no-space runs, each run spaced per char."""
    out: list[str] = []
    pos = 0
    for run in _NO_SPACE_RUN.finditer(word):
        if run.start() > pos:
            out.append(word[pos : run.start()])
        out.append(" ".join(run.group()))
        pos = run.end()
    if pos < len(word):
        out.append(word[pos:])
    return out


@dataclass(frozen=True)
class Term:
    """One query word: `phrase` is what goes between quotes in MATCH, `tokens` what the
    tokenizer makes of it (the in-memory store matches on these)."""

    phrase: str
    tokens: tuple[str, ...]


class QueryCompiler:
    """Query and document tokenisation for one FTS5 tokenizer spec."""

    def __init__(self, tokenizer: str) -> None:
        words = tokenizer.split()
        self._name, self._args = words[0], words[1:]
        self._local = threading.local()
        # Bounded caches (thread-safe): a word's terms need a tokenizer call (~2 µs), and
        # words repeat (Zipf); whole queries repeat too (an agent asks the same thing).
        self._word_terms = lru_cache(maxsize=16_384)(self._terms_of_word)
        self._cached_terms = lru_cache(maxsize=2_048)(self._terms)
        self._cached_match = lru_cache(maxsize=2_048)(self._match)

    def _tokenizer(self) -> apsw.FTS5Tokenizer:
        tok = getattr(self._local, "tok", None)
        if tok is None:
            # A private in-memory connection per thread: tokenizing needs no database.
            conn = apsw.Connection(":memory:")
            tok = conn.fts5_tokenizer(self._name, self._args)
            self._local.conn, self._local.tok = conn, tok
        return tok

    def tokens(self, text: str, *, query: bool = False) -> tuple[str, ...]:
        """The tokens FTS5 indexes for `text` (already segmented)."""
        flags = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
        data = _SURROGATE.sub("", text).encode("utf-8")
        with sqlite_outside_engines():  # SQLite code: a fork waits for it (forksafe)
            result = self._tokenizer()(data, flags, None, include_offsets=False)
        return tuple(_first(t) for t in result)

    def document_tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """The tokens FTS5 indexes for each of `texts` (already segmented), in one pass:
        `tokens` per text costs ~13 µs for a chat message, mostly per-call overhead; this
        ~2 µs (a history search within one session tokenizes that session's messages)."""
        tok = self._tokenizer()
        flags = apsw.FTS5_TOKENIZE_DOCUMENT
        out: list[list[str]] = []
        with sqlite_outside_engines():  # SQLite code: a fork waits for it (forksafe)
            for text in texts:
                data = (_SURROGATE.sub("", text) if not text.isascii() else text).encode()
                found = tok(data, flags, None, include_offsets=False, include_colocated=False)
                out.append(cast("list[str]", found))  # strings alone: both flags off
        return out

    def terms(self, text: str) -> tuple[Term, ...]:
        """The distinct words of a user query, in order of first appearance; at most
        `MAX_QUERY_WORDS_READ` (the text after them is not read).

        Cached by text like `match`: a search in mode "any" needs both (~4 µs a query).
        A query of more than `MAX_QUERY_TERMS` terms is cut to its rarest by the store
        (`rarest_terms`), which alone knows how many rows hold each.
        """
        if len(text) > 256:
            return self._terms(text)
        return self._cached_terms(text)

    def _terms(self, text: str) -> tuple[Term, ...]:
        seen: set[tuple[str, ...]] = set()
        terms: list[Term] = []
        for word in _word_pattern().finditer(_SURROGATE.sub("", text)):
            for term in self._word_terms(word.group()):
                if term.tokens not in seen:
                    seen.add(term.tokens)
                    terms.append(term)
                    if len(terms) == MAX_QUERY_WORDS_READ:
                        return tuple(terms)
        return tuple(terms)

    def _terms_of_word(self, word: str) -> tuple[Term, ...]:
        out = []
        for piece in _pieces(word):
            tokens = self.tokens(piece, query=True)
            if tokens:
                out.append(Term(piece, tokens))
        return tuple(out)

    def match(self, text: str, mode: Mode) -> str | None:
        """An FTS5 MATCH expression for `text`, or None when it has no words. For a query
        of at most `MAX_QUERY_TERMS` terms; the stores cut longer ones first."""
        if len(text) > 256:  # long texts are rarely repeated; keep the cache small
            return self._match(text, mode)
        return self._cached_match(text, mode)

    def _match(self, text: str, mode: Mode) -> str | None:
        return phrases(self.terms(text), " OR " if mode == "any" else " AND ")


def tokens_of(terms: Sequence[Term]) -> set[str]:
    """The distinct tokens of `terms`: what `rarest_terms` needs the row counts of."""
    return {token for term in terms for token in term.tokens}


def rarest_terms(terms: Sequence[Term], docs: Mapping[str, int], mode: Mode) -> tuple[Term, ...]:
    """At most `MAX_QUERY_TERMS` of a query's terms: the rarest, in query order.

    `docs` maps each token to the number of indexed rows holding it (absent: none). A
    term's rarity is that of its rarest token (exact for a word; for a run of CJK
    characters, an upper bound on the rows holding the run). Ties keep the earlier word.

    Mode "any" first leaves out the terms no row holds (they cannot add a match or a
    score), then keeps the rarest: the result is the rows holding one of the kept words,
    ranked on those words only; a row holding only dropped (commoner) words is not found.
    Mode "all" keeps the rarest, which decide the intersection: the result is the rows
    holding every kept word, so it may include rows lacking a dropped, commoner word.
    When a word is in no row, nothing can match "all": no term is kept.
    An empty result means the query cannot match. Both stores call this with the same
    counts, so they keep the same terms.
    """
    rarity = [min(docs.get(token, 0) for token in term.tokens) for term in terms]
    if mode == "all" and 0 in rarity:
        return ()
    candidates = [i for i in range(len(terms)) if rarity[i] > 0]
    kept = sorted(sorted(candidates, key=rarity.__getitem__)[:MAX_QUERY_TERMS])
    return tuple(terms[i] for i in kept)


_RAW_OPERATORS = frozenset(("AND", "OR", "NOT", "NEAR"))


def check_raw_query(text: str) -> None:
    """Refuse a `mode="raw"` query of more than `MAX_QUERY_TERMS` words.

    FTS5 syntax cannot be trimmed safely (dropping a word changes what the rest means),
    so a long raw query is refused rather than cut. Every word counts, repeats too (each
    is a phrase FTS5 scores); the operators do not.
    """
    if len(text) <= 2 * MAX_QUERY_TERMS:  # too short to hold that many words
        return
    count = 0
    for word in _word_pattern().finditer(text):
        if word.group() not in _RAW_OPERATORS:
            count += 1
            if count > MAX_QUERY_TERMS:
                raise InvalidQueryError(
                    f"a raw FTS5 query may hold at most {MAX_QUERY_TERMS} words "
                    "(sqlmem.search.query.MAX_QUERY_TERMS; AND, OR, NOT and NEAR not counted); "
                    "use mode 'any' or 'all' for longer text, which keep the rarest words"
                )


def phrases(terms: Sequence[Term], joiner: str) -> str | None:
    """`terms` as quoted FTS5 phrases joined by `joiner`; None when there are none.

    A phrase holds letters, digits, marks and spaces only (see `terms`), so quoting
    cannot be broken out of.
    """
    if not terms:
        return None
    return joiner.join(f'"{t.phrase}"' for t in terms)


def _first(token: object) -> str:
    # apsw yields a str, or a tuple of (token, colocated...) when synonyms are present.
    return token if isinstance(token, str) else str(token[0])  # type: ignore[index]


@cache
def compiler_for(tokenizer: str) -> QueryCompiler:
    return QueryCompiler(tokenizer)
