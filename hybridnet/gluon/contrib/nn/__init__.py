"""``gluon.contrib.nn``: Concurrent, HybridConcurrent, Identity, SparseEmbedding, SyncBatchNorm,
PixelShuffle1D/2D/3D (MXNet 1.9.1)."""
from .basic_layers import *  # noqa: F401,F403
