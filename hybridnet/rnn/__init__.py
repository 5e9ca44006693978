"""Legacy symbol-level recurrent cells, bucketing data iterator and RNN checkpoints
(MXNet 1.9.1 ``mx.rnn``); ``gluon.rnn`` is the imperative API."""
from . import rnn_cell  # noqa: F401
from .rnn_cell import *  # noqa: F401,F403
from . import rnn  # noqa: F401
from .rnn import *  # noqa: F401,F403
from . import io  # noqa: F401
from .io import *  # noqa: F401,F403
