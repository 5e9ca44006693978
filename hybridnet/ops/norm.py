"""Normalization operators (MXNet 1.9.1 semantics): BatchNorm (+ BatchNorm_v1), LayerNorm,
InstanceNorm, GroupNorm, L2Normalization, LRN.

BatchNorm's running statistics are auxiliary inputs updated in place (under ``no_grad``) by a
training-mode call: ``moving = momentum * moving + (1 - momentum) * batch`` with the biased
batch variance. Its optional outputs ``mean``/``var`` are, as in MXNet, the mean and the
*inverse standard deviation* 1/sqrt(var + eps) that the normalization used.
"""
from __future__ import annotations

from typing import Any, Literal, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..base import MXNetError
from .attrs import OptFloat
from ._helpers import fill_shape as _fill
from .registry import Sample, register

__all__: list = []

_ShapeList = list
_LOW = (torch.float16, torch.bfloat16)


def _channel_params(axis_default: int, count: Optional[str] = None) -> Any:
    """param_shapes rule: every non-data input has shape (C,), C = data.shape[axis]."""
    def rule(attrs: dict, shapes: _ShapeList) -> _ShapeList:
        out = list(shapes)
        d = shapes[0]
        if d is None or len(d) == 0:
            return out
        if count is not None:
            c = int(attrs.get(count, 1))
        else:
            ax = int(attrs.get("axis", axis_default))
            c = d[ax % len(d)]
        for i in range(1, len(out)):
            out[i] = _fill(shapes[i], (c,))
        return out
    return rule


# ---- BatchNorm --------------------------------------------------------------------------------
class _UpdateStatsInBackward(torch.autograd.Function):
    """Identity on the BatchNorm output whose backward folds the batch statistics into the moving
    ones: moving = momentum * moving + (1 - momentum) * batch (biased variance), as MXNet does."""

    @staticmethod
    def forward(ctx: Any, out: Tensor, mean: Tensor, var: Tensor, moving_mean: Tensor,  # type: ignore[override]
                moving_var: Tensor, momentum: float) -> Tensor:
        ctx.stats = (mean, var, moving_mean, moving_var, momentum)
        return out.view_as(out)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Any:  # type: ignore[override]
        mean, var, moving_mean, moving_var, momentum = ctx.stats
        with torch.no_grad():
            moving_mean.mul_(momentum).add_(mean.to(moving_mean.dtype), alpha=1.0 - momentum)
            moving_var.mul_(momentum).add_(var.to(moving_var.dtype), alpha=1.0 - momentum)
        return grad, None, None, None, None, None


def batch_norm(data: Tensor, gamma: Tensor, beta: Tensor, moving_mean: Tensor, moving_var: Tensor,
               eps: float, momentum: float, fix_gamma: bool, use_global_stats: bool,
               output_mean_var: bool, axis: int, is_train: bool) -> Any:
    """The BatchNorm computation shared by BatchNorm and BatchNorm_v1."""
    nd = data.dim()
    ax = axis % nd if nd else 0
    x = data
    if ax != 1 and nd > 1:
        x = x.movedim(ax, 1)
    low = x.dtype in _LOW and gamma.dtype not in _LOW
    if low:
        x = x.float()
    w: Optional[Tensor] = gamma
    if fix_gamma:
        # gamma acts as 1; keep it in the graph with a zero gradient (MXNet writes 0)
        w = gamma * 0 + 1 if (gamma.requires_grad and torch.is_grad_enabled()) else None
    if is_train and not use_global_stats:
        out, mean, invstd = torch.native_batch_norm(x, w, beta, None, None, True, 0.0, eps)
        if out.requires_grad:
            # MXNet 1.9.1 updates the moving statistics in BatchNorm's backward pass (spec B.6):
            # a training-mode forward that is never differentiated leaves them unchanged
            with torch.no_grad():
                var = invstd.reciprocal().square_().sub_(eps)
            out = _UpdateStatsInBackward.apply(out, mean.detach(), var, moving_mean, moving_var, momentum)
        if output_mean_var:
            mean_out, var_out = mean.detach().to(gamma.dtype), invstd.detach().to(gamma.dtype)
    else:
        out = F.batch_norm(x, moving_mean, moving_var, w, beta, False, 0.0, eps)
        if output_mean_var:
            mean_out = moving_mean.detach().clone()
            var_out = torch.rsqrt(moving_var.detach() + eps)
    if low:
        out = out.to(data.dtype)
    if ax != 1 and nd > 1:
        out = out.movedim(1, ax)
    if output_mean_var:
        return out, mean_out, var_out
    return out


