"""gluon.nn layers: numbers against NumPy, eager == hybridized (outputs and gradients), MXNet's
parameter names/shapes, operator nodes and attributes, export/import round trips, BatchNorm
running statistics, Dropout modes, deferred initialization, reprs and errors."""
from __future__ import annotations

import json
import math
import os
import warnings

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, nd
from hybridnet.base import MXNetError
from hybridnet.gluon import nn
from hybridnet.gluon.parameter import DeferredInitializationError

from fixture_paths import MXNET as FIXTURES  # noqa: E402
_erf = np.vectorize(math.erf)


# ---- NumPy references -------------------------------------------------------------------------
def np_conv(x, w, b, stride, pad, dilate, groups=1):
    """N-d cross-correlation, NC* layout, weight (O, C/groups, *k)."""
    n = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    N, C = x.shape[:2]
    O, k = w.shape[0], w.shape[2:]
    out_sp = [(xp.shape[2 + i] - dilate[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(n)]
    cin, cout = C // groups, O // groups
    out = np.zeros((N, O, *out_sp))
    for g in range(groups):
        xg, wg = xp[:, g * cin:(g + 1) * cin], w[g * cout:(g + 1) * cout]
        for off in np.ndindex(*k):
            sl = tuple(slice(off[i] * dilate[i], off[i] * dilate[i] + stride[i] * (out_sp[i] - 1) + 1, stride[i])
                       for i in range(n))
            patch = xg[(slice(None), slice(None)) + sl]
            out[:, g * cout:(g + 1) * cout] += np.einsum("nc...,oc->no...", patch, wg[(slice(None), slice(None)) + off])
    if b is not None:
        out += b.reshape((1, -1) + (1,) * n)
    return out


def np_deconv(x, w, b, stride, pad, dilate, adj, groups=1):
    """N-d transposed convolution, weight (C, O/groups, *k)."""
    n = x.ndim - 2
    N, C = x.shape[:2]
    cout, k, in_sp = w.shape[1], w.shape[2:], x.shape[2:]
    cin = C // groups
    full = [(in_sp[i] - 1) * stride[i] + dilate[i] * (k[i] - 1) + 1 for i in range(n)]
    out = np.zeros((N, cout * groups, *[full[i] + adj[i] for i in range(n)]))
    for g in range(groups):
        for off in np.ndindex(*k):
            sl = tuple(slice(off[i] * dilate[i], off[i] * dilate[i] + stride[i] * (in_sp[i] - 1) + 1, stride[i])
                       for i in range(n))
            contrib = np.einsum("nc...,co->no...", x[:, g * cin:(g + 1) * cin],
                                w[g * cin:(g + 1) * cin][(slice(None), slice(None)) + off])
            out[(slice(None), slice(g * cout, (g + 1) * cout)) + sl] += contrib
    crop = tuple(slice(pad[i], full[i] - pad[i] + adj[i]) for i in range(n))
    out = out[(slice(None), slice(None)) + crop]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * n)
    return out


def np_pool(x, kernel, stride, pad, pool_type, full=False, count_include_pad=True):
    n = x.ndim - 2
    in_sp = x.shape[2:]
    rnd = math.ceil if full else math.floor
    out_sp = [int(rnd((in_sp[i] + 2 * pad[i] - kernel[i]) / stride[i])) + 1 for i in range(n)]
    extra = [max(0, (out_sp[i] - 1) * stride[i] + kernel[i] - in_sp[i] - 2 * pad[i]) for i in range(n)]
    widths = [(0, 0), (0, 0)] + [(pad[i], pad[i] + extra[i]) for i in range(n)]
    xp = np.pad(x, widths, constant_values=-np.inf if pool_type == "max" else 0.0)
    valid = np.pad(np.ones(in_sp), [(pad[i], pad[i] + extra[i]) for i in range(n)])
    out = np.zeros(x.shape[:2] + tuple(out_sp))
    for pos in np.ndindex(*out_sp):
        sl = tuple(slice(pos[i] * stride[i], pos[i] * stride[i] + kernel[i]) for i in range(n))
        win = xp[(slice(None), slice(None)) + sl].reshape(x.shape[:2] + (-1,))
        if pool_type == "max":
            out[(slice(None), slice(None)) + pos] = win.max(-1)
        else:
            div = np.prod(kernel) if count_include_pad else valid[sl].sum()
            out[(slice(None), slice(None)) + pos] = win.sum(-1) / div
    return out


def np_bn(x, gamma, beta, mean, var, eps, axis=1, fix_gamma=False):
    shp = [1] * x.ndim
    shp[axis] = -1
    g = np.ones_like(gamma) if fix_gamma else gamma
    return (x - mean.reshape(shp)) / np.sqrt(var.reshape(shp) + eps) * g.reshape(shp) + beta.reshape(shp)


def np_batch_stats(x, axis=1):
    red = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    return x.mean(axis=red), x.var(axis=red)


def np_instancenorm(x, gamma, beta, eps):
    red = tuple(range(2, x.ndim))
    m, v = x.mean(axis=red, keepdims=True), x.var(axis=red, keepdims=True)
    shp = (1, -1) + (1,) * (x.ndim - 2)
    return (x - m) / np.sqrt(v + eps) * gamma.reshape(shp) + beta.reshape(shp)


def np_layernorm(x, gamma, beta, eps, axis=-1):
    m, v = x.mean(axis=axis, keepdims=True), x.var(axis=axis, keepdims=True)
    shp = [1] * x.ndim
    shp[axis] = -1
    return (x - m) / np.sqrt(v + eps) * gamma.reshape(shp) + beta.reshape(shp)


def np_groupnorm(x, gamma, beta, groups, eps):
    N = x.shape[0]
    xg = x.reshape(N, groups, -1)
    m, v = xg.mean(-1, keepdims=True), xg.var(-1, keepdims=True)
    y = (xg - m) / np.sqrt(v + eps) * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)
    return y.reshape(x.shape)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


# ---- the layer table ---------------------------------------------------------------------------
class Case:
    def __init__(self, cid, make, shape, ref=None, nodes=(), params=(), int_input=None, tol=(1e-4, 1e-5)):
        self.id, self.make, self.shape, self.ref = cid, make, shape, ref
        self.nodes, self.params, self.int_input, self.tol = list(nodes), list(params), int_input, tol

    def input(self, seed=1):
        r = np.random.RandomState(seed)
        if self.int_input:
            return r.randint(0, self.int_input, size=self.shape).astype(np.float32)
        return r.randn(*self.shape).astype(np.float32)


def _t(*v):
    return str(tuple(v))


def _conv_attrs(kernel, stride, pad, dilate, nf, ng=1, no_bias=False, layout="NCHW", adj=None):
    a = {"dilate": _t(*dilate), "kernel": _t(*kernel), "layout": layout, "no_bias": str(no_bias),
         "num_filter": str(nf), "num_group": str(ng), "pad": _t(*pad), "stride": _t(*stride)}
    if adj is not None:
        a["adj"] = _t(*adj)
    return a


def _pool_attrs(kernel, stride, pad, pool_type, layout, conv="valid", glob=False, cip=None):
    a = {"global_pool": str(glob), "kernel": _t(*kernel), "layout": layout, "pad": _t(*pad),
         "pool_type": pool_type, "pooling_convention": conv, "stride": _t(*stride)}
    if cip is not None:
        a["count_include_pad"] = str(cip)
    return a


_BN = {"axis": "1", "eps": "1e-05", "fix_gamma": "False", "momentum": "0.9", "use_global_stats": "False"}

