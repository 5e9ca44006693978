"""``gluon.contrib.estimator``: MXNet 1.9.1's fit API (Estimator, event handlers, BatchProcessor),
plus a progress bar (tqdm when installed) and a training-curve plot handler."""
from . import batch_processor, estimator, event_handler
from .batch_processor import *  # noqa: F401,F403
from .estimator import *  # noqa: F401,F403
from .event_handler import *  # noqa: F401,F403

__all__ = batch_processor.__all__ + estimator.__all__ + event_handler.__all__