def _bn_nout(attrs: dict) -> int:
    return 3 if attrs.get("output_mean_var", False) else 1


def _np_bn(x, gamma, beta, mm, mv, eps=1e-3, momentum=0.9, fix_gamma=True, use_global_stats=False,
           output_mean_var=False, axis=1, train=False, **_):
    ax = axis % x.ndim
    red = tuple(i for i in range(x.ndim) if i != ax)
    shp = [1] * x.ndim
    shp[ax] = -1
    if train and not use_global_stats:
        mean = x.mean(axis=red)
        var = x.var(axis=red)
    else:
        mean, var = mm, mv
    g = np.ones_like(gamma) if fix_gamma else gamma
    out = (x - mean.reshape(shp)) / np.sqrt(var.reshape(shp) + eps) * g.reshape(shp) + beta.reshape(shp)
    if output_mean_var:
        return [out, mean, 1 / np.sqrt(var + eps)]
    return out


def _bn_samples() -> list:
    r = np.random.RandomState(30)
    x = r.randn(4, 3, 2, 3)
    g, b = r.uniform(0.5, 1.5, 3), r.randn(3)
    mm, mv = r.randn(3) * 0.1, r.uniform(0.5, 2, 3)

    def trained(*a, **k):
        return _np_bn(*a, train=True, **k)

    x2 = r.randn(5, 4)
    g2, b2, mm2, mv2 = r.uniform(0.5, 1.5, 4), r.randn(4), r.randn(4), r.uniform(0.5, 2, 4)
    return [
        Sample((x, g, b, mm, mv), {}, ref=_np_bn, grad_inputs=(0, 1, 2)),
        Sample((x, g, b, mm, mv), {"fix_gamma": False, "eps": 1e-5}, ref=_np_bn, grad_inputs=(0, 1, 2)),
        Sample((x, g, b, mm, mv), {"fix_gamma": False}, ref=trained, train=True, grad_inputs=(0, 1, 2),
               rtol=1e-5, atol=1e-6),
        Sample((x, g, b, mm, mv), {"fix_gamma": False, "use_global_stats": True}, ref=_np_bn, train=True,
               grad_inputs=(0, 1, 2)),
        Sample((x, g, b, mm, mv), {"fix_gamma": False, "axis": -1, "output_mean_var": True},
               ref=_np_bn, grad=False),
        Sample((x.transpose(0, 2, 1, 3).copy(), g, b, mm, mv), {"fix_gamma": False, "axis": 2, "output_mean_var": True},
               ref=lambda *a, **k: _np_bn(*a, train=True, **k),  # type: ignore[misc]  # *a: the 5 inputs only
               train=True, grad=False),
        Sample((x2, g2, b2, mm2, mv2), {"fix_gamma": False}, ref=trained, train=True,
               grad_inputs=(0, 1, 2), rtol=1e-5, atol=1e-6),
    ]