CASES = [
    Case("dense_relu", lambda: nn.Dense(4, activation="relu"), (2, 3, 5),
         ref=lambda x, P: np.maximum(x.reshape(2, -1) @ P["weight"].T + P["bias"], 0),
         nodes=[("FullyConnected", "dense0_fwd", {"flatten": "True", "no_bias": "False", "num_hidden": "4"}),
                ("Activation", "dense0_relu_fwd", {"act_type": "relu"})],
         params=[("dense0_weight", (4, 0)), ("dense0_bias", (4,))]),
    Case("dense_noflatten_nobias", lambda: nn.Dense(4, flatten=False, use_bias=False), (2, 3, 5),
         ref=lambda x, P: x @ P["weight"].T,
         nodes=[("FullyConnected", "dense0_fwd", {"flatten": "False", "no_bias": "True", "num_hidden": "4"})],
         params=[("dense0_weight", (4, 0))]),
    Case("dense_in_units", lambda: nn.Dense(3, in_units=5, activation="tanh"), (2, 5),
         ref=lambda x, P: np.tanh(x @ P["weight"].T + P["bias"]),
         nodes=[("FullyConnected", "dense0_fwd", {"flatten": "True", "no_bias": "False", "num_hidden": "3"}),
                ("Activation", "dense0_tanh_fwd", {"act_type": "tanh"})],
         params=[("dense0_weight", (3, 5)), ("dense0_bias", (3,))]),
    Case("conv2d", lambda: nn.Conv2D(4, 3, padding=1, activation="tanh"), (2, 3, 6, 6),
         ref=lambda x, P: np.tanh(np_conv(x, P["weight"], P["bias"], (1, 1), (1, 1), (1, 1))),
         nodes=[("Convolution", "conv0_fwd", _conv_attrs((3, 3), (1, 1), (1, 1), (1, 1), 4)),
                ("Activation", "conv0_tanh_fwd", {"act_type": "tanh"})],
         params=[("conv0_weight", (4, 0, 3, 3)), ("conv0_bias", (4,))]),
    Case("conv2d_strided_dilated", lambda: nn.Conv2D(4, (3, 2), strides=(2, 1), padding=(1, 0), dilation=(1, 2),
                                                      groups=2, in_channels=4), (2, 4, 7, 6),
         ref=lambda x, P: np_conv(x, P["weight"], P["bias"], (2, 1), (1, 0), (1, 2), groups=2),
         nodes=[("Convolution", "conv0_fwd", _conv_attrs((3, 2), (2, 1), (1, 0), (1, 2), 4, ng=2))],
         params=[("conv0_weight", (4, 2, 3, 2)), ("conv0_bias", (4,))]),
    Case("conv1d", lambda: nn.Conv1D(4, 3, strides=2, padding=1, dilation=2), (2, 3, 9),
         ref=lambda x, P: np_conv(x, P["weight"], P["bias"], (2,), (1,), (2,)),
         nodes=[("Convolution", "conv0_fwd", _conv_attrs((3,), (2,), (1,), (2,), 4, layout="NCW"))],
         params=[("conv0_weight", (4, 0, 3)), ("conv0_bias", (4,))]),
    Case("conv3d_nobias", lambda: nn.Conv3D(2, 2, use_bias=False), (2, 3, 4, 3, 4),
         ref=lambda x, P: np_conv(x, P["weight"], None, (1, 1, 1), (0, 0, 0), (1, 1, 1)),
         nodes=[("Convolution", "conv0_fwd", _conv_attrs((2, 2, 2), (1, 1, 1), (0, 0, 0), (1, 1, 1), 2,
                                                          no_bias=True, layout="NCDHW"))],
         params=[("conv0_weight", (2, 0, 2, 2, 2))]),
    Case("conv2d_nhwc", lambda: nn.Conv2D(4, 3, layout="NHWC"), (2, 5, 6, 3),
         ref=lambda x, P: np_conv(x.transpose(0, 3, 1, 2), P["weight"].transpose(0, 3, 1, 2), P["bias"],
                                  (1, 1), (0, 0), (1, 1)).transpose(0, 2, 3, 1),
         nodes=[("Convolution", "conv0_fwd", _conv_attrs((3, 3), (1, 1), (0, 0), (1, 1), 4, layout="NHWC"))],
         params=[("conv0_weight", (4, 3, 3, 0)), ("conv0_bias", (4,))]),
    Case("conv2d_transpose", lambda: nn.Conv2DTranspose(4, 3, strides=2, padding=1, output_padding=1), (2, 3, 4, 5),
         ref=lambda x, P: np_deconv(x, P["weight"], P["bias"], (2, 2), (1, 1), (1, 1), (1, 1)),
         nodes=[("Deconvolution", "conv0_fwd", _conv_attrs((3, 3), (2, 2), (1, 1), (1, 1), 4, adj=(1, 1)))],
         params=[("conv0_weight", (0, 4, 3, 3)), ("conv0_bias", (4,))]),
    Case("conv1d_transpose", lambda: nn.Conv1DTranspose(4, 3, strides=2, groups=2, in_channels=4), (2, 4, 5),
         ref=lambda x, P: np_deconv(x, P["weight"], P["bias"], (2,), (0,), (1,), (0,), groups=2),
         nodes=[("Deconvolution", "conv0_fwd", _conv_attrs((3,), (2,), (0,), (1,), 4, ng=2, layout="NCW",
                                                            adj=(0,)))],
         params=[("conv0_weight", (4, 2, 3)), ("conv0_bias", (4,))]),
    Case("conv3d_transpose", lambda: nn.Conv3DTranspose(2, 2, dilation=2, use_bias=False), (1, 3, 2, 3, 2),
         ref=lambda x, P: np_deconv(x, P["weight"], None, (1, 1, 1), (0, 0, 0), (2, 2, 2), (0, 0, 0)),
         nodes=[("Deconvolution", "conv0_fwd", _conv_attrs((2, 2, 2), (1, 1, 1), (0, 0, 0), (2, 2, 2), 2,
                                                            no_bias=True, layout="NCDHW", adj=(0, 0, 0)))],
         params=[("conv0_weight", (0, 2, 2, 2, 2))]),
    Case("maxpool2d", lambda: nn.MaxPool2D(), (2, 3, 6, 5),
         ref=lambda x, P: np_pool(x, (2, 2), (2, 2), (0, 0), "max"),
         nodes=[("Pooling", "pool0_fwd", _pool_attrs((2, 2), (2, 2), (0, 0), "max", "NCHW"))]),
    Case("maxpool1d_ceil", lambda: nn.MaxPool1D(3, 2, ceil_mode=True), (2, 3, 8),
         ref=lambda x, P: np_pool(x, (3,), (2,), (0,), "max", full=True),
         nodes=[("Pooling", "pool0_fwd", _pool_attrs((3,), (2,), (0,), "max", "NCW", conv="full"))]),
    Case("maxpool3d_pad", lambda: nn.MaxPool3D(2, 1, 1), (1, 2, 3, 3, 2),
         ref=lambda x, P: np_pool(x, (2, 2, 2), (1, 1, 1), (1, 1, 1), "max"),
         nodes=[("Pooling", "pool0_fwd", _pool_attrs((2, 2, 2), (1, 1, 1), (1, 1, 1), "max", "NCDHW"))]),
    Case("avgpool2d_exclude_pad", lambda: nn.AvgPool2D(3, 2, 1, count_include_pad=False), (2, 3, 6, 7),
         ref=lambda x, P: np_pool(x, (3, 3), (2, 2), (1, 1), "avg", count_include_pad=False),
         nodes=[("Pooling", "pool0_fwd", _pool_attrs((3, 3), (2, 2), (1, 1), "avg", "NCHW", cip=False))]),
    Case("avgpool1d", lambda: nn.AvgPool1D(padding=1), (2, 3, 7),
         ref=lambda x, P: np_pool(x, (2,), (2,), (1,), "avg"),
         nodes=[("Pooling", "pool0_fwd", _pool_attrs((2,), (2,), (1,), "avg", "NCW", cip=True))]),
    Case("avgpool3d", lambda: nn.AvgPool3D(), (1, 2, 4, 4, 2),
         ref=lambda x, P: np_pool(x, (2, 2, 2), (2, 2, 2), (0, 0, 0), "avg"),
         nodes=[("Pooling", "pool0_fwd", _pool_attrs((2, 2, 2), (2, 2, 2), (0, 0, 0), "avg", "NCDHW", cip=True))]),
    Case("avgpool2d_nhwc", lambda: nn.AvgPool2D(2, layout="NHWC"), (2, 4, 6, 3),
         ref=lambda x, P: np_pool(x.transpose(0, 3, 1, 2), (2, 2), (2, 2), (0, 0), "avg").transpose(0, 2, 3, 1),
         nodes=[("Pooling", "pool0_fwd", _pool_attrs((2, 2), (2, 2), (0, 0), "avg", "NHWC", cip=True))]),
    Case("globalavgpool2d", lambda: nn.GlobalAvgPool2D(), (2, 3, 4, 5),
         ref=lambda x, P: x.mean(axis=(2, 3), keepdims=True),
         nodes=[("Pooling", "pool0_fwd", _pool_attrs((1, 1), (1, 1), (0, 0), "avg", "NCHW", "full", True))]),
    Case("globalmaxpool2d", lambda: nn.GlobalMaxPool2D(), (2, 3, 4, 5),
         ref=lambda x, P: x.max(axis=(2, 3), keepdims=True),
         nodes=[("Pooling", "pool0_fwd", _pool_attrs((1, 1), (1, 1), (0, 0), "max", "NCHW", "full", True))]),
    Case("globalavgpool1d", lambda: nn.GlobalAvgPool1D(), (2, 3, 5),
         ref=lambda x, P: x.mean(axis=2, keepdims=True),
         nodes=[("Pooling", "pool0_fwd", _pool_attrs((1,), (1,), (0,), "avg", "NCW", "full", True))]),
    Case("globalmaxpool1d", lambda: nn.GlobalMaxPool1D(), (2, 3, 5),
         ref=lambda x, P: x.max(axis=2, keepdims=True),
         nodes=[("Pooling", "pool0_fwd", _pool_attrs((1,), (1,), (0,), "max", "NCW", "full", True))]),
    Case("globalavgpool3d", lambda: nn.GlobalAvgPool3D(), (2, 3, 2, 3, 2),
         ref=lambda x, P: x.mean(axis=(2, 3, 4), keepdims=True),
         nodes=[("Pooling", "pool0_fwd", _pool_attrs((1, 1, 1), (1, 1, 1), (0, 0, 0), "avg", "NCDHW", "full", True))]),
    Case("globalmaxpool3d", lambda: nn.GlobalMaxPool3D(), (2, 3, 2, 3, 2),
         ref=lambda x, P: x.max(axis=(2, 3, 4), keepdims=True),
         nodes=[("Pooling", "pool0_fwd", _pool_attrs((1, 1, 1), (1, 1, 1), (0, 0, 0), "max", "NCDHW", "full", True))]),
    Case("batchnorm", lambda: nn.BatchNorm(), (4, 3, 5),
         ref=lambda x, P: np_bn(x, P["gamma"], P["beta"], P["running_mean"], P["running_var"], 1e-5),
         nodes=[("BatchNorm", "batchnorm0_fwd", _BN)],
         params=[("batchnorm0_gamma", (0,)), ("batchnorm0_beta", (0,)), ("batchnorm0_running_mean", (0,)),
                 ("batchnorm0_running_var", (0,))]),
    Case("batchnorm_axis_noscale", lambda: nn.BatchNorm(axis=2, momentum=0.8, epsilon=1e-3, scale=False,
                                                        in_channels=4), (3, 2, 4),
         ref=lambda x, P: np_bn(x, P["gamma"], P["beta"], P["running_mean"], P["running_var"], 1e-3, axis=2,
                                fix_gamma=True),
         nodes=[("BatchNorm", "batchnorm0_fwd", {"axis": "2", "eps": "0.001", "fix_gamma": "True",
                                                  "momentum": "0.8", "use_global_stats": "False"})],
         params=[("batchnorm0_gamma", (4,)), ("batchnorm0_beta", (4,)), ("batchnorm0_running_mean", (4,)),
                 ("batchnorm0_running_var", (4,))]),
    Case("batchnorm_relu", lambda: nn.BatchNormReLU(), (4, 3, 5),
         ref=lambda x, P: np.maximum(np_bn(x, P["gamma"], P["beta"], P["running_mean"], P["running_var"], 1e-5), 0),
         params=[("batchnormrelu0_gamma", (0,)), ("batchnormrelu0_beta", (0,)),
                 ("batchnormrelu0_running_mean", (0,)), ("batchnormrelu0_running_var", (0,))]),
    Case("instancenorm", lambda: nn.InstanceNorm(scale=True), (2, 3, 5),
         ref=lambda x, P: np_instancenorm(x, P["gamma"], P["beta"], 1e-5),
         nodes=[("InstanceNorm", "instancenorm0_fwd", {"eps": "1e-05"})],
         params=[("instancenorm0_gamma", (0,)), ("instancenorm0_beta", (0,))]),
    Case("instancenorm_axis2", lambda: nn.InstanceNorm(axis=2, epsilon=1e-3), (2, 3, 4, 2),
         ref=lambda x, P: np_instancenorm(x.swapaxes(1, 2), P["gamma"], P["beta"], 1e-3).swapaxes(1, 2),
         nodes=[("SwapAxis", "instancenorm0_swapaxes0", {"dim1": "1", "dim2": "2"}),
                ("InstanceNorm", "instancenorm0_fwd", {"eps": "0.001"}),
                ("SwapAxis", "instancenorm0_swapaxes1", {"dim1": "1", "dim2": "2"})],
         params=[("instancenorm0_gamma", (0,)), ("instancenorm0_beta", (0,))]),
    Case("layernorm", lambda: nn.LayerNorm(), (2, 3, 5),
         ref=lambda x, P: np_layernorm(x, P["gamma"], P["beta"], 1e-5),
         nodes=[("LayerNorm", "layernorm0_layernorm0", {"axis": "-1", "eps": "1e-05"})],
         params=[("layernorm0_gamma", (0,)), ("layernorm0_beta", (0,))]),
    Case("layernorm_axis1", lambda: nn.LayerNorm(axis=1, epsilon=1e-3, in_channels=3), (2, 3, 4),
         ref=lambda x, P: np_layernorm(x, P["gamma"], P["beta"], 1e-3, axis=1),
         nodes=[("LayerNorm", "layernorm0_layernorm0", {"axis": "1", "eps": "0.001"})],
         params=[("layernorm0_gamma", (3,)), ("layernorm0_beta", (3,))]),
    Case("groupnorm", lambda: nn.GroupNorm(2), (2, 4, 3),
         ref=lambda x, P: np_groupnorm(x, P["gamma"], P["beta"], 2, 1e-5),
         nodes=[("GroupNorm", "groupnorm0_groupnorm0", {"eps": "1e-05", "num_groups": "2"})],
         params=[("groupnorm0_gamma", (2,)), ("groupnorm0_beta", (2,))]),
    Case("embedding", lambda: nn.Embedding(10, 4), (2, 3), int_input=10,
         ref=lambda x, P: P["weight"][x.astype(int)],
         nodes=[("Embedding", "embedding0_fwd", {"dtype": "float32", "input_dim": "10", "output_dim": "4",
                                                  "sparse_grad": "False"})],
         params=[("embedding0_weight", (10, 4))]),
    Case("flatten", lambda: nn.Flatten(), (2, 3, 4), ref=lambda x, P: x.reshape(2, -1),
         nodes=[("Flatten", "flatten0_flatten0", {})]),
    Case("dropout", lambda: nn.Dropout(0.5), (3, 4), ref=lambda x, P: x,
         nodes=[("Dropout", "dropout0_fwd", {"axes": "()", "cudnn_off": "False", "p": "0.5"})]),
    Case("dropout_axes", lambda: nn.Dropout(0.3, axes=(1,)), (3, 4, 2), ref=lambda x, P: x,
         nodes=[("Dropout", "dropout0_fwd", {"axes": "(1,)", "cudnn_off": "False", "p": "0.3"})]),
    Case("dropout_zero", lambda: nn.Dropout(0.0), (3, 4), ref=lambda x, P: x,
         nodes=[("_copy", "dropout0_identity0", {})]),
    Case("activation", lambda: nn.Activation("sigmoid"), (2, 3), ref=lambda x, P: sigmoid(x),
         nodes=[("Activation", "sigmoid0_fwd", {"act_type": "sigmoid"})]),
    Case("activation_softrelu", lambda: nn.Activation("softrelu"), (2, 3), ref=lambda x, P: np.log1p(np.exp(x)),
         nodes=[("Activation", "softrelu0_fwd", {"act_type": "softrelu"})]),
    Case("leakyrelu", lambda: nn.LeakyReLU(0.1), (2, 3), ref=lambda x, P: np.where(x >= 0, x, 0.1 * x),
         nodes=[("LeakyReLU", "leakyrelu0_fwd", {"act_type": "leaky", "slope": "0.1"})]),
    Case("prelu", lambda: nn.PReLU(), (2, 3), ref=lambda x, P: np.where(x >= 0, x, P["alpha"] * x),
         nodes=[("LeakyReLU", "prelu0_fwd", {"act_type": "prelu"})], params=[("prelu0_alpha", (1,))]),
    Case("prelu_channels", lambda: nn.PReLU(mx.init.Constant(0.1), in_channels=3), (2, 3, 4),
         ref=lambda x, P: np.where(x >= 0, x, P["alpha"].reshape(1, 3, 1) * x),
         nodes=[("LeakyReLU", "prelu0_fwd", {"act_type": "prelu"})], params=[("prelu0_alpha", (3,))]),
    Case("elu", lambda: nn.ELU(0.5), (2, 3), ref=lambda x, P: np.where(x > 0, x, 0.5 * np.expm1(x)),
         nodes=[("LeakyReLU", "elu0_leakyrelu0", {"act_type": "elu", "slope": "0.5"})]),
    Case("selu", lambda: nn.SELU(), (2, 3),
         ref=lambda x, P: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)),
         nodes=[("LeakyReLU", "selu0_fwd", {"act_type": "selu"})]),
    Case("gelu", lambda: nn.GELU(), (2, 3), ref=lambda x, P: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
         nodes=[("LeakyReLU", "gelu0_fwd", {"act_type": "gelu"})]),
    Case("swish", lambda: nn.Swish(2.0), (2, 3), ref=lambda x, P: x * sigmoid(2.0 * x),
         nodes=[("_mul_scalar", "swish0__mulscalar0", {"scalar": "2.0"}), ("sigmoid", "swish0_fwd", {}),
                ("elemwise_mul", "swish0__mul0", {})]),
    Case("reflectionpad2d", lambda: nn.ReflectionPad2D(1), (2, 3, 4, 5),
         ref=lambda x, P: np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="reflect"),
         nodes=[("Pad", "reflectionpad2d0_pad0", {"mode": "reflect", "pad_width": "(0, 0, 0, 0, 1, 1, 1, 1)"})]),
    Case("hybridlambda_name", lambda: nn.HybridLambda("tanh"), (2, 3), ref=lambda x, P: np.tanh(x),
         nodes=[("tanh", "hybridlambda0_tanh0", {})]),
    Case("hybridlambda_func", lambda: nn.HybridLambda(lambda F, x: F.LeakyReLU(x, slope=0.2)), (2, 3),
         ref=lambda x, P: np.where(x >= 0, x, 0.2 * x),
         nodes=[("LeakyReLU", "hybridlambda0_leakyrelu0", {"slope": "0.2"})]),
]


