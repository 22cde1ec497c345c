"""Deterministic chat-like text: the same seed gives the same messages, facts and queries.

Words follow a Zipf-Mandelbrot law over a vocabulary whose head is real English function
and chat words ("the", "you", "is", ...) and whose body is pronounceable made-up words, so
a few words are in most documents and most words are in very few. A rare tail of
capitalised names appears in about one message in seven. Message lengths are log-normal:
a few words to a few hundred. Everything comes from one `numpy` generator per corpus.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["Corpus", "FactRow", "MessageRow"]


def _words(text: str) -> list[str]:
    return text.split()


_HEAD = _words(
    "the i you to a and is it that of in my for me what this be on have do can with "
    "not so are was just but we your how if at about like get will know no yes there "
    "they one all would from think up out some when want should thanks please could "
    "time need make good help more also did here then make now see use any work day "
    "way new right why which really going still back first much well try sure let said "
    "look last long great little other because very after thing tell find give most "
    "question idea today tomorrow week home file code email meeting project problem "
    "answer message phone call order plan list note name number question team client"
)
_ONSETS = _words("b c d f g h j k l m n p r s t v w z br cr dr fl gr pl pr sh st th tr ch")
_VOWELS = _words("a e i o u ai ea ee ia io oa ou")
_CODAS = ["", "", "", "n", "r", "l", "s", "t", "m", "nd", "rk", "st", "x"]

#: Zipf-Mandelbrot parameters: p(rank) ~ 1 / (rank + Q) ** S.
S, Q = 1.05, 2.7


@dataclass(frozen=True)
class MessageRow:
    session: int
    role: str
    content: str


@dataclass(frozen=True)
class FactRow:
    id: str
    content: str
    tag: str
    category: str


class Corpus:
    """A vocabulary, name list and word distribution, built from `seed`."""

    def __init__(self, seed: int = 20240601, vocab_size: int = 30_000, names: int = 3_000):
        self.seed = seed
        rng = np.random.default_rng(seed)
        self.words = _make_words(rng, vocab_size)
        self.names = _make_names(rng, names, set(self.words))
        ranks = np.arange(vocab_size, dtype=np.float64)
        weights = 1.0 / (ranks + Q) ** S
        self.probs = weights / weights.sum()

    @cached_property
    def _cdf(self) -> np.ndarray:
        return np.cumsum(self.probs)

    def _draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        idx = np.searchsorted(self._cdf, rng.random(n), side="right")
        return np.minimum(idx, len(self.words) - 1)

    def texts(self, rng: np.random.Generator, lengths: np.ndarray, name_rate: float) -> list[str]:
        """One text per length: sentences of Zipf words, sometimes naming someone."""
        total = int(lengths.sum())
        idx = self._draw(rng, total)
        names = rng.integers(0, len(self.names), size=len(lengths))
        with_name = rng.random(len(lengths)) < name_rate
        questions = rng.random(len(lengths)) < 0.3
        words = self.words
        out: list[str] = []
        pos = 0
        for i, n in enumerate(lengths.tolist()):
            toks = [words[j] for j in idx[pos : pos + n].tolist()]
            pos += n
            if with_name[i]:
                toks.insert(int(idx[pos - 1]) % n, self.names[int(names[i])])
            for cut in range(11, len(toks), 12):
                toks[cut] += "."
            toks[0] = toks[0].capitalize()
            out.append(" ".join(toks) + ("?" if questions[i] else "."))
        return out

    def messages(self, count: int, sessions: int, seed: int) -> list[MessageRow]:
        """Chat messages spread round-robin over `sessions`, user and assistant turns."""
        rng = np.random.default_rng([self.seed, seed])
        lengths = np.clip(rng.lognormal(mean=2.9, sigma=0.9, size=count), 2, 300).astype(int)
        texts = self.texts(rng, lengths, name_rate=0.15)
        return [
            MessageRow(i % sessions, "user" if (i // sessions) % 2 == 0 else "assistant", t)
            for i, t in enumerate(texts)
        ]

    def session_messages(self, count: int, seed: int) -> list[str]:
        rng = np.random.default_rng([self.seed, seed])
        lengths = np.clip(rng.lognormal(mean=2.9, sigma=0.9, size=count), 2, 300).astype(int)
        return self.texts(rng, lengths, name_rate=0.15)

    def facts(self, count: int, seed: int, prefix: str = "f") -> list[FactRow]:
        """Short statements (5-60 words); one of 50 tags and 50 categories each (2% apiece)."""
        rng = np.random.default_rng([self.seed, seed])
        lengths = np.clip(rng.lognormal(mean=2.5, sigma=0.5, size=count), 5, 60).astype(int)
        texts = self.texts(rng, lengths, name_rate=0.25)
        tags = rng.integers(0, 50, size=count).tolist()
        cats = rng.integers(0, 50, size=count).tolist()
        return [
            FactRow(f"{prefix}{i:07d}", t, f"tag{tags[i]:02d}", f"area/topic{cats[i]:02d}")
            for i, t in enumerate(texts)
        ]

    def queries(self, count: int, seed: int) -> list[tuple[str, str]]:
        """(query, kind) pairs of 1-3 words; each word common, mid-frequency or rare."""
        rng = np.random.default_rng([self.seed, seed])
        vocab = len(self.words)
        tail = self.probs[3000:] / self.probs[3000:].sum()
        out = []
        for _ in range(count):
            n = int(rng.integers(1, 4))
            words, kinds = [], []
            for _ in range(n):
                kind = ("common", "mid", "rare")[int(rng.integers(0, 3))]
                if kind == "common":
                    words.append(self.words[int(rng.integers(0, 100))])
                elif kind == "mid":
                    words.append(self.words[int(rng.integers(100, 3000))])
                elif rng.random() < 0.5:
                    words.append(self.names[int(rng.integers(0, len(self.names)))])
                else:
                    words.append(self.words[3000 + int(rng.choice(vocab - 3000, p=tail))])
                kinds.append(kind)
            out.append((" ".join(words), "+".join(kinds)))
        return out


def _syllable(rng: np.random.Generator) -> str:
    return (
        _ONSETS[int(rng.integers(len(_ONSETS)))]
        + _VOWELS[int(rng.integers(len(_VOWELS)))]
        + _CODAS[int(rng.integers(len(_CODAS)))]
    )


def _make_words(rng: np.random.Generator, size: int) -> list[str]:
    words = list(dict.fromkeys(_HEAD))
    seen = set(words)
    made: list[str] = []
    while len(words) + len(made) < size:
        word = "".join(_syllable(rng) for _ in range(int(rng.choice(3, p=(0.2, 0.6, 0.2))) + 1))
        if word not in seen:
            seen.add(word)
            made.append(word)
    # Shorter words are the more frequent ones, as in real languages.
    return words + sorted(made, key=len)


def _make_names(rng: np.random.Generator, size: int, taken: set[str]) -> list[str]:
    names: list[str] = []
    seen = set(taken)
    while len(names) < size:
        name = "".join(_syllable(rng) for _ in range(int(rng.integers(2, 4))))
        if name not in seen:
            seen.add(name)
            names.append(name.capitalize())
    return names
