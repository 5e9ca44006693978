"""How ``amp.init()`` makes the listed operators run in low precision.

MXNet 1.9.1 replaces ``nd.<op>``/``sym.<op>`` by wrappers that cast the inputs per its AMP lists.
hybridnet does the same one level down: every generated operator function hands its call to a
``dispatch`` kept in its own namespace (``ops.frontend``), and AMP swaps in a casting dispatch for
exactly the functions on its lists. So ``nd.FullyConnected``, ``F.FullyConnected`` in
``hybrid_forward``, ``sym.FullyConnected`` and the NDArray/Symbol methods all cast, while every
other operator call costs what it did before ``amp.init()``.

Why casts at dispatch rather than ``torch.autocast``: the casts must be *graph nodes*, because a
hybridized block traces ``hybrid_forward`` into a Symbol graph that is compiled, exported and
converted (MXNet records ``amp_cast``/``amp_multicast`` nodes in the same places); the lists must
be MXNet's (autocast has torch's own op lists, unrelated to MXNet operator names); and the choice
must hold for eager and hybridized runs alike. torch's CPU kernels exist for both float16 and
bfloat16 matmul/convolution, so both targets run on CPU; float16 is slow there (no fast CPU
float16 kernels), bfloat16 is the CPU choice as in MXNet (whose CPU AMP is bfloat16 only).

Eager NDArrays: float16/bfloat16/float32 inputs are cast with ``nd.amp_cast`` (recorded by
autograd, so gradients flow back to float32 parameters); float64 and integers are left alone.
Symbols: the node is built as usual, then rebuilt with ``amp_cast`` on every non-auxiliary input
(the operator's auto-created weights included), as MXNet's symbol wrapper does.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ... import ndarray as nd
from ... import symbol as sym
from ...base import BFLOAT16_NP
from ...ir.graph import Node
from ...ndarray import NDArray
from ...symbol import Symbol

__all__ = ["cast_dispatch", "widest_dispatch", "loss_scale_dispatch", "loss_warning_dispatch"]

Dispatch = Callable[..., Any]
_AMP_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), BFLOAT16_NP)


def _nd_cast(x: NDArray, dtype: str, np_dtype: Any) -> NDArray:
    dt = x.dtype
    if dt == np_dtype or np.dtype(dt) not in _AMP_DTYPES:
        return x
    return nd.amp_cast(x, dtype=dtype)


def _np_of(dtype: str) -> Any:
    return BFLOAT16_NP if dtype == "bfloat16" else np.dtype(dtype)


def cast_dispatch(inner: Dispatch, dtype: str, keep_fp32: Optional[Sequence[str]] = None,
                  condition: Optional[tuple] = None) -> Dispatch:
    """A dispatch casting the operator's inputs to ``dtype`` before ``inner`` runs it.

    ``keep_fp32``: per input position, '' = cast, a name = leave as is (MXNet's
    ``BF16_USE_FP32_PARAMS``). ``condition``: (attribute, values); cast only when the call passed
    the attribute with one of the values (MXNet's conditional float32 operators).
    """
    np_dtype = _np_of(dtype)

    def dispatch(op: Any, inputs: Sequence, attrs: dict, out: Any = None, name: Any = None,
                 hint: Any = None, attr: Any = None) -> Any:
        if condition is not None:
            key, values = condition
            if key not in attrs or str(attrs[key]) not in values:
                return inner(op, inputs, attrs, out, name, hint, attr)
        if any(isinstance(x, Symbol) for x in inputs):
            res = inner(op, inputs, attrs, out, name, hint, attr)
            return _recast_symbol_inputs(res, dtype, keep_fp32)
        cast = [x if (x.__class__ is not NDArray and not isinstance(x, NDArray))
                or (keep_fp32 is not None and i < len(keep_fp32) and keep_fp32[i])
                else _nd_cast(x, dtype, np_dtype) for i, x in enumerate(inputs)]
        return inner(op, tuple(cast), attrs, out, name, hint, attr)
    return dispatch


def _recast_symbol_inputs(res: Symbol, dtype: str, keep_fp32: Optional[Sequence[str]]) -> Symbol:
    """``res``'s node again, with ``amp_cast`` on each non-auxiliary input (MXNet's wrapper)."""
    node = res._entries[0][0]
    aux = set(node.aux_slots())
    entries = []
    for i, entry in enumerate(node.inputs):
        if i in aux or (keep_fp32 is not None and i < len(keep_fp32) and keep_fp32[i]):
            entries.append(entry)
        else:
            entries.append(sym.amp_cast(Symbol([entry]), dtype=dtype)._entries[0])
    new = Node(node.op, node.name, node.attrs, entries)
    return Symbol([(new, k) for _, k in res._entries])


def widest_dispatch(inner: Dispatch, dtype: str) -> Dispatch:
    """A dispatch giving all inputs one type: float32 if any NDArray input is float32 (the
    ``dtype`` ones are cast up), or, with Symbol inputs, an ``amp_multicast`` node over them."""
    np_dtype = _np_of(dtype)

    def dispatch(op: Any, inputs: Sequence, attrs: dict, out: Any = None, name: Any = None,
                 hint: Any = None, attr: Any = None) -> Any:
        slots = [i for i, x in enumerate(inputs) if isinstance(x, (NDArray, Symbol))]
        if not slots:
            return inner(op, inputs, attrs, out, name, hint, attr)
        new = list(inputs)
        if any(isinstance(inputs[i], Symbol) for i in slots):
            cast = sym.amp_multicast(*[inputs[i] for i in slots], num_outputs=len(slots))
            for k, i in enumerate(slots):
                new[i] = cast[k] if len(slots) > 1 else cast
        elif any(inputs[i].dtype == np.float32 for i in slots):
            for i in slots:
                if inputs[i].dtype == np_dtype:
                    new[i] = nd.amp_cast(inputs[i], dtype="float32")
        return inner(op, tuple(new), attrs, out, name, hint, attr)
    return dispatch


def loss_scale_dispatch(inner: Dispatch, scaler: Any) -> Dispatch:
    """Eager loss-output operators (``SoftmaxOutput``...): their ``grad_scale`` is multiplied
    by the current loss scale, as MXNet's AMP does for ``nd``."""
    def dispatch(op: Any, inputs: Sequence, attrs: dict, out: Any = None, name: Any = None,
                 hint: Any = None, attr: Any = None) -> Any:
        attrs = dict(attrs)
        attrs["grad_scale"] = float(attrs.get("grad_scale", 1.0)) * scaler.loss_scale
        return inner(op, inputs, attrs, out, name, hint, attr)
    return dispatch


def loss_warning_dispatch(inner: Dispatch, fname: str) -> Dispatch:
    """Symbolic loss-output operators: MXNet warns that loss scaling does not reach them."""
    def dispatch(op: Any, inputs: Sequence, attrs: dict, out: Any = None, name: Any = None,
                 hint: Any = None, attr: Any = None) -> Any:
        logging.warning("%s does not support dynamic loss scaling in symbolic and hybridized "
                        "execution.", fname)
        return inner(op, inputs, attrs, out, name, hint, attr)
    return dispatch
