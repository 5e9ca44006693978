"""``gluon.contrib``: contributed layers, recurrent cells, samplers and the Estimator fit API
(MXNet 1.9.1 ``gluon.contrib``)."""
from . import data, estimator, nn, rnn  # noqa: F401