def _make_seq():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(4, in_units=5), nn.LayerNorm(), nn.Activation("relu"), nn.Dense(2))
    return net


def _seq_ref(x, P):
    h = x @ P["dense0_weight"].T + P["dense0_bias"]
    h = np.maximum(np_layernorm(h, P["layernorm0_gamma"], P["layernorm0_beta"], 1e-5), 0)
    return h @ P["dense1_weight"].T + P["dense1_bias"]


CASES.append(Case(
    "hybridsequential", _make_seq, (3, 5), ref=_seq_ref,
    nodes=[("FullyConnected", "hybridsequential0_dense0_fwd",
            {"flatten": "True", "no_bias": "False", "num_hidden": "4"}),
           ("LayerNorm", "hybridsequential0_layernorm0_layernorm0", {"axis": "-1", "eps": "1e-05"}),
           ("Activation", "hybridsequential0_relu0_fwd", {"act_type": "relu"}),
           ("FullyConnected", "hybridsequential0_dense1_fwd",
            {"flatten": "True", "no_bias": "False", "num_hidden": "2"})],
    params=[("hybridsequential0_dense0_weight", (4, 5)), ("hybridsequential0_dense0_bias", (4,)),
            ("hybridsequential0_layernorm0_gamma", (0,)), ("hybridsequential0_layernorm0_beta", (0,)),
            ("hybridsequential0_dense1_weight", (2, 0)), ("hybridsequential0_dense1_bias", (2,))]))
