"""``gluon.contrib.rnn``: contributed recurrent cells (MXNet 1.9.1): convolutional RNN/LSTM/GRU
cells, the projected LSTM cell and variational dropout."""
from . import conv_rnn_cell, rnn_cell  # noqa: F401
from .conv_rnn_cell import *  # noqa: F401,F403
from .rnn_cell import *  # noqa: F401,F403
