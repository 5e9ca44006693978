"""``gluon.data.vision``: vision datasets (local files) and image transforms."""
from __future__ import annotations

from .datasets import *  # noqa: F401,F403
from . import datasets  # noqa: F401
from . import transforms  # noqa: F401