_BY_ID = {c.id: c for c in CASES}


def _build(case):
    """The case's layer built with fresh global name counters (prefixes start at 0)."""
    with mx.name.NameManager():
        net = case.make()
    return net


def _param_arrays(net):
    """{name without the block prefix: NumPy array (float64)} of the initialized parameters."""
    return {k[len(net.prefix):]: p.data().asnumpy().astype(np.float64)
            for k, p in net.collect_params().items()}


def _init(net):
    mx.random.seed(7)
    net.initialize(mx.init.Uniform(0.5))
    return net


def _forward_backward(net, x_np, head_np, int_input):
    """Training-mode forward under record + backward of sum(out * head); returns the output,
    the input gradient (None for index inputs) and every parameter gradient."""
    x = nd.array(x_np)
    if not int_input:
        x.attach_grad()
    mx.random.seed(11)
    with autograd.record():
        y = net(x)
        loss = (y * nd.array(head_np)).sum()
    loss.backward()
    grads = {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items() if p.grad_req != "null"}
    return y.asnumpy(), (None if int_input else x.grad.asnumpy().copy()), grads


# ---- numbers ----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_forward_matches_numpy(case):
    net = _init(_build(case))
    x = case.input()
    y = net(nd.array(x)).asnumpy()          # predict mode, eager (completes deferred init)
    ref = case.ref(x.astype(np.float64), _param_arrays(net))
    assert y.shape == ref.shape
    np.testing.assert_allclose(y, ref, rtol=case.tol[0], atol=case.tol[1])
    net.hybridize()
    yh = net(nd.array(x)).asnumpy()         # predict mode, hybridized
    np.testing.assert_allclose(yh, ref, rtol=case.tol[0], atol=case.tol[1])


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_eager_and_hybridized_agree_with_gradients(case):
    net = _init(_build(case))
    x = case.input()
    out_shape = net(nd.array(x)).shape
    head = np.random.RandomState(3).randn(*out_shape).astype(np.float32)
    y_e, gx_e, g_e = _forward_backward(net, x, head, case.int_input)
    net.hybridize()
    y_h, gx_h, g_h = _forward_backward(net, x, head, case.int_input)
    np.testing.assert_allclose(y_h, y_e, rtol=1e-5, atol=1e-6)
    if gx_e is not None:
        assert np.abs(gx_e).sum() > 0, "input gradient is identically zero: nothing was checked"
        np.testing.assert_allclose(gx_h, gx_e, rtol=1e-5, atol=1e-6)
    assert sorted(g_h) == sorted(g_e)
    for k in g_e:
        np.testing.assert_allclose(g_h[k], g_e[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_dense_gradients_match_analytic():
    net = _init(nn.Dense(3, activation="tanh", in_units=4))
    x = np.random.RandomState(0).randn(5, 4).astype(np.float32)
    head = np.random.RandomState(1).randn(5, 3)
    for hybrid in (False, True):
        net.hybridize(hybrid)
        _, gx, g = _forward_backward(net, x, head.astype(np.float32), False)
        W, b = net.weight.data().asnumpy().astype(np.float64), net.bias.data().asnumpy().astype(np.float64)
        dz = head * (1 - np.tanh(x @ W.T + b) ** 2)
        np.testing.assert_allclose(g[net.weight.name], dz.T @ x, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(g[net.bias.name], dz.sum(0), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(gx, dz @ W, rtol=1e-4, atol=1e-5)


def test_dropout_modes():
    x = nd.array(np.random.RandomState(0).uniform(1, 2, (50, 40)))
    for hybrid in (False, True):
        net = nn.Dropout(0.4)
        net.initialize()
        net.hybridize(hybrid)
        np.testing.assert_array_equal(net(x).asnumpy(), x.asnumpy())        # predict mode
        with autograd.predict_mode():
            np.testing.assert_array_equal(net(x).asnumpy(), x.asnumpy())
        with autograd.record(train_mode=False):
            np.testing.assert_array_equal(net(x).asnumpy(), x.asnumpy())
        with autograd.record():
            y = net(x).asnumpy()
        kept = y != 0
        assert 0.5 < kept.mean() < 0.7                                      # about 1 - 0.4
        np.testing.assert_allclose(y[kept], x.asnumpy()[kept] / 0.6, rtol=1e-6)


def test_dropout_axes_share_mask():
    net = nn.Dropout(0.5, axes=(1,))
    net.initialize()
    x = nd.ones((6, 5, 4))
    with autograd.record():
        y = net(x).asnumpy()
    # the mask is shared along axis 1
    assert (y == y[:, :1, :]).all()
    assert 0 < (y == 0).mean() < 1


# ---- BatchNorm running statistics ----------------------------------------------------------
@pytest.mark.parametrize("hybrid", [False, True])
def test_batchnorm_running_stats(hybrid):
    net = nn.BatchNorm(momentum=0.7, in_channels=3)
    net.initialize()
    net.gamma.set_data(nd.array([1.5, 0.5, 2.0]))
    net.beta.set_data(nd.array([0.1, -0.2, 0.3]))
    net.hybridize(hybrid)
    x = np.random.RandomState(0).randn(8, 3, 4).astype(np.float32) * 2 + 1
    rm0, rv0 = net.running_mean.data().asnumpy().copy(), net.running_var.data().asnumpy().copy()
    # predict mode: normalize with the running statistics, no update
    y = net(nd.array(x)).asnumpy()
    np.testing.assert_allclose(y, np_bn(x, np.array([1.5, 0.5, 2.0]), np.array([0.1, -0.2, 0.3]), rm0, rv0, 1e-5),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(net.running_mean.data().asnumpy(), rm0)
    np.testing.assert_array_equal(net.running_var.data().asnumpy(), rv0)
    # training step: batch statistics, running stats move by momentum (biased variance)
    xn = nd.array(x)
    xn.attach_grad()
    with autograd.record():
        y = net(xn)
    y.backward()
    mean, var = np_batch_stats(x.astype(np.float64))
    np.testing.assert_allclose(y.asnumpy(), np_bn(x, np.array([1.5, 0.5, 2.0]), np.array([0.1, -0.2, 0.3]),
                                                  mean, var, 1e-5), rtol=1e-4, atol=1e-4)
    rm1, rv1 = 0.7 * rm0 + 0.3 * mean, 0.7 * rv0 + 0.3 * var
    np.testing.assert_allclose(net.running_mean.data().asnumpy(), rm1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.running_var.data().asnumpy(), rv1, rtol=1e-5, atol=1e-6)
    # running stats never get gradients
    assert net.running_mean.grad_req == "null" and net.running_var.grad_req == "null"
    assert not net.running_mean.differentiable
    # the predict path now uses the updated statistics
    y2 = net(nd.array(x)).asnumpy()
    np.testing.assert_allclose(y2, np_bn(x, np.array([1.5, 0.5, 2.0]), np.array([0.1, -0.2, 0.3]), rm1, rv1, 1e-5),
                               rtol=1e-4, atol=1e-4)
    # record(train_mode=False) is predict mode: no update
    with autograd.record(train_mode=False):
        net(nd.array(x))
    np.testing.assert_allclose(net.running_mean.data().asnumpy(), rm1, rtol=1e-5, atol=1e-6)


def test_batchnorm_use_global_stats_and_center_scale():
    net = nn.BatchNorm(use_global_stats=True, center=False, scale=False, in_channels=2)
    net.initialize()
    assert net.gamma.grad_req == "null" and net.beta.grad_req == "null"
    net.running_mean.set_data(nd.array([1.0, -1.0]))
    net.running_var.set_data(nd.array([4.0, 0.25]))
    x = np.random.RandomState(0).randn(3, 2).astype(np.float32)
    with autograd.record():
        y = net(nd.array(x))
    expected = (x - np.array([1.0, -1.0])) / np.sqrt(np.array([4.0, 0.25]) + 1e-5)
    np.testing.assert_allclose(y.asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_batchnorm_cast_keeps_float32():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(3, in_units=2), nn.BatchNorm(in_channels=3))
    net.initialize()
    net.cast("float16")
    assert net[0].weight.dtype == np.float16
    assert net[1].gamma.dtype == np.float32 and net[1].running_var.dtype == np.float32


# ---- names, shapes, parameter attributes --------------------------------------------------
_PARAM_CASES = [c for c in CASES if c.params]


@pytest.mark.parametrize("case", _PARAM_CASES, ids=[c.id for c in _PARAM_CASES])
def test_parameter_names_and_shapes(case):
    net = _build(case)
    params = net.collect_params()
    assert [(k, p.shape) for k, p in params.items()] == case.params
    assert all(k == p.name for k, p in params.items())


def test_prefixes_and_scopes():
    with mx.name.NameManager():
        d0, d1 = nn.Dense(2), nn.Dense(2)
        c0, p0, p1 = nn.Conv2DTranspose(2, 3), nn.MaxPool2D(), nn.GlobalAvgPool1D()
        a0, a1 = nn.Activation("relu"), nn.Activation("tanh")
        seq = nn.HybridSequential()
        with seq.name_scope():
            seq.add(nn.Dense(2, activation="relu"), nn.Conv1D(2, 1), nn.Dense(2), nn.BatchNorm(),
                    nn.LeakyReLU(0.1), nn.PReLU(), nn.Embedding(3, 2), nn.Flatten(), nn.Dropout(0.1),
                    nn.HybridLambda("relu"), nn.ELU(), nn.SELU(), nn.GELU(), nn.Swish(), nn.LayerNorm(),
                    nn.InstanceNorm(), nn.GroupNorm(), nn.ReflectionPad2D(), nn.BatchNormReLU())
        named = nn.Dense(2, prefix="fc_")
    assert [b.prefix for b in (d0, d1, c0, p0, p1, a0, a1, named)] == [
        "dense0_", "dense1_", "conv0_", "pool0_", "pool1_", "relu0_", "tanh0_", "fc_"]
    assert seq.prefix == "hybridsequential0_"
    assert [b.prefix[len(seq.prefix):] for b in seq._children.values()] == [
        "dense0_", "conv0_", "dense1_", "batchnorm0_", "leakyrelu0_", "prelu0_", "embedding0_", "flatten0_",
        "dropout0_", "hybridlambda0_", "elu0_", "selu0_", "gelu0_", "swish0_", "layernorm0_", "instancenorm0_",
        "groupnorm0_", "reflectionpad2d0_", "batchnormrelu0_"]
    assert seq[0].act.prefix == "hybridsequential0_dense0_relu_"
    keys = list(seq.collect_params().keys())
    assert keys[:6] == ["hybridsequential0_dense0_weight", "hybridsequential0_dense0_bias",
                        "hybridsequential0_conv0_weight", "hybridsequential0_conv0_bias",
                        "hybridsequential0_dense1_weight", "hybridsequential0_dense1_bias"]
    assert "hybridsequential0_prelu0_alpha" in keys and "hybridsequential0_batchnorm0_running_var" in keys


def test_parameter_attributes():
    bn = nn.BatchNorm(center=False, gamma_initializer="zeros", running_variance_initializer=mx.init.Constant(2.0))
    assert bn.gamma.grad_req == "write" and bn.beta.grad_req == "null"
    assert bn.running_mean.grad_req == "null" and not bn.running_var.differentiable
    assert bn.gamma.init == "zeros" and bn.beta.init == "zeros" and bn.running_mean.init == "zeros"
    bn.initialize()
    bn(nd.ones((2, 3)))
    np.testing.assert_array_equal(bn.running_var.data().asnumpy(), [2.0, 2.0, 2.0])
    d = nn.Dense(3, dtype="float64", in_units=2, weight_initializer="ones", bias_initializer=mx.init.Constant(0.5))
    d.initialize()
    assert d.weight.dtype == np.float64 and d.bias.dtype == np.float64
    np.testing.assert_array_equal(d.weight.data().asnumpy(), np.ones((3, 2)))
    np.testing.assert_array_equal(d.bias.data().asnumpy(), [0.5] * 3)
    e = nn.Embedding(5, 2, sparse_grad=True)
    assert e.weight._grad_stype == "row_sparse"
    p = nn.PReLU()
    p.initialize()
    np.testing.assert_array_equal(p.alpha.data().asnumpy(), [0.25])
    inst = nn.InstanceNorm()
    assert inst.gamma.grad_req == "null" and inst.beta.grad_req == "write"


def test_conv_parameters_with_in_channels_and_groups():
    c = nn.Conv2D(6, 3, groups=3, in_channels=9)
    assert c.weight.shape == (6, 3, 3, 3)
    t = nn.Conv2DTranspose(6, 3, groups=3, in_channels=9)
    assert t.weight.shape == (9, 2, 3, 3)
    with pytest.raises(MXNetError, match="groups"):
        nn.Conv2D(5, 3, groups=2)


# ---- operator nodes and attributes (what export writes) ----------------------------------
_NODE_CASES = [c for c in CASES if c.nodes]


def _export(net, x, tmp_path, name="m"):
    net.hybridize()
    y = net(nd.array(x))
    path = str(tmp_path / name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net.export(path)
        sym_file, params_file = f"{path}-symbol.json", f"{path}-0000.params"
    return y.asnumpy(), sym_file, params_file


@pytest.mark.parametrize("case", _NODE_CASES, ids=[c.id for c in _NODE_CASES])
def test_operator_nodes_and_attributes(case, tmp_path):
    net = _init(_build(case))
    _, sym_file, _ = _export(net, case.input(), tmp_path)
    with open(sym_file) as f:
        graph = json.load(f)
    ops = [(n["op"], n["name"], n.get("attrs", {})) for n in graph["nodes"] if n["op"] != "null"]
    assert ops == case.nodes
    variables = [n["name"] for n in graph["nodes"] if n["op"] == "null"]
    assert variables == ["data"] + [name for name, _ in case.params]


def test_parameter_variable_attributes(tmp_path):
    with mx.name.NameManager():
        net = nn.HybridSequential()
        net.add(nn.Dense(3), nn.BatchNorm(), nn.PReLU())
    net.initialize()
    _, sym_file, params_file = _export(net, np.ones((2, 4), np.float32), tmp_path)
    with open(sym_file) as f:
        nodes = {n["name"]: n.get("attrs", {}) for n in json.load(f)["nodes"]}
    assert nodes["dense0_weight"]["__shape__"] == "(3, 0)" and "__init__" not in nodes["dense0_weight"]
    assert nodes["dense0_bias"]["__init__"] == "zeros"
    assert nodes["batchnorm0_gamma"]["__shape__"] == "(0,)" and nodes["batchnorm0_gamma"]["__init__"] == "ones"
    assert nodes["batchnorm0_running_var"]["__init__"] == "ones"
    assert json.loads(nodes["prelu0_alpha"]["__init__"]) == ["constant", {"value": 0.25}]
    names = list(nd.load(params_file).keys())
    assert names == ["arg:dense0_weight", "arg:dense0_bias", "arg:batchnorm0_gamma", "arg:batchnorm0_beta",
                     "aux:batchnorm0_running_mean", "aux:batchnorm0_running_var", "arg:prelu0_alpha"]


def test_batchnorm_relu_node(tmp_path):
    net = _init(_build(_BY_ID["batchnorm_relu"]))
    _, sym_file, _ = _export(net, _BY_ID["batchnorm_relu"].input(), tmp_path)
    with open(sym_file) as f:
        ops = [(n["op"], n["name"], n.get("attrs", {})) for n in json.load(f)["nodes"] if n["op"] != "null"]
    assert ops == [("_contrib_BatchNormWithReLU", "batchnormrelu0_fwd", _BN)]


# ---- export / SymbolBlock.imports round trip ----------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_export_imports_roundtrip(case, tmp_path):
    net = _init(_build(case))
    x = case.input()
    if case.id.startswith("batchnorm"):   # non-trivial running statistics
        with autograd.record():
            net(nd.array(x * 2 + 1)).backward()
    y, sym_file, params_file = _export(net, x, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        imported = mx.gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    np.testing.assert_allclose(imported(nd.array(x)).asnumpy(), y, rtol=1e-6, atol=1e-6)
    imported.hybridize()
    np.testing.assert_allclose(imported(nd.array(x)).asnumpy(), y, rtol=1e-6, atol=1e-6)


# ---- deferred initialization ---------------------------------------------------------------
@pytest.mark.parametrize("hybrid", [False, True])
@pytest.mark.parametrize("make,shape,expected", [
    (lambda: nn.Dense(4), (2, 3, 5), {"weight": (4, 15), "bias": (4,)}),
    (lambda: nn.Dense(4, flatten=False), (2, 3, 5), {"weight": (4, 5), "bias": (4,)}),
    (lambda: nn.Conv2D(4, 3, groups=2), (1, 6, 5, 5), {"weight": (4, 3, 3, 3), "bias": (4,)}),
    (lambda: nn.Conv2DTranspose(4, 3), (1, 6, 5, 5), {"weight": (6, 4, 3, 3), "bias": (4,)}),
    (lambda: nn.BatchNorm(axis=-1), (2, 3, 5), {"gamma": (5,), "beta": (5,), "running_mean": (5,),
                                                "running_var": (5,)}),
    (lambda: nn.InstanceNorm(), (2, 3, 5), {"gamma": (3,), "beta": (3,)}),
    (lambda: nn.LayerNorm(), (2, 3, 5), {"gamma": (5,), "beta": (5,)}),
], ids=["dense", "dense_noflatten", "conv_groups", "deconv", "batchnorm", "instancenorm", "layernorm"])
def test_deferred_init_completes_on_first_forward(make, shape, expected, hybrid):
    net = make()
    net.initialize()
    deferred = [getattr(net, n) for n in expected if 0 in getattr(net, n).shape]
    assert deferred
    for p in deferred:
        with pytest.raises(DeferredInitializationError):
            p.data()
    net.hybridize(hybrid)
    y = net(nd.ones(shape))
    assert np.isfinite(y.asnumpy()).all()
    for name, shp in expected.items():
        assert getattr(net, name).shape == shp
        assert getattr(net, name).data().shape == shp


def test_deferred_init_in_nested_hybridized_net():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(),
                nn.Flatten(), nn.Dense(3))
    net.initialize()
    net.hybridize()
    y = net(nd.ones((2, 5, 6, 6)))
    assert y.shape == (2, 3)
    assert net[0].weight.shape == (4, 5, 3, 3) and net[1].gamma.shape == (4,) and net[5].weight.shape == (3, 4)
    assert repr(net[5]) == "Dense(4 -> 3, linear)"


# ---- errors ----------------------------------------------------------------------------------
def test_dense_wrong_in_units_eager_error():
    net = nn.Dense(4, in_units=3)
    net.initialize()
    with pytest.raises(MXNetError, match=r"in_units=3.*\(2, 5\)|\(2, 5\).*in_units=3"):
        net(nd.ones((2, 5)))
    net2 = nn.Dense(4)
    net2.initialize()
    net2(nd.ones((2, 3)))
    with pytest.raises(MXNetError, match="in_units"):
        net2(nd.ones((2, 7)))


def test_dense_wrong_in_units_hybridized_error():
    net = nn.Dense(4, in_units=3)
    net.initialize()
    net.hybridize()
    with pytest.raises(MXNetError, match=r"dense\d+_fwd[\s\S]*\(2, 5\)[\s\S]*\(4, 3\)"):
        net(nd.ones((2, 5)))


def test_constructor_errors():
    with pytest.raises(ValueError, match="LeakyReLU"):
        nn.LeakyReLU(-0.1)
    with pytest.raises(ValueError, match="kernel_size"):
        nn.Conv2D(3, (3, 3, 3))
    with pytest.raises(ValueError, match="layout"):
        nn.Conv1D(3, 3, layout="NWC")
    with pytest.raises(ValueError, match="pool_size"):
        nn.MaxPool2D((2, 2, 2))
    with pytest.raises(ValueError, match="NCHW"):
        nn.AvgPool2D(layout="NCW")
    with pytest.raises(ValueError, match="not_an_op"):
        nn.HybridLambda("not_an_op")
    with pytest.raises(ValueError, match="not_an_op"):
        nn.Lambda("not_an_op")
    with pytest.raises(ValueError, match="Unrecognized"):
        nn.Lambda(3)
    with pytest.raises(ValueError, match="BatchNormReLU"):
        nn.BatchNorm(fuse_relu=True)


# ---- reprs -----------------------------------------------------------------------------------
def test_reprs():
    assert repr(nn.Dense(256, activation="relu")) == "Dense(None -> 256, Activation(relu))"
    assert repr(nn.Dense(10, in_units=20)) == "Dense(20 -> 10, linear)"
    assert repr(nn.Conv2D(6, kernel_size=5)) == "Conv2D(None -> 6, kernel_size=(5, 5), stride=(1, 1))"
    assert repr(nn.Conv2D(6, 3, strides=2, padding=1, dilation=2, groups=2, use_bias=False, activation="relu",
                          in_channels=4)) == ("Conv2D(2 -> 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), "
                                              "dilation=(2, 2), groups=2, bias=False, Activation(relu))")
    # (MXNet prints weight.shape[1], i.e. in_channels / groups)
    assert repr(nn.Conv1D(3, 2)) == "Conv1D(None -> 3, kernel_size=(2,), stride=(1,))"
    # MXNet 1.x prints weight.shape[1] -> weight.shape[0] for transposed convolutions too, and never
    # shows output_padding
    assert repr(nn.Conv2DTranspose(6, 3, output_padding=1, in_channels=2)) == \
        "Conv2DTranspose(6 -> 2, kernel_size=(3, 3), stride=(1, 1))"
    assert repr(nn.MaxPool2D()) == ("MaxPool2D(size=(2, 2), stride=(2, 2), padding=(0, 0), ceil_mode=False, "
                                    "global_pool=False, pool_type=max, layout=NCHW)")
    assert repr(nn.AvgPool1D(3, 1, 1, ceil_mode=True)) == (
        "AvgPool1D(size=(3,), stride=(1,), padding=(1,), ceil_mode=True, global_pool=False, pool_type=avg, "
        "layout=NCW)")
    assert repr(nn.GlobalAvgPool2D()) == ("GlobalAvgPool2D(size=(1, 1), stride=(1, 1), padding=(0, 0), "
                                          "ceil_mode=True, global_pool=True, pool_type=avg, layout=NCHW)")
    assert repr(nn.BatchNorm()) == ("BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, "
                                    "use_global_stats=False, in_channels=None)")
    assert repr(nn.BatchNorm(scale=False, in_channels=8)) == (
        "BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=True, use_global_stats=False, in_channels=8)")
    assert repr(nn.Dropout(0.5)) == "Dropout(p = 0.5, axes=())"
    assert repr(nn.Embedding(50, 16)) == "Embedding(50 -> 16, float32)"
    assert repr(nn.Flatten()) == "Flatten"
    assert repr(nn.InstanceNorm()) == "InstanceNorm(eps=1e-05, axis=1, center=True, scale=False, in_channels=0)"
    assert repr(nn.LayerNorm(in_channels=4)) == "LayerNorm(eps=1e-05, axis=-1, center=True, scale=True, in_channels=4)"
    assert repr(nn.GroupNorm(4)) == "GroupNorm(eps=1e-05, num_groups=4, center=True, scale=True)"
    assert repr(nn.Activation("tanh")) == "Activation(tanh)"
    assert repr(nn.LeakyReLU(0.1)) == "LeakyReLU(0.1)"
    assert repr(nn.ELU()) == "ELU(\n\n)"
    assert repr(nn.HybridLambda("tanh")) == "HybridLambda(tanh)"

    def my_fn(x):
        return x
    assert repr(nn.Lambda(my_fn)) == "Lambda(my_fn)"
    assert repr(nn.Lambda("tanh")) == "Lambda(tanh)"
    seq = nn.HybridSequential()
    seq.add(nn.Dense(2), nn.Activation("relu"))
    assert repr(seq) == "HybridSequential(\n  (0): Dense(None -> 2, linear)\n  (1): Activation(relu)\n)"
    outer = nn.Sequential()
    outer.add(seq)
    assert repr(outer) == ("Sequential(\n  (0): HybridSequential(\n    (0): Dense(None -> 2, linear)\n"
                           "    (1): Activation(relu)\n  )\n)")


# ---- containers ------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [nn.Sequential, nn.HybridSequential])
def test_sequential_indexing(cls):
    net = cls()
    with net.name_scope():
        net.add(nn.Dense(3, in_units=2), nn.Activation("tanh"), nn.Dense(2, in_units=3))
    net.initialize()
    assert len(net) == 3
    assert net[0] is list(net._children.values())[0] and net[-1] is list(net._children.values())[2]
    sub = net[1:]
    assert type(sub) is cls and len(sub) == 2 and sub[0] is net[1] and sub[1] is net[2]
    assert sub.prefix == net.prefix
    assert list(sub.collect_params().keys()) == [net[2].weight.name, net[2].bias.name]
    x = nd.array(np.random.RandomState(0).randn(4, 2))
    np.testing.assert_allclose(sub(net[0](x)).asnumpy(), net(x).asnumpy(), rtol=1e-6)
    W0, b0 = net[0].weight.data().asnumpy(), net[0].bias.data().asnumpy()
    W2, b2 = net[2].weight.data().asnumpy(), net[2].bias.data().asnumpy()
    np.testing.assert_allclose(net(x).asnumpy(), np.tanh(x.asnumpy() @ W0.T + b0) @ W2.T + b2, rtol=1e-5,
                               atol=1e-6)


def test_sequential_multiple_outputs_chain():
    class Split(nn.HybridBlock):
        def hybrid_forward(self, F, x):
            return x * 2, x + 1

    class Join(nn.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return a - b

    for cls in (nn.HybridSequential,):
        net = cls()
        net.add(Split(), Join())
        net.initialize()
        x = nd.array([1.0, 2.0, 5.0])
        for hybrid in (False, True):
            net.hybridize(hybrid)
            np.testing.assert_allclose(net(x).asnumpy(), [0.0, 1.0, 4.0])
    seq = nn.Sequential()
    seq.add(Split())
    out = seq(nd.array([1.0]))
    assert isinstance(out, tuple) and len(out) == 2


def test_sequential_hybridize_warns_when_all_children_hybrid():
    net = nn.Sequential()
    net.add(nn.Dense(2), nn.Dense(3))
    with pytest.warns(UserWarning, match="HybridSequential"):
        net.hybridize()
    assert net[0]._options.active


def test_hybrid_sequential_rejects_plain_blocks():
    net = nn.HybridSequential()
    with pytest.raises(ValueError, match="HybridBlock"):
        net.add(nn.Lambda("tanh"))


def test_lambda_blocks():
    x = nd.array(np.random.RandomState(0).randn(3, 4))
    lam = nn.Lambda(lambda a, b: a * b)
    np.testing.assert_allclose(lam(x, x).asnumpy(), x.asnumpy() ** 2, rtol=1e-6)
    hl = nn.HybridLambda(lambda F, a, b: F.broadcast_add(a, b))
    y = nd.array([1.0, 2.0, 3.0, 4.0])
    for hybrid in (False, True):
        hl.hybridize(hybrid)
        np.testing.assert_allclose(hl(x, y).asnumpy(), x.asnumpy() + y.asnumpy(), rtol=1e-6)


# ---- real MXNet fixtures: same graph (ops, names, attributes) and same outputs ---------------
def _fixture(case):
    d = os.path.join(FIXTURES, case)
    if not os.path.isdir(d):
        pytest.skip(f"fixture {case} not available")
    return d


def _build_fixture_model(case):
    with mx.name.NameManager():
        if case == "mlp":
            net = nn.HybridSequential()
            net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
        elif case == "convbn":
            net = nn.HybridSequential()
            with net.name_scope():
                net.add(nn.Conv2D(8, kernel_size=3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                        nn.GlobalAvgPool2D(), nn.Dense(5))
        elif case == "lenet":
            class Net(mx.gluon.HybridBlock):
                def __init__(self, **kwargs):
                    super().__init__(**kwargs)
                    with self.name_scope():
                        self.conv1 = nn.Conv2D(6, kernel_size=5)
                        self.pool1 = nn.MaxPool2D(pool_size=2)
                        self.conv2 = nn.Conv2D(16, kernel_size=5)
                        self.pool2 = nn.MaxPool2D(pool_size=2)
                        self.fc1 = nn.Dense(120)
                        self.fc2 = nn.Dense(84)
                        self.fc3_weight = self.params.get("fc3_weight", shape=(10, 84))

                def hybrid_forward(self, F, x, fc3_weight):
                    x = self.pool1(F.relu(self.conv1(x)))
                    x = self.pool2(F.relu(self.conv2(x)))
                    x = x.reshape((0, -1))
                    x = F.relu(self.fc1(x))
                    x = F.relu(self.fc2(x))
                    return F.dot(x, fc3_weight, transpose_b=True)
            net = Net()
        else:
            class EmbedNet(mx.gluon.HybridBlock):
                def __init__(self, **kwargs):
                    super().__init__(**kwargs)
                    with self.name_scope():
                        self.embed = nn.Embedding(50, 16)
                        self.proj = nn.Dense(12, flatten=False, activation="tanh")
                        self.out = nn.Dense(3)

                def hybrid_forward(self, F, tokens):
                    return self.out(F.mean(self.proj(self.embed(tokens)), axis=1))
            net = EmbedNet()
    return net


@pytest.mark.parametrize("case", ["mlp", "lenet", "convbn", "embedding_rnn_free"])
def test_matches_real_mxnet_fixture(case, tmp_path):
    d = _fixture(case)
    net = _build_fixture_model(case)
    with open(os.path.join(d, "case.json")) as f:
        meta = json.load(f)
    assert list(net.collect_params().keys()) == meta["collect_params_keys"]
    x = np.load(os.path.join(d, "input.npy"))
    net.initialize()
    net.hybridize()
    net(nd.array(x))          # trace + deferred init first, as in the fixture's run
    net.collect_params().load(os.path.join(d, "model-0000.params"))
    y, sym_file, _ = _export(net, x, tmp_path)
    tol = meta["suggested_tolerance"]
    np.testing.assert_allclose(y, np.load(os.path.join(d, "output.npy")), rtol=tol["rtol"], atol=tol["atol"])
    with open(sym_file) as f:
        ours = json.load(f)["nodes"]
    with open(os.path.join(d, "model-symbol.json")) as f:
        theirs = json.load(f)["nodes"]

    def key(nodes):
        return [(n["op"], n["name"], n.get("attrs", {}), [i[:2] for i in n["inputs"]]) for n in nodes]
    assert key(ours) == key(theirs)
