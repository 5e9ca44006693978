"""``mx.contrib``: MXNet's experimental namespace.

``mx.contrib.nd`` / ``mx.contrib.ndarray`` and ``mx.contrib.sym`` / ``mx.contrib.symbol`` are the
contrib operator namespaces (the same modules as ``mx.nd.contrib`` and ``mx.sym.contrib``, as in
MXNet, where contrib operators are registered into both). ``mx.contrib.amp`` is MXNet's automatic
mixed precision API (``amp.init``, loss scaling, graph conversion). ``autograd`` (MXNet's first
autograd API), ``io`` (DataLoaderIter), ``tensorboard`` (LogMetricsCallback) and ``text``
(vocabularies, embeddings) are imported as in MXNet, and ``onnx`` (ONNX import: ``import_model``,
``import_to_gluon``, ``get_model_metadata``); ``svrg_optimization`` on request.
"""
from __future__ import annotations

from ..ndarray import contrib as ndarray
from ..ndarray import contrib as nd
from ..symbol import contrib as symbol
from ..symbol import contrib as sym
from . import amp
from . import autograd, io, onnx, tensorboard, text
from . import quantization
from . import quantization as quant

__all__ = ["ndarray", "nd", "symbol", "sym", "amp", "autograd", "io", "onnx", "tensorboard", "text",
           "quantization", "quant"]
