"""``mx.contrib.text.embedding``: token embeddings (MXNet 1.9.1's).

:class:`CustomEmbedding` loads vectors from a local text file (``token v1 v2 ...`` per line);
:class:`CompositeEmbedding` concatenates embeddings over a :class:`~.vocab.Vocabulary`.
:class:`GloVe` and :class:`FastText` read their pretrained files from
``embedding_root/<glove|fasttext>/<file>``; hybridnet does not download them (no network), so a
missing file is an error naming the path to put it at. ``register``/``create`` use mx.registry.
"""
from __future__ import annotations

import logging
import os
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from ... import ndarray as nd
from ... import registry
from ...base import MXNetError, data_dir
from ...ndarray.ndarray import NDArray
from . import vocab
from .vocab import UNKNOWN_IDX

__all__ = ["register", "create", "get_pretrained_file_names", "GloVe", "FastText",
           "CustomEmbedding", "CompositeEmbedding"]


class _TokenEmbedding(vocab.Vocabulary):
    """A vocabulary with a vector per token (``idx_to_vec``, ``vec_len``)."""

    pretrained_file_names: Sequence[str] = ()

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._vec_len: Optional[int] = None
        self._idx_to_vec: Optional[NDArray] = None

    def _load_embedding(self, path: str, elem_delim: str, init_unknown_vec: Callable[..., NDArray],
                        encoding: str = "utf8") -> None:
        path = os.path.expanduser(path)
        if not os.path.isfile(path):
            raise ValueError(f"pretrained_file_path {path!r} is not a file: give the path of a "
                             f"token embedding text file")
        logging.info("Loading pre-trained token embedding vectors from %s", path)
        vec_len: Optional[int] = None
        rows: List[List[float]] = []
        seen: set = set()
        unknown_vec: Optional[List[float]] = None
        with open(path, "r", encoding=encoding) as f:
            for line_num, line in enumerate(f, 1):
                elems = line.rstrip().split(elem_delim)
                if len(elems) <= 1:
                    raise MXNetError(f"line {line_num} of {path!r}: expected 'token v1 v2 ...', "
                                     f"got {line.strip()[:60]!r}")
                token, values = elems[0], [float(v) for v in elems[1:]]
                if token == self.unknown_token and unknown_vec is None:
                    unknown_vec = values
                    seen.add(token)
                elif token in seen:
                    warnings.warn(f"line {line_num} of {path!r}: a second vector for token "
                                  f"{token!r} is skipped")
                elif len(values) == 1:
                    warnings.warn(f"line {line_num} of {path!r}: token {token!r} with a "
                                  f"1-dimensional vector is likely a header and is skipped")
                else:
                    if vec_len is None:
                        vec_len = len(values)
                    elif len(values) != vec_len:
                        raise MXNetError(f"line {line_num} of {path!r}: token {token!r} has "
                                         f"{len(values)} values, the tokens before it {vec_len}")
                    rows.append(values)
                    self._idx_to_token.append(token)
                    self._token_to_idx[token] = len(self._idx_to_token) - 1
                    seen.add(token)
        if vec_len is None:
            raise MXNetError(f"{path!r} holds no token vectors")
        n_special = len(self._idx_to_token) - len(rows)
        table = np.zeros((len(self._idx_to_token), vec_len), dtype=np.float32)
        table[n_special:] = np.asarray(rows, dtype=np.float32)
        self._vec_len = vec_len
        self._idx_to_vec = nd.array(table)
        if unknown_vec is None:
            self._idx_to_vec[UNKNOWN_IDX] = init_unknown_vec(shape=vec_len)
        else:
            self._idx_to_vec[UNKNOWN_IDX] = nd.array(unknown_vec)

    def _index_tokens_from_vocabulary(self, vocabulary: vocab.Vocabulary) -> None:
        self._token_to_idx = dict(vocabulary.token_to_idx)
        self._idx_to_token = list(vocabulary.idx_to_token)
        self._unknown_token = vocabulary.unknown_token
        self._reserved_tokens = list(vocabulary.reserved_tokens) \
            if vocabulary.reserved_tokens is not None else None

    def _set_idx_to_vec_by_embeddings(self, token_embeddings: Sequence["_TokenEmbedding"],
                                      vocab_len: int, vocab_idx_to_token: List[Any]) -> None:
        new_vec_len = sum(e.vec_len for e in token_embeddings)  # type: ignore[misc]
        new = nd.zeros(shape=(vocab_len, new_vec_len))
        col = 0
        for e in token_embeddings:
            end = col + e.vec_len  # type: ignore[operator]
            new[0, col:end] = e.idx_to_vec[0]  # type: ignore[index]
            if vocab_len > 1:
                new[1:, col:end] = e.get_vecs_by_tokens(list(vocab_idx_to_token[1:]))
            col = end
        self._vec_len = new_vec_len
        self._idx_to_vec = new

    def _build_embedding_for_vocabulary(self, vocabulary: Optional[vocab.Vocabulary]) -> None:
        if vocabulary is None:
            return
        if not isinstance(vocabulary, vocab.Vocabulary):
            raise TypeError("vocabulary must be an mx.contrib.text.vocab.Vocabulary")
        self._set_idx_to_vec_by_embeddings([self], len(vocabulary), vocabulary.idx_to_token)
        self._index_tokens_from_vocabulary(vocabulary)

    @property
    def vec_len(self) -> Optional[int]:
        return self._vec_len

    @property
    def idx_to_vec(self) -> Optional[NDArray]:
        return self._idx_to_vec

    def get_vecs_by_tokens(self, tokens: Union[Any, List[Any]],
                           lower_case_backup: bool = False) -> NDArray:
        """Vectors of tokens (unknown: the unknown token's vector); with ``lower_case_backup``
        a token not found is looked up again in lower case."""
        single = not isinstance(tokens, list)
        items = [tokens] if single else tokens
        if lower_case_backup:
            indices = [self.token_to_idx[t] if t in self.token_to_idx
                       else self.token_to_idx.get(t.lower(), UNKNOWN_IDX) for t in items]
        else:
            indices = [self.token_to_idx.get(t, UNKNOWN_IDX) for t in items]
        table = self.idx_to_vec
        vecs = nd.Embedding(nd.array(indices), table, input_dim=table.shape[0],  # type: ignore[union-attr]
                            output_dim=table.shape[1])  # type: ignore[union-attr]
        return vecs[0] if single else vecs

    def update_token_vectors(self, tokens: Union[Any, List[Any]], new_vectors: NDArray) -> None:
        """Replace the vectors of known tokens (the unknown token only when named)."""
        if self._idx_to_vec is None:
            raise MXNetError("update_token_vectors: this embedding has no vectors yet")
        if not isinstance(tokens, list):
            tokens = [tokens]
        if not isinstance(new_vectors, NDArray):
            raise TypeError("update_token_vectors: new_vectors must be an NDArray")
        if new_vectors.ndim == 1 and len(tokens) == 1:
            new_vectors = new_vectors.expand_dims(axis=0)
        if new_vectors.shape != (len(tokens), self.vec_len):
            raise ValueError(f"update_token_vectors: new_vectors has shape {new_vectors.shape}, "
                             f"expected ({len(tokens)}, {self.vec_len})")
        indices = []
        for token in tokens:
            if token not in self.token_to_idx:
                raise ValueError(f"Token {token!r} is unknown. To update the vector of unknown "
                                 f"tokens, name the unknown token {self.idx_to_token[UNKNOWN_IDX]!r} "
                                 f"in tokens explicitly")
            indices.append(self.token_to_idx[token])
        for row, i in enumerate(indices):
            self._idx_to_vec[i] = new_vectors[row]


