"""``mx.symbol_doc``: how MXNet assembles the docstring of a generated ``mx.sym`` function
(the Symbol counterpart of :mod:`hybridnet.ndarray_doc`)."""
from __future__ import annotations

import re
from typing import Optional, Sequence

from .ndarray_doc import _extra_examples, build_param_doc

__all__ = ["SymbolDoc"]


class SymbolDoc:
    """Base of the ``<Op>Doc`` classes whose docstrings hold extra examples for ``sym.<Op>``."""

    @staticmethod
    def get_output_shape(sym: object, **input_shapes: object) -> dict:
        """``{output name: shape}`` of ``sym`` for the given input shapes."""
        _, s_outputs, _ = sym.infer_shape(**input_shapes)  # type: ignore[attr-defined]
        return dict(zip(sym.list_outputs(), s_outputs))  # type: ignore[attr-defined]


def _build_doc(func_name: str, desc: str, arg_names: Sequence[str], arg_types: Sequence[str],
               arg_desc: Sequence[str], key_var_num_args: Optional[str] = None,
               ret_type: Optional[str] = None) -> str:
    """The docstring of a symbolic function (MXNet's layout)."""
    doc = (f"{desc}\n\n{build_param_doc(arg_names, arg_types, arg_desc)}\n"
           "name : string, optional.\n    Name of the resulting symbol.\n\n"
           "Returns\n-------\nSymbol\n    The result symbol.")
    doc += _extra_examples(SymbolDoc, func_name)
    return re.sub("NDArray-or-Symbol", "Symbol", doc)
