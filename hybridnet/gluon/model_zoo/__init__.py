"""``gluon.model_zoo``: predefined vision models with MXNet 1.9.1's parameter names, and the
store of MXNet's pretrained parameter files."""
from . import model_store  # noqa: F401
from . import vision  # noqa: F401
from .vision import get_model  # noqa: F401
