"""hybridnet: the Gluon hybrid programming model (MXNet 1.9.1 compatible) on PyTorch kernels.

``import hybridnet as mx`` gives MXNet's namespace: ``mx.nd``, ``mx.sym``, ``mx.gluon``,
``mx.autograd``, ``mx.init``, ``mx.optimizer``, ``mx.metric``, ``mx.lr_scheduler``, ...
"""
from __future__ import annotations

__version__ = "0.1.0"
MXNET_API_VERSION = "1.9.1"  # the MXNet API level implemented; `mxnet.__version__` under the alias

from .base import MXNetError  # noqa: F401
from .context import Context, cpu, gpu, cpu_pinned, num_gpus, current_context  # noqa: F401
from . import context  # noqa: F401
from . import base  # noqa: F401
from . import util  # noqa: F401
from .util import is_np_shape, set_np_shape, np_shape, use_np_shape, is_np_array, np_array, use_np_array, use_np  # noqa: F401
from . import ops  # noqa: F401
from . import autograd  # noqa: F401
from . import ndarray  # noqa: F401
from . import ndarray as nd  # noqa: F401
from . import random  # noqa: F401

from . import name  # noqa: F401
from . import attribute  # noqa: F401
from .attribute import AttrScope  # noqa: F401
from . import symbol  # noqa: F401
from . import symbol as sym  # noqa: F401
from . import operator  # noqa: F401
from . import io  # noqa: F401
from . import model  # noqa: F401
from . import module  # noqa: F401
from . import module as mod  # noqa: F401
from . import callback  # noqa: F401
from . import onnx  # noqa: F401
from .deploy import to_torch  # noqa: F401  (not MXNet: the way out to PyTorch, README "Leaving MXNet")
from . import initializer  # noqa: F401
from . import initializer as init  # noqa: F401
from . import optimizer  # noqa: F401
from . import lr_scheduler  # noqa: F401
from . import metric  # noqa: F401
from . import kvstore  # noqa: F401
from . import kvstore as kv  # noqa: F401
from . import rnn  # noqa: F401
from . import profiler  # noqa: F401
from . import visualization  # noqa: F401
from . import visualization as viz  # noqa: F401
from . import recordio  # noqa: F401
from . import image  # noqa: F401
from . import image as img  # noqa: F401
from . import registry  # noqa: F401
from . import runtime  # noqa: F401
from . import test_utils  # noqa: F401
from . import gluon  # noqa: F401
from . import contrib  # noqa: F401
# MXNet's smaller top-level modules; rtc, library, tvmop and torch (mx.th) only drive libmxnet:
# they import, and raise cpp_only.CppOnlyError on use (README, "Modules that only raise")
from . import engine, error, executor, log, monitor, notebook, symbol_doc  # noqa: F401,E402
from . import monitor as mon  # noqa: F401,E402
from . import rtc, library, tvmop  # noqa: F401,E402
from . import torch as th  # noqa: F401,E402
# MXNet's NumPy interface: mx.np, mx.npx, and their places under nd and sym (F.np / F.npx)
from . import numpy as np  # noqa: F401,E402
from . import numpy_extension as npx  # noqa: F401,E402
from .numpy import symbolic as _np_symbolic  # noqa: E402
nd.np, nd.npx = np, npx  # type: ignore[attr-defined]
sym.np, sym.npx = _np_symbolic.np, _np_symbolic.npx  # type: ignore[attr-defined]
# ... and under MXNet's module paths (mxnet.ndarray.numpy, mxnet.symbol.numpy_extension.image):
# the same module objects, registered by their own names so that `import` finds them
def _np_module_paths() -> None:
    import sys
    import types
    nd.numpy, nd.numpy_extension = np, npx  # type: ignore[attr-defined]
    sym.numpy, sym.numpy_extension = sym.np, sym.npx  # type: ignore[attr-defined]
    for space in ("image", "random"):  # sym.npx.image/random: the symbolic operators that exist
        if not hasattr(sym.npx, space):
            sub = types.ModuleType(f"{sym.npx.__name__}.{space}",
                                   f"mx.sym.npx.{space}: symbolic npx.{space} operators")
            legacy = sym.image if space == "image" else sym.random
            for name in dir(getattr(npx, space)):
                fn = getattr(legacy, name, None)
                if not name.startswith("_") and callable(fn):
                    setattr(sub, name, fn)
            setattr(sym.npx, space, sub)
    if not hasattr(npx, "utils"):  # MXNet's npx.utils: npx.save / npx.load
        utils = types.ModuleType(f"{npx.__name__}.utils", "mx.npx.utils: save and load")
        utils.save, utils.load = npx.save, npx.load  # type: ignore[attr-defined]
        npx.utils = utils  # type: ignore[attr-defined]
    for pkg in (sym.np, sym.npx):  # packages, so that their submodules import
        if not hasattr(pkg, "__path__"):
            pkg.__path__ = []  # type: ignore[attr-defined]
    for mod in (sym.np, sym.np.linalg, sym.np.random, sym.npx, sym.npx.image, sym.npx.random,
                npx.utils):
        sys.modules.setdefault(mod.__name__, mod)


_np_module_paths()
del _np_module_paths
from . import numpy_dispatch_protocol, numpy_op_signature, numpy_op_fallback  # noqa: F401,E402
