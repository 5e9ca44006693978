"""``gluon.contrib``: contributed layers and recurrent cells (MXNet 1.9.1 ``gluon.contrib``)."""
from . import nn, rnn  # noqa: F401