def _bn_shapes(attrs: dict, shapes: _ShapeList) -> Optional[list]:
    """Output shape = data shape (+ per-channel mean/var): no meta-device run needed, which
    for BatchNorm goes through torch's slow decomposition."""
    data = tuple(shapes[0])
    if len(data) < 2 or not -len(data) <= int(attrs["axis"]) < len(data):
        return None  # (the kernel normalizes no 1-D array)
    c = (data[int(attrs["axis"]) % len(data)],)
    if any(s is not None and tuple(s) != c for s in shapes[1:5]):
        return None  # parameters of another size: the kernel's error
    return [data, c, c] if attrs["output_mean_var"] else [data]


@register("BatchNorm", aux=("moving_mean", "moving_var"), num_outputs=_bn_nout, total_outputs=3,
          output_names=("output", "mean", "var"), param_shapes=_channel_params(1), samples=_bn_samples,
          infer_shape=_bn_shapes, channel_affine=lambda a: int(a["axis"]))
def BatchNorm(data: Tensor, gamma: Tensor, beta: Tensor, moving_mean: Tensor, moving_var: Tensor, *,
              eps: float = 1e-3, momentum: float = 0.9, fix_gamma: bool = True,
              use_global_stats: bool = False, output_mean_var: bool = False, axis: int = 1,
              cudnn_off: bool = False, min_calib_range: OptFloat = None,
              max_calib_range: OptFloat = None, is_train: bool = False) -> Any:
    """Batch normalization over axis ``axis`` (MXNet's BatchNorm).

    Training (is_train and not use_global_stats) normalizes with the batch mean and biased
    variance; moving_mean/moving_var are updated in place when the output is differentiated
    (in backward, as MXNet 1.9.1 does); otherwise the moving statistics are used. fix_gamma treats gamma as 1 (its gradient is 0). With output_mean_var the outputs are
    (out, mean, inverse std).
    """
    if not is_train and not output_mean_var and not fix_gamma and (axis == 1 or axis == 1 - data.dim()) \
            and data.dtype == gamma.dtype:
        return F.batch_norm(data, moving_mean, moving_var, gamma, beta, False, 0.0, eps)
    return batch_norm(data, gamma, beta, moving_mean, moving_var, eps, momentum, fix_gamma,
                      use_global_stats, output_mean_var, axis, is_train)



def _bnv1_samples() -> list:
    r = np.random.RandomState(31)
    x = r.randn(3, 2, 4)
    g, b, mm, mv = r.uniform(0.5, 1.5, 2), r.randn(2), r.randn(2), r.uniform(0.5, 2, 2)
    return [Sample((x, g, b, mm, mv), {"fix_gamma": False}, ref=_np_bn, grad_inputs=(0, 1, 2))]


@register("BatchNorm_v1", aux=("moving_mean", "moving_var"), num_outputs=_bn_nout, total_outputs=3,
          output_names=("output", "mean", "var"), param_shapes=_channel_params(1), samples=_bnv1_samples,
          channel_affine=lambda a: 1)
def BatchNorm_v1(data: Tensor, gamma: Tensor, beta: Tensor, moving_mean: Tensor, moving_var: Tensor, *,
                 eps: float = 1e-3, momentum: float = 0.9, fix_gamma: bool = True,
                 use_global_stats: bool = False, output_mean_var: bool = False,
                 is_train: bool = False) -> Any:
    """Batch normalization over axis 1 (MXNet's deprecated BatchNorm_v1)."""
    return batch_norm(data, gamma, beta, moving_mean, moving_var, eps, momentum, fix_gamma,
                      use_global_stats, output_mean_var, 1, is_train)


# ---- LayerNorm --------------------------------------------------------------------------------
def _np_ln(x, gamma, beta, axis=-1, eps=1e-5, output_mean_var=False):
    ax = axis % x.ndim
    shp = [1] * x.ndim
    shp[ax] = -1
    mean = x.mean(axis=ax, keepdims=True)
    std = np.sqrt(x.var(axis=ax, keepdims=True) + eps)
    out = (x - mean) / std * gamma.reshape(shp) + beta.reshape(shp)
    return [out, mean, std] if output_mean_var else out


