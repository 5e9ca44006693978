"""``gluon.contrib``: contributed layers (MXNet 1.9.1 ``gluon.contrib``)."""
from . import nn  # noqa: F401
