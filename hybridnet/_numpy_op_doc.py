"""``mx._numpy_op_doc``: MXNet's documentation stubs of its ``_np_*`` operators, one Python
function per operator whose signature is the ``mx.np`` function's (MXNet reads the signatures of
its C++ operators off these stubs). hybridnet's ``mx.np`` functions carry their signatures, so the
stubs are made from them on first access: ``_numpy_op_doc._np_sum`` has ``mx.np.sum``'s signature
and documentation."""
from __future__ import annotations

from typing import Any, Callable, Dict

from .numpy_op_signature import _get_builtin_op
from .ops import registry as _reg

_STUBS: Dict[str, Callable[..., Any]] = {}


def _stub(op_name: str) -> Callable[..., Any]:
    fn = _get_builtin_op(op_name)
    if fn is None:
        raise AttributeError(op_name)

    def doc(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{op_name} is documentation only; call mx.np.{fn.__name__}")
    import inspect
    doc.__name__ = doc.__qualname__ = op_name
    doc.__doc__ = fn.__doc__
    doc.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    return doc


def __getattr__(name: str) -> Callable[..., Any]:
    """The stub of operator ``name`` (an ``_np_*`` operator of the registry)."""
    if not name.startswith("_np_") or _reg.find(name) is None:
        raise AttributeError(f"module 'mxnet._numpy_op_doc' has no attribute {name!r}")
    if name not in _STUBS:
        _STUBS[name] = _stub(name)
    return _STUBS[name]
