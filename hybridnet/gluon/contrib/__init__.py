"""``gluon.contrib``: contributed layers, recurrent cells and samplers (MXNet 1.9.1
``gluon.contrib``)."""
from . import cnn, data, nn, rnn  # noqa: F401
