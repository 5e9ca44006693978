"""Contributed layers (MXNet 1.9.1 ``gluon.contrib.nn.basic_layers``)."""
from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence, Union

from .... import context
from .... import ndarray as nd
from ...block import Block, HybridBlock
from ...nn.basic_layers import BatchNorm, HybridSequential, Sequential

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm",
           "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]


class Concurrent(Sequential):
    """Feeds the input to every child and concatenates their outputs along ``axis``."""

    def __init__(self, axis: int = -1, prefix: Optional[str] = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x: Any) -> Any:  # type: ignore[override]
        out = [block(x) for block in self._children.values()]
        return nd.concat(*out, dim=self.axis)


class HybridConcurrent(HybridSequential):
    """Feeds the input to every child and concatenates their outputs along ``axis``
    (one ``Concat`` node, ``<prefix>concat0``, when hybridized)."""

    def __init__(self, axis: int = -1, prefix: Optional[str] = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # type: ignore[override]
        out = [block(x) for block in self._children.values()]
        return F.concat(*out, dim=self.axis)


class Identity(HybridBlock):
    """Returns its input unchanged (useful as a branch of HybridConcurrent)."""

    def __init__(self, prefix: Optional[str] = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return x


class SparseEmbedding(Block):
    """Embedding with a row_sparse gradient (``Embedding`` with ``sparse_grad=True``), as MXNet's.
    The weight itself stays dense here (MXNet stores it row_sparse and needs a Trainer before the
    first forward to pull rows; use ``Parameter(stype='row_sparse')`` for that)."""

    def __init__(self, input_dim: int, output_dim: int, dtype: Any = "float32",
                 weight_initializer: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": True}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer,
                                      dtype=dtype, grad_stype="row_sparse")

    def forward(self, x: Any) -> Any:  # type: ignore[override]
        weight = self.weight.data(x.context)
        return nd.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return f"{self.__class__.__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class SyncBatchNorm(BatchNorm):
    """Cross-device synchronized BatchNorm. In a single process it normalizes exactly as
    BatchNorm over axis 1 (statistics of the whole batch); the name hint is ``syncbatchnorm``
    and the node carries MXNet's attributes (``ndev``, ``key``)."""

    def __init__(self, in_channels: int = 0, num_devices: Optional[int] = None, momentum: float = 0.9,
                 epsilon: float = 1e-5, center: bool = True, scale: bool = True,
                 use_global_stats: bool = False, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", running_mean_initializer: Any = "zeros",
                 running_variance_initializer: Any = "ones", **kwargs: Any):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)
        num_devices = self._get_num_devices() if num_devices is None else num_devices
        self._kwargs = {"eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats, "ndev": num_devices, "key": self.prefix}

    def _get_num_devices(self) -> int:
        warnings.warn("Caution using SyncBatchNorm: if not using all the GPUs, please mention "
                      "num_devices", UserWarning, stacklevel=3)
        n = context.num_gpus()
        return n if n > 0 else 1

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any, running_mean: Any,
                       running_var: Any) -> Any:
        sync = getattr(F.contrib, "SyncBatchNorm", None)
        if sync is not None:
            return sync(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)
        k = self._kwargs
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", axis=1, eps=k["eps"],
                           momentum=k["momentum"], fix_gamma=k["fix_gamma"],
                           use_global_stats=k["use_global_stats"])


def _factors(factor: Union[int, Sequence[int]], n: int, layer: str) -> tuple:
    try:
        return (int(factor),) * n  # type: ignore[arg-type]
    except TypeError:
        out = tuple(int(f) for f in factor)  # type: ignore[union-attr]
        if len(out) != n:
            raise ValueError(f"{layer}: factor must be an int or {n} ints, got {factor!r}") from None
        return out


class PixelShuffle1D(HybridBlock):
    """``(N, C*f, W) -> (N, C, W*f)``: output ``[n, c, w*f + i] = input[n, c*f + i, w]``."""

    def __init__(self, factor: int, **kwargs: Any):
        super().__init__(**kwargs)
        self._factor = int(factor)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        f = self._factor
        x = F.reshape(x, (0, -4, -1, f, 0))        # (N, C, f, W)
        x = F.transpose(x, (0, 1, 3, 2))           # (N, C, W, f)
        return F.reshape(x, (0, 0, -3))            # (N, C, W*f)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._factor})"


class PixelShuffle2D(HybridBlock):
    """``(N, C*f1*f2, H, W) -> (N, C, H*f1, W*f2)`` (sub-pixel convolution upsampling)."""

    def __init__(self, factor: Union[int, Sequence[int]], **kwargs: Any):
        super().__init__(**kwargs)
        self._factors = _factors(factor, 2, "PixelShuffle2D")

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        f1, f2 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2, 0, 0))    # (N, C, f1*f2, H, W)
        x = F.reshape(x, (0, 0, -4, f1, f2, 0, 0))      # (N, C, f1, f2, H, W)
        x = F.transpose(x, (0, 1, 4, 2, 5, 3))          # (N, C, H, f1, W, f2)
        return F.reshape(x, (0, 0, -3, -3))             # (N, C, H*f1, W*f2)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._factors})"


class PixelShuffle3D(HybridBlock):
    """``(N, C*f1*f2*f3, D, H, W) -> (N, C, D*f1, H*f2, W*f3)``; uses only transposes of at
    most 6 axes (MXNet's limit) so exported graphs load in MXNet."""

    def __init__(self, factor: Union[int, Sequence[int]], **kwargs: Any):
        super().__init__(**kwargs)
        self._factors = _factors(factor, 3, "PixelShuffle3D")

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        f1, f2, f3 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2 * f3, 0, 0, 0))   # (N, C, f1*f2*f3, D, H, W)
        x = F.swapaxes(x, 2, 3)                                # (N, C, D, f1*f2*f3, H, W)
        x = F.reshape(x, (0, 0, 0, -4, f1, f2 * f3, 0, 0))     # (N, C, D, f1, f2*f3, H, W)
        x = F.reshape(x, (0, 0, -3, 0, 0, 0))                  # (N, C, D*f1, f2*f3, H, W)
        x = F.swapaxes(x, 3, 4)                                # (N, C, D*f1, H, f2*f3, W)
        x = F.reshape(x, (0, 0, 0, 0, -4, f2, f3, 0))          # (N, C, D*f1, H, f2, f3, W)
        x = F.reshape(x, (0, 0, 0, -3, 0, 0))                  # (N, C, D*f1, H*f2, f3, W)
        x = F.swapaxes(x, 4, 5)                                # (N, C, D*f1, H*f2, W, f3)
        return F.reshape(x, (0, 0, 0, 0, -3))                  # (N, C, D*f1, H*f2, W*f3)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._factors})"
