"""``gluon.contrib.data.text``: the WikiText language-modelling datasets (MXNet 1.9.1's).

``WikiText2``/``WikiText103`` read ``wiki.{train,valid,test}.tokens`` from ``root`` (hybridnet
does not download: put the unpacked files there). Each line's tokens get ``<eos>`` appended;
the token indices are cut into rows of ``seq_len``, the label of each position being the next
token. Without ``vocab`` the vocabulary is built from the segment read (MXNet's
``mx.contrib.text.vocab.Vocabulary`` with ``<eos>`` reserved); pass the training set's
``vocabulary`` to index the validation and test segments with it.
"""
from __future__ import annotations

import os
from typing import Any, Optional, Tuple

import numpy as np

from ....base import MXNetError, data_dir
from ....ndarray import array as _nd_array
from ...data import dataset
from ._text_vocab import Vocabulary, count_tokens_from_str

__all__ = ["WikiText2", "WikiText103"]

EOS_TOKEN = "<eos>"
_FILES = {"train": "wiki.train.tokens", "validation": "wiki.valid.tokens",
          "test": "wiki.test.tokens"}


class _WikiText(dataset.Dataset):
    """Rows of ``seq_len`` token indices and their next-token labels."""

    def __init__(self, root: str, namespace: str, segment: str, vocab: Optional[Vocabulary],
                 seq_len: int):
        if segment not in _FILES:
            raise ValueError(f"{type(self).__name__}: segment must be one of {sorted(_FILES)}, "
                             f"got {segment!r}")
        self._root = os.path.expanduser(os.fspath(root))
        self._namespace = namespace
        self._segment = segment
        self._seq_len = seq_len
        self._vocab = vocab
        self._counter: Any = None
        self._get_data()

    @property
    def vocabulary(self) -> Optional[Vocabulary]:
        return self._vocab

    @property
    def frequencies(self) -> Any:
        return self._counter

    def _read_batch(self, filename: str) -> Tuple[np.ndarray, np.ndarray]:
        with open(filename, "r", encoding="utf8") as fin:
            content = fin.read()
        if not self._counter:
            self._counter = count_tokens_from_str(content)
        if not self._vocab:
            self._vocab = Vocabulary(counter=self._counter, reserved_tokens=[EOS_TOKEN])
        lines = [line.strip().split() for line in content.splitlines()]
        tokens = [t for line in lines if line for t in line + [EOS_TOKEN]]
        indices = self._vocab.to_indices(tokens)
        return np.array(indices[:-1], dtype=np.int32), np.array(indices[1:], dtype=np.int32)

    def _get_data(self) -> None:
        path = os.path.join(self._root, _FILES[self._segment])
        if not os.path.isfile(path):
            raise MXNetError(f"{type(self).__name__}: {path!r} not found. hybridnet cannot "
                             f"download datasets (no network access); unpack {self._namespace}'s "
                             f"archive (wiki.train/valid/test.tokens) into {self._root!r}")
        data, label = self._read_batch(path)
        n = len(data) // self._seq_len * self._seq_len
        self._data = _nd_array(data[:n], dtype="int32").reshape((-1, self._seq_len))
        self._label = _nd_array(label[:n], dtype="int32").reshape((-1, self._seq_len))

    def __getitem__(self, idx: int) -> Any:
        return self._data[idx], self._label[idx]

    def __len__(self) -> int:
        return len(self._label)


class WikiText2(_WikiText):
    """WikiText-2 (about 2M training tokens) from local files."""

    def __init__(self, root: str = os.path.join(data_dir(), "datasets", "wikitext-2"),
                 segment: str = "train", vocab: Optional[Vocabulary] = None, seq_len: int = 35):
        super().__init__(root, "wikitext-2", segment, vocab, seq_len)


class WikiText103(_WikiText):
    """WikiText-103 (about 103M training tokens) from local files."""

    def __init__(self, root: str = os.path.join(data_dir(), "datasets", "wikitext-103"),
                 segment: str = "train", vocab: Optional[Vocabulary] = None, seq_len: int = 35):
        super().__init__(root, "wikitext-103", segment, vocab, seq_len)
