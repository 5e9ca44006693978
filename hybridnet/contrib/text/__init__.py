"""``mx.contrib.text``: token counting (:mod:`.utils`), vocabularies (:mod:`.vocab`) and token
embeddings loaded from local files (:mod:`.embedding`), as in MXNet 1.9.1."""
from __future__ import annotations

from . import embedding, utils, vocab

__all__ = ["embedding", "utils", "vocab"]