def _ln_samples() -> list:
    r = np.random.RandomState(32)
    x = r.randn(2, 3, 4)
    return [
        Sample((x, r.uniform(0.5, 1.5, 4), r.randn(4)), {}, ref=_np_ln),
        Sample((x, r.uniform(0.5, 1.5, 3), r.randn(3)), {"axis": 1, "eps": 1e-3}, ref=_np_ln),
        # mean/std outputs carry no gradient (as in MXNet): checked in tests/ops/test_nn_ops.py
        Sample((x, r.uniform(0.5, 1.5, 4), r.randn(4)), {"output_mean_var": True}, ref=_np_ln, grad=False),
        Sample((x, r.uniform(0.5, 1.5, 3), r.randn(3)), {"axis": 1, "output_mean_var": True}, ref=_np_ln,
               grad=False),
    ]


def _ln_shapes(attrs: dict, shapes: _ShapeList) -> Optional[list]:
    """The data's shape (+ mean and std with the normalized axis kept as 1); gamma and beta
    must have the size of that axis."""
    data = tuple(shapes[0])
    if not data or not -len(data) <= int(attrs["axis"]) < len(data):
        return None
    ax = int(attrs["axis"]) % len(data)
    if any(tuple(s) != (data[ax],) for s in shapes[1:3]):
        return None
    stat = data[:ax] + (1,) + data[ax + 1:]
    return [data, stat, stat] if attrs["output_mean_var"] else [data]


@register("LayerNorm", num_outputs=_bn_nout, total_outputs=3, output_names=("output", "mean", "std"),
          param_shapes=_channel_params(-1), samples=_ln_samples, infer_shape=_ln_shapes)
def LayerNorm(data: Tensor, gamma: Tensor, beta: Tensor, *, axis: int = -1, eps: float = 1e-5,
              output_mean_var: bool = False) -> Any:
    """Normalize over ``axis`` then scale by gamma and shift by beta (both of shape (C,)).

    With output_mean_var the outputs are (out, mean, std) with std = sqrt(var + eps), keeping
    the normalized axis with size 1."""
    nd = data.dim()
    ax = axis % nd
    last = ax == nd - 1
    if last and not output_mean_var:
        return F.layer_norm(data, (data.shape[-1],), gamma, beta, eps)
    x = data if last else data.movedim(ax, -1)
    out, mean, rstd = torch.native_layer_norm(x, (x.shape[-1],), gamma, beta, eps)
    if not last:
        out = out.movedim(-1, ax)
        mean = mean.movedim(-1, ax)
        rstd = rstd.movedim(-1, ax)
    if output_mean_var:  # MXNet's backward ignores gradients arriving at mean/std
        return out, mean.detach(), rstd.detach().reciprocal()
    return out


