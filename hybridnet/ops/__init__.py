"""THE operator registry and every operator family (importing this registers them all)."""
from . import registry, attrs  # noqa: F401
from . import elementwise  # noqa: F401
from .registry import OpDef, Sample, register, get, find, all_ops  # noqa: F401

_FAMILIES = ("creation", "reduce", "linalg", "shape", "index", "nn", "norm", "rnn", "random", "contrib",
             "image", "optimizer_ops", "misc")
import importlib as _importlib  # noqa: E402

for _f in _FAMILIES:
    try:
        _importlib.import_module(f"{__name__}.{_f}")
    except ModuleNotFoundError as _e:  # a family not written yet
        if _e.name != f"{__name__}.{_f}":
            raise
