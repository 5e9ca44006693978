"""MXNet's ``_sample_unique_zipfian`` (the candidate sampler of sampled softmax): per batch row,
``shape[1]`` distinct classes in [0, range_max) drawn without replacement from the
approximately log-uniform (Zipfian) distribution, ``lround(exp(U[0, 1) * log(range_max))) - 1``,
in the order they first appear, and the number of draws that took (rejected repeats included).
Draws come from torch's global generator (``mx.random.seed``)."""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from ..base import MXNetError
from ._helpers import ints
from .attrs import Shape
from .registry import Sample, register


def _draw_row(num_sampled: int, range_max: int) -> tuple:
    """(classes int64 (num_sampled,), number of draws) for one row, drawing in chunks."""
    log_range = math.log(range_max)
    seen = np.zeros(range_max, dtype=bool)
    taken: list = []
    need, tries = num_sampled, 0
    while need:
        chunk = max(64, 2 * need)
        u = torch.rand(chunk, dtype=torch.float64).numpy()
        vals = (np.floor(np.exp(u * log_range) + 0.5) - 1).astype(np.int64)
        first = np.unique(vals, return_index=True)[1]
        first = np.sort(first[~seen[vals[first]]])     # positions of new classes, in draw order
        if first.size >= need:
            last = first[need - 1]
            taken.append(vals[first[:need]])
            tries += int(last) + 1
            break
        taken.append(vals[first])
        seen[vals[first]] = True
        need -= first.size
        tries += chunk
    return np.concatenate(taken) if taken else np.zeros(0, np.int64), tries


@register("_sample_unique_zipfian", random=True, differentiable=False, num_outputs=2,
          samples=lambda: [Sample((), {"range_max": 6, "shape": (3, 6)}, ref=None, grad=False),
                           Sample((), {"range_max": 1000, "shape": (2, 5)}, ref=None, grad=False)])
def _sample_unique_zipfian(*, range_max: int, shape: Shape = ()) -> tuple:
    """(classes int64 ``shape`` = (batch, num_sampled), draws per row int64 (batch,)); see the
    module docstring. num_sampled must not exceed range_max."""
    s = ints(shape)
    if len(s) != 2:
        raise MXNetError(f"_sample_unique_zipfian: shape must be (batch_size, num_sampled), got {tuple(s)}")
    batch, num = s
    if num > range_max or range_max < 1:
        raise MXNetError(f"_sample_unique_zipfian: cannot draw {num} distinct classes from range_max={range_max}")
    rows, tries = [], []
    for _ in range(batch):
        row, t = _draw_row(num, range_max)
        rows.append(row)
        tries.append(t)
    return (torch.from_numpy(np.stack(rows) if rows else np.zeros((0, num), np.int64)),
            torch.tensor(tries, dtype=torch.int64))
