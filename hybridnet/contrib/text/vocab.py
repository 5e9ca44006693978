"""``mx.contrib.text.vocab``: :class:`Vocabulary`, token <-> index maps built from token counts
(index 0 the unknown token, then reserved tokens, then tokens by descending frequency)."""
from __future__ import annotations

from ...gluon.contrib.data._text_vocab import UNKNOWN_IDX, Vocabulary

__all__ = ["Vocabulary", "UNKNOWN_IDX"]
