"""Vocabulary and token counting shared by ``mx.contrib.text`` and ``gluon.contrib.data.text``
(MXNet's WikiText datasets index their tokens with ``mx.contrib.text``'s Vocabulary; the class
lives here, in the gluon layer, so both can use it; :mod:`hybridnet.contrib.text.vocab` is its
public home).

A :class:`Vocabulary` puts the unknown token at index 0, then the reserved tokens, then the
counted tokens by descending frequency (ties alphabetical), those below ``min_freq`` or past
``most_freq_count`` left out.
"""
from __future__ import annotations

import collections
import re
from typing import Any, Dict, List, Optional, Sequence, Union

__all__ = ["Vocabulary", "UNKNOWN_IDX", "count_tokens_from_str"]


def count_tokens_from_str(source_str: str, token_delim: str = " ", seq_delim: str = "\n",
                          to_lower: bool = False,
                          counter_to_update: Optional[collections.Counter] = None
                          ) -> collections.Counter:
    """Count the tokens of ``source_str`` split at ``token_delim`` or ``seq_delim`` (regular
    expressions), lower-cased with ``to_lower``, into a new or the given Counter."""
    tokens = [t for t in re.split(token_delim + "|" + seq_delim, source_str) if t]
    if to_lower:
        tokens = [t.lower() for t in tokens]
    if counter_to_update is None:
        return collections.Counter(tokens)
    counter_to_update.update(tokens)
    return counter_to_update


UNKNOWN_IDX = 0


class Vocabulary:
    """Indexes the tokens of ``counter`` (a ``collections.Counter``); see the module docstring."""

    def __init__(self, counter: Optional[collections.Counter] = None,
                 most_freq_count: Optional[int] = None, min_freq: int = 1,
                 unknown_token: Any = "<unk>", reserved_tokens: Optional[List[Any]] = None):
        if min_freq <= 0:
            raise ValueError("Vocabulary: min_freq must be a positive value")
        if reserved_tokens is not None:
            if unknown_token in reserved_tokens:
                raise ValueError("Vocabulary: reserved_tokens cannot contain unknown_token")
            if len(set(reserved_tokens)) != len(reserved_tokens):
                raise ValueError("Vocabulary: reserved_tokens cannot contain duplicates")
        self._unknown_token = unknown_token
        self._reserved_tokens = list(reserved_tokens) if reserved_tokens is not None else None
        self._idx_to_token: List[Any] = [unknown_token] + list(reserved_tokens or [])
        self._token_to_idx: Dict[Any, int] = {t: i for i, t in enumerate(self._idx_to_token)}
        if counter is not None:
            self._index_counter_keys(counter, most_freq_count, min_freq)

    def _index_counter_keys(self, counter: collections.Counter, most_freq_count: Optional[int],
                            min_freq: int) -> None:
        if not isinstance(counter, collections.Counter):
            raise TypeError("Vocabulary: counter must be a collections.Counter")
        special = set(self._idx_to_token)
        token_freqs = sorted(counter.items(), key=lambda x: x[0])
        token_freqs.sort(key=lambda x: x[1], reverse=True)
        cap = len(special) + (len(counter) if most_freq_count is None else most_freq_count)
        for token, freq in token_freqs:
            if freq < min_freq or len(self._idx_to_token) == cap:
                break
            if token not in special:
                self._idx_to_token.append(token)
                self._token_to_idx[token] = len(self._idx_to_token) - 1

    def __len__(self) -> int:
        return len(self._idx_to_token)

    @property
    def token_to_idx(self) -> Dict[Any, int]:
        return self._token_to_idx

    @property
    def idx_to_token(self) -> List[Any]:
        return self._idx_to_token

    @property
    def unknown_token(self) -> Any:
        return self._unknown_token

    @property
    def reserved_tokens(self) -> Optional[List[Any]]:
        return self._reserved_tokens

    def to_indices(self, tokens: Union[Any, List[Any]]) -> Union[int, List[int]]:
        """Indices of tokens (unknown ones give 0); a single token gives a single index."""
        single = not isinstance(tokens, list)
        items = [tokens] if single else tokens
        indices = [self._token_to_idx.get(t, UNKNOWN_IDX) for t in items]
        return indices[0] if single else indices

    def to_tokens(self, indices: Union[int, Sequence[int]]) -> Union[Any, List[Any]]:
        """Tokens of indices; an index outside the vocabulary is an error."""
        single = not isinstance(indices, list)
        items = [indices] if single else indices
        max_idx = len(self._idx_to_token) - 1
        tokens = []
        for idx in items:
            if not isinstance(idx, int) or idx < 0 or idx > max_idx:
                raise ValueError(f"Token index {idx!r} in the provided indices is invalid "
                                 f"(the vocabulary has {max_idx + 1} tokens)")
            tokens.append(self._idx_to_token[idx])
        return tokens[0] if single else tokens
