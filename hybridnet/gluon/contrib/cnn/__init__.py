"""``gluon.contrib.cnn``: deformable convolution layers (MXNet 1.9.1 ``gluon.contrib.cnn``)."""
from . import conv_layers  # noqa: F401
from .conv_layers import *  # noqa: F401,F403
from .conv_layers import __all__  # noqa: F401