# ---- InstanceNorm -----------------------------------------------------------------------------
def _np_in(x, gamma, beta, eps=1e-3):
    red = tuple(range(2, x.ndim))
    shp = (1, -1) + (1,) * (x.ndim - 2)
    mean = x.mean(axis=red, keepdims=True)
    var = x.var(axis=red, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma.reshape(shp) + beta.reshape(shp)


def _in_shape(attrs: dict, shapes: _ShapeList) -> Optional[list]:
    """The data's shape (N, C, ...); gamma and beta must be (C,)."""
    data = tuple(shapes[0])
    if len(data) < 3 or any(tuple(s) != (data[1],) for s in shapes[1:3]):
        return None
    return [data]


@register("InstanceNorm", total_outputs=3, output_names=("output", "mean", "var"),
          param_shapes=_channel_params(1), infer_shape=_in_shape, samples=lambda: [
              Sample((np.random.RandomState(33).randn(2, 3, 5), np.array([1.2, 0.7, 1.0]),
                      np.array([0.1, -0.3, 0.0])), {}, ref=_np_in),
              Sample((np.random.RandomState(34).randn(2, 2, 3, 3), np.array([1.2, 0.7]),
                      np.array([0.1, -0.3])), {"eps": 1e-5}, ref=_np_in)])
def InstanceNorm(data: Tensor, gamma: Tensor, beta: Tensor, *, eps: float = 1e-3) -> Tensor:
    """Normalize every (sample, channel) over its spatial axes, then per-channel gamma/beta."""
    if data.dim() < 3:
        raise MXNetError(f"InstanceNorm: data must be (N, C, ...) with at least 3 dims, got {tuple(data.shape)}")
    axes = tuple(range(2, data.dim()))
    mean = data.mean(dim=axes, keepdim=True)
    var = (data - mean).square().mean(dim=axes, keepdim=True)  # one spatial element is allowed
    shape = (1, -1) + (1,) * (data.dim() - 2)
    return (data - mean) * torch.rsqrt(var + eps) * gamma.reshape(shape) + beta.reshape(shape)


# ---- GroupNorm --------------------------------------------------------------------------------
def _np_gn(x, gamma, beta, num_groups=1, eps=1e-5, output_mean_var=False):
    N, C = x.shape[:2]
    xg = x.reshape(N, num_groups, -1)
    mean = xg.mean(-1, keepdims=True)
    std = np.sqrt(xg.var(-1, keepdims=True) + eps)
    y = ((xg - mean) / std).reshape(x.shape)
    if gamma.size == C:
        shp = (1, C) + (1,) * (x.ndim - 2)
        out = y * gamma.reshape(shp) + beta.reshape(shp)
    else:
        yg = y.reshape((N, num_groups, -1))
        out = (yg * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)).reshape(x.shape)
    if output_mean_var:
        return [out, mean.reshape(N, num_groups), std.reshape(N, num_groups)]
    return out


def _gn_samples() -> list:
    r = np.random.RandomState(35)
    x = r.randn(2, 4, 3, 2)
    return [
        Sample((x, r.uniform(0.5, 1.5, 2), r.randn(2)), {"num_groups": 2}, ref=_np_gn),
        Sample((x, r.uniform(0.5, 1.5, 4), r.randn(4)), {"num_groups": 2}, ref=_np_gn),
        Sample((x, r.uniform(0.5, 1.5, 1), r.randn(1)), {"eps": 1e-3}, ref=_np_gn),
        Sample((x, r.uniform(0.5, 1.5, 4), r.randn(4)), {"num_groups": 4, "output_mean_var": True},
               ref=_np_gn, grad=False),
        Sample((x, r.uniform(0.5, 1.5, 2), r.randn(2)), {"num_groups": 2, "output_mean_var": True},
               ref=_np_gn, grad=False),
    ]


@register("GroupNorm", num_outputs=_bn_nout, total_outputs=3, output_names=("output", "mean", "std"),
          param_shapes=_channel_params(1, count="num_groups"), samples=_gn_samples)
def GroupNorm(data: Tensor, gamma: Tensor, beta: Tensor, *, num_groups: int = 1, eps: float = 1e-5,
              output_mean_var: bool = False) -> Any:
    """Normalize each of ``num_groups`` channel groups per sample, then scale and shift.

    MXNet 1.9.1 gives gamma/beta one value per *group* (shape (num_groups,)); per-channel
    gamma/beta of shape (C,) (MXNet 2.x, PyTorch) are accepted as well. With output_mean_var the
    outputs are (out, mean, std), mean/std of shape (N, num_groups), std = sqrt(var + eps)."""
    N, C = data.shape[0], data.shape[1]
    G = int(num_groups)
    if C % G:
        raise MXNetError(f"GroupNorm: {C} channels cannot be split into num_groups={G} groups")
    per_channel = gamma.numel() == C
    if per_channel and not output_mean_var:
        return F.group_norm(data, G, gamma, beta, eps)
    if per_channel:
        out, mean, rstd = torch.native_group_norm(data, gamma, beta, N, C, data[0, 0].numel(), G, eps)
    else:
        if gamma.numel() != G:
            raise MXNetError(f"GroupNorm: gamma has {gamma.numel()} values; expected num_groups={G} "
                             f"(MXNet 1.x) or C={C}")
        y, mean, rstd = torch.native_group_norm(data, None, None, N, C, data[0, 0].numel(), G, eps)
        shp = (N, G, -1)
        out = (y.reshape(shp) * gamma.reshape(1, G, 1) + beta.reshape(1, G, 1)).reshape(data.shape)
    if output_mean_var:  # MXNet's backward ignores gradients arriving at mean/std
        return out, mean.detach(), rstd.detach().reciprocal()
    return out


