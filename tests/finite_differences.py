"""Central finite differences, the independent reference the gradient tests compare against."""
from __future__ import annotations

from typing import Callable, Iterable, Optional

import numpy as np


def central_differences(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6,
                 at: Optional[Iterable[int]] = None) -> np.ndarray:
    """d f(x) / d x for a scalar ``f`` of a float64 NumPy array, by central differences: each
    coordinate of a copy of ``x`` moved by +-``eps`` (``x`` itself is never written). ``at``:
    only these flat coordinates (the others stay 0), for large inputs probed at a sample."""
    g = np.zeros(x.size)
    for c in range(x.size) if at is None else at:
        plus, minus = x.copy(), x.copy()
        plus.reshape(-1)[c] += eps
        minus.reshape(-1)[c] -= eps
        g[c] = (f(plus) - f(minus)) / (2 * eps)
    return g.reshape(x.shape)