def register(embedding_cls: type) -> type:
    """Register a token embedding class under its lower-case name (for :func:`create`)."""
    return registry.get_register_func(_TokenEmbedding, "token embedding")(embedding_cls)


def create(embedding_name: str, **kwargs: Any) -> _TokenEmbedding:
    """Make the registered embedding ``embedding_name`` (e.g. 'glove') with ``kwargs``."""
    return registry.get_create_func(_TokenEmbedding, "token embedding")(embedding_name, **kwargs)


def get_pretrained_file_names(embedding_name: Optional[str] = None) -> Union[list, Dict[str, list]]:
    """The pretrained file names of one registered embedding, or of all of them."""
    reg = registry.get_registry(_TokenEmbedding)
    if embedding_name is not None:
        if embedding_name not in reg:
            raise KeyError(f"Cannot find embedding_name {embedding_name!r}; known: {sorted(reg)}")
        return list(reg[embedding_name].pretrained_file_names)
    return {name: list(cls.pretrained_file_names) for name, cls in reg.items()}


def _pretrained_path(cls: type, embedding_root: str, file_name: str) -> str:
    if file_name not in cls.pretrained_file_names:  # type: ignore[attr-defined]
        raise KeyError(f"Cannot find pretrained file {file_name!r} for token embedding "
                       f"{cls.__name__.lower()}; valid: {', '.join(cls.pretrained_file_names)}")  # type: ignore[attr-defined]
    path = os.path.join(os.path.expanduser(embedding_root), cls.__name__.lower(), file_name)
    if not os.path.isfile(path):
        raise MXNetError(f"{cls.__name__}: {path!r} does not exist. hybridnet does not download "
                         f"pretrained embeddings; put the unpacked {file_name} there, or load any "
                         f"local file with CustomEmbedding")
    return path


