"""``gluon.contrib.data`` (MXNet 1.9.1): contributed samplers and the WikiText datasets
(``text``, read from local files)."""
from . import sampler  # noqa: F401
from . import text  # noqa: F401
from .sampler import *  # noqa: F401,F403