# ---- L2Normalization --------------------------------------------------------------------------
def _np_l2(x, eps=1e-10, mode="instance"):
    if mode == "instance":
        red = tuple(range(1, x.ndim))
    elif mode == "channel":
        red = (1,)
    else:
        red = tuple(range(2, x.ndim))
    return x / np.sqrt((x * x).sum(axis=red, keepdims=True) + eps)


@register("L2Normalization", total_outputs=2, output_names=("output", "norm"), samples=lambda: [
    Sample((np.random.RandomState(36).randn(2, 3, 4),), {}, ref=_np_l2),
    Sample((np.random.RandomState(36).randn(2, 3, 4),), {"mode": "channel"}, ref=_np_l2),
    Sample((np.random.RandomState(36).randn(2, 3, 2, 2),), {"mode": "spatial", "eps": 1e-4}, ref=_np_l2)])
def L2Normalization(data: Tensor, *, eps: float = 1e-10,
                    mode: Literal["channel", "instance", "spatial"] = "instance") -> Tensor:
    """x / sqrt(sum(x^2) + eps) over all non-batch axes (instance), axis 1 (channel) or the
    spatial axes 2.. (spatial)."""
    if mode == "instance":
        dims = tuple(range(1, data.dim()))
    elif mode == "channel":
        dims = (1,)
    else:
        dims = tuple(range(2, data.dim()))
    return data / torch.sqrt(data.square().sum(dim=dims, keepdim=True) + eps)


# ---- LRN --------------------------------------------------------------------------------------
def _np_lrn(x, alpha=1e-4, beta=0.75, knorm=2.0, nsize=1):
    C = x.shape[1]
    sq = x * x
    out = np.empty_like(x)
    half = nsize // 2
    for c in range(C):
        s = sq[:, max(0, c - half):min(C, c + half + 1)].sum(axis=1)
        out[:, c] = x[:, c] / (knorm + alpha / nsize * s) ** beta
    return out


def _lrn_shape(attrs: dict, shapes: _ShapeList) -> Optional[list]:
    """The data's shape (LRN needs a channel axis and at least one spatial axis)."""
    data = tuple(shapes[0])
    return [data] if len(data) >= 3 and int(attrs["nsize"]) >= 1 else None


@register("LRN", total_outputs=2, output_names=("output", "tmp_norm"), infer_shape=_lrn_shape,
          samples=lambda: [
    Sample((np.random.RandomState(37).randn(2, 5, 3, 2),), {"nsize": 3}, ref=_np_lrn),
    Sample((np.random.RandomState(37).randn(1, 6, 2, 2),), {"nsize": 5, "alpha": 0.1, "beta": 0.5,
                                                           "knorm": 1.0}, ref=_np_lrn)])
def LRN(data: Tensor, *, alpha: float = 1e-4, beta: float = 0.75, knorm: float = 2.0, nsize: int) -> Tensor:
    """Local response normalization across channels:
    x / (knorm + alpha / nsize * sum over nsize neighbouring channels of x^2) ^ beta."""
    return F.local_response_norm(data, nsize, alpha, beta, knorm)
