"""``mx.contrib.text.utils``: counting tokens in a string (``count_tokens_from_str``)."""
from __future__ import annotations

from ...gluon.contrib.data._text_vocab import count_tokens_from_str

__all__ = ["count_tokens_from_str"]
