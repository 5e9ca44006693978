"""``mx.mod`` / ``mx.module``: MXNet 1.9.1's Module API (symbolic training with bind,
init_params, init_optimizer, forward/backward/update, fit/score/predict, checkpoints)."""
from .base_module import BaseModule  # noqa: F401
from .bucketing_module import BucketingModule  # noqa: F401
from .executor_group import DataParallelExecutorGroup  # noqa: F401
from .module import Module  # noqa: F401
from .python_module import PythonModule, PythonLossModule  # noqa: F401
from .sequential_module import SequentialModule  # noqa: F401

__all__ = ["BaseModule", "Module", "BucketingModule", "DataParallelExecutorGroup", "PythonModule",
           "PythonLossModule", "SequentialModule"]
