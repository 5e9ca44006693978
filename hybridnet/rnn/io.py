"""Bucketed language-model data for the legacy ``mx.rnn`` API (MXNet 1.9.1 ``mx.rnn.io``)."""
from __future__ import annotations

import bisect
import random
from typing import Dict, Hashable, List, Optional, Sequence, Tuple

import numpy as np

from .. import ndarray
from ..io import DataBatch, DataDesc, DataIter

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(sentences: Sequence[Sequence[Hashable]], vocab: Optional[Dict] = None,
                     invalid_label: int = -1, invalid_key: str = '\n', start_label: int = 0,
                     unknown_token: Optional[str] = None) -> Tuple[List[List[int]], Dict]:
    """Map token lists to integer lists.  Without ``vocab`` a new vocabulary is built
    (``invalid_key -> invalid_label`` plus ids from ``start_label``, skipping
    ``invalid_label``); with one, unknown tokens map to ``unknown_token`` (added on first use)
    and are an error when ``unknown_token`` is None."""
    building = vocab is None
    if building:
        vocab = {invalid_key: invalid_label}
    next_id = start_label
    encoded = []
    for sentence in sentences:
        ids = []
        for word in sentence:
            if word not in vocab:
                if not (building or unknown_token):
                    raise KeyError(f"Unknown token {word!r}: it is not in vocab; pass "
                                   "unknown_token='<unk>' to map unknown tokens")
                if next_id == invalid_label:
                    next_id += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = next_id
                next_id += 1
            ids.append(vocab[word])
        encoded.append(ids)
    return encoded, vocab


class BucketSentenceIter(DataIter):
    """Batches of equal-length sentences for a BucketingModule: each sentence goes to the
    smallest bucket that holds it (padded with ``invalid_label``); the label is the sentence
    shifted left by one.  ``layout`` 'NT' gives (batch, length), 'TN' (length, batch)."""

    def __init__(self, sentences: Sequence[Sequence[int]], batch_size: int,
                 buckets: Optional[List[int]] = None, invalid_label: int = -1,
                 data_name: str = 'data', label_name: str = 'softmax_label',
                 dtype: str = 'float32', layout: str = 'NT') -> None:
        super().__init__(batch_size)
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [length for length, n in enumerate(counts) if n >= batch_size]
        buckets = sorted(buckets)
        per_bucket: List[list] = [[] for _ in buckets]
        used = [False] * len(buckets)
        discarded = 0
        for sentence in sentences:
            b = bisect.bisect_left(buckets, len(sentence))
            if b == len(buckets):
                discarded += 1
                continue
            used[b] = True
            row = np.full((buckets[b],), invalid_label, dtype=dtype)
            row[:len(sentence)] = sentence
            per_bucket[b].append(row)
        print("WARNING: discarded %d sentences longer than the largest bucket." % discarded)
        self.buckets = [length for length, u in zip(buckets, used) if u]
        self.data = [np.asarray(rows, dtype=dtype) for rows in per_bucket if rows]
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.layout = layout
        self.major_axis = layout.find('N')
        if self.major_axis not in (0, 1):
            raise ValueError(f"Invalid layout {layout!r}: must be 'NT' (batch major) or 'TN' "
                             "(time major)")
        self.default_bucket_key = max(self.buckets)
        shape = (batch_size, self.default_bucket_key)
        if self.major_axis == 1:
            shape = shape[::-1]
        self.provide_data = [DataDesc(name=data_name, shape=shape, layout=layout)]
        self.provide_label = [DataDesc(name=label_name, shape=shape, layout=layout)]
        self.idx = [(i, j) for i, rows in enumerate(self.data)
                    for j in range(0, len(rows) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.nddata: list = []
        self.ndlabel: list = []
        self.reset()

    def reset(self) -> None:
        """Shuffle the batch order and the sentences within each bucket."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for rows in self.data:
            np.random.shuffle(rows)
        self.nddata, self.ndlabel = [], []
        for rows in self.data:
            label = np.empty_like(rows)
            label[:, :-1] = rows[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(ndarray.array(rows, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))

    def next(self) -> DataBatch:
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j:j + self.batch_size]
        label = self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(name=self.data_name, shape=data.shape,
                                                layout=self.layout)],
                         provide_label=[DataDesc(name=self.label_name, shape=label.shape,
                                                 layout=self.layout)])
