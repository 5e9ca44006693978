"""``gluon.contrib``: contributed layers (deformable convolutions in ``cnn``), recurrent cells,
samplers and the Estimator fit API (MXNet 1.9.1 ``gluon.contrib``)."""
from . import cnn, data, estimator, nn, rnn  # noqa: F401
