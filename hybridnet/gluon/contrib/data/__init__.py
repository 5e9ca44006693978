"""``gluon.contrib.data`` (MXNet 1.9.1): contributed samplers. MXNet's ``contrib.data.text``
(WikiText downloads) is not provided."""
from . import sampler  # noqa: F401
from .sampler import *  # noqa: F401,F403