@register
class GloVe(_TokenEmbedding):
    """GloVe vectors from ``embedding_root/glove/<pretrained_file_name>`` (a local file)."""

    pretrained_file_names = tuple(
        ["glove.42B.300d.txt", "glove.840B.300d.txt"]
        + [f"glove.6B.{d}d.txt" for d in (50, 100, 200, 300)]
        + [f"glove.twitter.27B.{d}d.txt" for d in (25, 50, 100, 200)])

    def __init__(self, pretrained_file_name: str = "glove.840B.300d.txt",
                 embedding_root: str = os.path.join(data_dir(), "embeddings"),
                 init_unknown_vec: Callable[..., NDArray] = nd.zeros,
                 vocabulary: Optional[vocab.Vocabulary] = None, **kwargs: Any):
        path = _pretrained_path(GloVe, embedding_root, pretrained_file_name)
        super().__init__(**kwargs)
        self._load_embedding(path, " ", init_unknown_vec)
        self._build_embedding_for_vocabulary(vocabulary)


@register
class FastText(_TokenEmbedding):
    """fastText vectors from ``embedding_root/fasttext/<pretrained_file_name>`` (local)."""

    pretrained_file_names = ("wiki.simple.vec", "wiki.en.vec", "crawl-300d-2M.vec",
                             "wiki-news-300d-1M.vec", "wiki-news-300d-1M-subword.vec")

    def __init__(self, pretrained_file_name: str = "wiki.simple.vec",
                 embedding_root: str = os.path.join(data_dir(), "embeddings"),
                 init_unknown_vec: Callable[..., NDArray] = nd.zeros,
                 vocabulary: Optional[vocab.Vocabulary] = None, **kwargs: Any):
        path = _pretrained_path(FastText, embedding_root, pretrained_file_name)
        super().__init__(**kwargs)
        self._load_embedding(path, " ", init_unknown_vec)
        self._build_embedding_for_vocabulary(vocabulary)


class CustomEmbedding(_TokenEmbedding):
    """Vectors from a local text file: ``token<elem_delim>v1<elem_delim>v2...`` per line."""

    def __init__(self, pretrained_file_path: str, elem_delim: str = " ", encoding: str = "utf8",
                 init_unknown_vec: Callable[..., NDArray] = nd.zeros,
                 vocabulary: Optional[vocab.Vocabulary] = None, **kwargs: Any):
        super().__init__(**kwargs)
        self._load_embedding(pretrained_file_path, elem_delim, init_unknown_vec, encoding)
        self._build_embedding_for_vocabulary(vocabulary)


class CompositeEmbedding(_TokenEmbedding):
    """The vocabulary's tokens with the concatenated vectors of ``token_embeddings``."""

    def __init__(self, vocabulary: vocab.Vocabulary,
                 token_embeddings: Union[_TokenEmbedding, List[_TokenEmbedding]]):
        if not isinstance(vocabulary, vocab.Vocabulary):
            raise TypeError("CompositeEmbedding: vocabulary must be a Vocabulary")
        if not isinstance(token_embeddings, list):
            token_embeddings = [token_embeddings]
        for e in token_embeddings:
            if not isinstance(e, _TokenEmbedding):
                raise TypeError("CompositeEmbedding: token_embeddings must be token embeddings")
        super().__init__()
        self._index_tokens_from_vocabulary(vocabulary)
        self._set_idx_to_vec_by_embeddings(token_embeddings, len(self), self.idx_to_token)
