"""Scripts written without spaces between words: one table for search and for budgets.

Two rules need to know these scripts, and they used to keep a copy each that drifted
apart (in four ranges):

- search (`sqlmem.search.query.segment`): FTS5's unicode61 tokenizer would index a run
  of such characters as one giant token, so each character is set apart with spaces,
  in the index and in the query. Which characters are segmented is part of every
  stored file's index: a range added here would stop old files from matching what they
  hold, so the `segmented` column never changes for a released range.
- token budgets (`sqlmem.context.tokens.estimate_tokens`): such characters cost about one
  model token each, not one per four characters.

The four ranges only the estimator counts (`segmented=False`: Hangul jamo, CJK
punctuation, and the full-width forms on either side of half-width Katakana) cost a model
a token or so each, but search has never segmented them: every stored index was built
without, and segmenting them now would change what old files match.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["DENSE_CLASS", "SCRIPTS", "SEGMENTED_CLASS", "ScriptRange"]


class ScriptRange(NamedTuple):
    """An inclusive range of code points, and whether search segments it (see above)."""

    first: str
    last: str
    name: str
    segmented: bool


SCRIPTS: tuple[ScriptRange, ...] = (
    ScriptRange("\u0e00", "\u0eff", "Thai, Lao", True),
    ScriptRange("\u1000", "\u109f", "Myanmar", True),
    ScriptRange("\u1100", "\u11ff", "Hangul jamo", False),
    ScriptRange("\u1780", "\u17ff", "Khmer", True),
    ScriptRange("\u2e80", "\u2fdf", "CJK radicals", True),
    ScriptRange("\u3000", "\u303f", "CJK punctuation", False),
    ScriptRange("\u3040", "\u30ff", "Hiragana, Katakana", True),
    ScriptRange("\u3100", "\u312f", "Bopomofo", True),
    ScriptRange("\u3130", "\u318f", "Hangul compatibility jamo", True),
    ScriptRange("\u31f0", "\u31ff", "Katakana extensions", True),
    ScriptRange("\u3400", "\u4dbf", "CJK extension A", True),
    ScriptRange("\u4e00", "\u9fff", "CJK unified ideographs", True),
    ScriptRange("\uac00", "\ud7af", "Hangul syllables", True),
    ScriptRange("\uf900", "\ufaff", "CJK compatibility ideographs", True),
    ScriptRange("\uff00", "\uff65", "full-width forms", False),
    ScriptRange("\uff66", "\uff9f", "half-width Katakana", True),
    ScriptRange("\uffa0", "\uffef", "half-width Hangul, full-width signs", False),
    ScriptRange("\U00020000", "\U0003134f", "CJK extensions B-G", True),
)


def _char_class(ranges: tuple[ScriptRange, ...]) -> str:
    # No endpoint is a character special inside [...] (], \, ^, -): no escaping needed.
    return "".join(f"{r.first}-{r.last}" for r in ranges)


#: The inside of a regex [...] matching the characters search segments.
SEGMENTED_CLASS = _char_class(tuple(r for r in SCRIPTS if r.segmented))
#: The inside of a regex [...] matching the characters a token budget counts one each.
DENSE_CLASS = _char_class(SCRIPTS)
