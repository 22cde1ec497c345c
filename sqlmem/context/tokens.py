"""A dependency-free token estimate, good enough to keep a prompt inside a budget.

Exact counts need the model's own tokenizer (tiktoken, sentencepiece, ...), which sqlmem
does not depend on and which differs between models. The helpers only need to stay under a
budget, so they take any `Callable[[str], int]` and default to `estimate_tokens`:

- Text in scripts written with spaces (English, other Latin, Cyrillic, ...) costs about one
  token per 4 characters with BPE tokenizers of the GPT/Llama families, so it is counted as
  `ceil(chars / 4)`.
- Chinese, Japanese, Korean and Thai run about one token per character (often more for rare
  characters), so `ceil(len / 4)` would undercount them fourfold and overflow the budget.
  Those characters count 1 token each; the rest of the text is counted at 4 characters a
  token.

Limits: it is an estimate. Code, numbers, URLs and emoji usually cost more than 1 token per
4 characters, so callers close to a model's hard limit should leave headroom or pass the
model's real tokenizer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from ..search.scripts import DENSE_CLASS

__all__ = ["CHARS_PER_TOKEN", "Estimator", "dense_count", "estimate_tokens"]

Estimator = Callable[[str], int]

#: Characters per token for text written with spaces (the usual BPE rule of thumb).
CHARS_PER_TOKEN = 4

# Scripts that cost about one token per character (the table search segments, plus
# CJK punctuation and full-width forms: see sqlmem.search.scripts).
_DENSE = re.compile(f"[{DENSE_CLASS}]")


def estimate_tokens(text: str) -> int:
    """Estimated tokens in `text`: 1 per CJK/Thai character, 1 per 4 other characters."""
    if not text:
        return 0
    dense = len(_DENSE.findall(text))
    return dense + math.ceil((len(text) - dense) / CHARS_PER_TOKEN)


def dense_count(text: str) -> int:
    """How many characters of `text` count a token each: `estimate_tokens(text)` is
    `dense_count(text) + ceil((len(text) - dense_count(text)) / CHARS_PER_TOKEN)`, and
    the count adds up over concatenated pieces (the memory pack sums it per line)."""
    return len(_DENSE.findall(text))
