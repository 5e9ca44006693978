"""``mx.ndarray_doc``: how MXNet assembles the docstring of a generated ``mx.nd`` function.

MXNet builds each ``nd.<op>`` docstring from the C++ registry's text plus the examples of a
``<Op>Doc`` subclass of :class:`NDArrayDoc`; hybridnet's generated functions carry their own
docstrings, and :func:`_build_doc` is kept for code that calls it with its own descriptions.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

__all__ = ["NDArrayDoc", "build_param_doc"]


class NDArrayDoc:
    """Base of the ``<Op>Doc`` classes whose docstrings hold extra examples for ``nd.<Op>``."""


def build_param_doc(arg_names: Sequence[str], arg_types: Sequence[str], arg_descs: Sequence[str],
                    remove_dup: bool = True) -> str:
    """The ``Parameters`` section of a NumPy-style docstring (MXNet's ``base.build_param_doc``)."""
    seen: set = set()
    lines = []
    for key, type_info, desc in zip(arg_names, arg_types, arg_descs):
        if (key in seen and remove_dup) or key == "num_args":
            continue
        seen.add(key)
        lines.append(f"{key} : {type_info}" + (f"\n    {desc}" if desc else ""))
    return "Parameters\n----------\n" + "\n".join(lines) + "\n"


def _extra_examples(base: type, func_name: str) -> str:
    docs = [c.__doc__ or "" for c in base.__subclasses__() if c.__name__ == f"{func_name}Doc"]
    return re.sub("    ", "", "\n" + "\n".join(docs))


def _build_doc(func_name: str, desc: str, arg_names: Sequence[str], arg_types: Sequence[str],
               arg_desc: Sequence[str], key_var_num_args: Optional[str] = None,
               ret_type: Optional[str] = None) -> str:
    """The docstring of an imperative function (MXNet's layout)."""
    doc = (f"{desc}\n\n{build_param_doc(arg_names, arg_types, arg_desc)}\n"
           "out : NDArray, optional\n    The output NDArray to hold the result.\n\n"
           "Returns\n-------\nout : NDArray or list of NDArrays\n    The output of this function.")
    doc += _extra_examples(NDArrayDoc, func_name)
    return re.sub("NDArray-or-Symbol", "NDArray", doc)
