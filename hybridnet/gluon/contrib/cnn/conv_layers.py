"""Deformable convolution layers (MXNet 1.9.1 ``gluon.contrib.cnn.conv_layers``).

Each layer owns two convolutions: a plain ``Convolution`` over the input that predicts the
sampling offsets (and, for the modulated layer, the masks), then the deformable convolution
that reads the input at those offsets. Parameter names, shapes, initializers and the
``deformable_conv`` / ``modulated_deformable_conv`` name hints are MXNet's, so saved
parameters load both ways.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ....base import MXNetError, numeric_types
from ...block import HybridBlock
from ...nn.activations import Activation
from ...nn.conv_layers import _conv_weight_shape
from ...nn.layer_args import check_ints

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]

IntOrTuple = Union[int, Sequence[int]]


def _pair(value: Any, what: str, layer: str) -> tuple:
    if isinstance(value, numeric_types):
        return (int(value),) * 2
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{layer}: {what} must be a number or a list/tuple of 2 ints, got {value!r}")
    return tuple(int(v) for v in value)


class _DeformableBase(HybridBlock):
    """The offset convolution, the deformable weights and the activation shared by both layers;
    ``offset_factor`` is 2 (offsets) or 3 (offsets and masks) maps per kernel tap."""
    _op = ""
    _offset_factor = 2
    _offset_params_first = True

    def __init__(self, channels: int, kernel_size: IntOrTuple = (1, 1), strides: IntOrTuple = (1, 1),
                 padding: IntOrTuple = (0, 0), dilation: IntOrTuple = (1, 1), groups: int = 1,
                 num_deformable_group: int = 1, layout: str = "NCHW", use_bias: bool = True,
                 in_channels: int = 0, activation: Optional[str] = None, weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", offset_weight_initializer: Any = "zeros",
                 offset_bias_initializer: Any = "zeros", offset_use_bias: bool = True,
                 op_name: Optional[str] = None, adj: Any = None, prefix: Optional[str] = None,
                 params: Any = None):
        super().__init__(prefix=prefix, params=params)
        name = type(self).__name__
        if layout != "NCHW":
            raise MXNetError(f"{name}: only layout='NCHW' is supported (MXNet also accepts 'NHWC' but "
                             f"has no CPU kernel for it), got {layout!r}; transpose the input to NCHW")
        kernel = _pair(kernel_size, "kernel_size", name)
        strides, padding, dilation = (_pair(v, w, name) for v, w in
                                      ((strides, "strides"), (padding, "padding"), (dilation, "dilation")))
        check_ints(name, "channels", channels, 1)
        check_ints(name, "kernel_size", kernel, 1)
        check_ints(name, "num_deformable_group", num_deformable_group, 1)
        check_ints(name, "groups", groups, 1)
        check_ints(name, "in_channels", in_channels, 0)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            self._op_name = op_name or self._op
            taps = kernel[0] * kernel[1] * num_deformable_group
            self.offset_split_index = 2 * taps
            common = {"kernel": kernel, "stride": strides, "dilate": dilation, "pad": padding,
                      "num_group": groups, "layout": layout}
            self._kwargs_offset = dict(common, num_filter=self._offset_factor * taps, no_bias=not offset_use_bias)
            self._kwargs_deformable_conv = dict(common, num_filter=channels,
                                                num_deformable_group=num_deformable_group, no_bias=not use_bias)
            if adj:
                self._kwargs_offset["adj"] = adj
                self._kwargs_deformable_conv["adj"] = adj
            per_group = in_channels // groups if in_channels else 0
            makers = [lambda: self._conv_params(channels, per_group, kernel, use_bias, weight_initializer,
                                                bias_initializer),
                      lambda: self._offset_params(taps, in_channels, groups, kernel, layout, offset_use_bias,
                                                  offset_weight_initializer, offset_bias_initializer)]
            for make in (makers[::-1] if self._offset_params_first else makers):   # MXNet's order
                make()
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def _conv_params(self, channels: int, per_group: int, kernel: tuple, use_bias: bool, init: Any,
                     bias_init: Any) -> None:
        self.deformable_conv_weight = self.params.get("deformable_conv_weight", shape=(channels, per_group) + kernel,
                                                      init=init, allow_deferred_init=True)
        self.deformable_conv_bias = (self.params.get("deformable_conv_bias", shape=(channels,), init=bias_init,
                                                     allow_deferred_init=True) if use_bias else None)

    def _offset_params(self, taps: int, in_channels: int, groups: int, kernel: tuple, layout: str,
                       use_bias: bool, init: Any, bias_init: Any) -> None:
        maps = self._offset_factor * taps
        self.offset_weight = self.params.get(
            "offset_weight", shape=_conv_weight_shape("Convolution", layout, maps, in_channels, groups, kernel),
            init=init, allow_deferred_init=True)
        self.offset_bias = (self.params.get("offset_bias", shape=(maps,), init=bias_init, allow_deferred_init=True)
                            if use_bias else None)

    def _offsets(self, F: Any, x: Any, offset_weight: Any, offset_bias: Any) -> Any:
        if offset_bias is None:
            return F.Convolution(x, offset_weight, cudnn_off=True, **self._kwargs_offset)
        return F.Convolution(x, offset_weight, offset_bias, cudnn_off=True, **self._kwargs_offset)

    def _finish(self, act: Any) -> Any:
        return self.act(act) if self.act else act

    def __repr__(self) -> str:
        k = self._kwargs_deformable_conv
        s = "{name}({mapping}, kernel_size={kernel}, stride={stride}"
        if k["pad"] != (0, 0):
            s += ", padding={pad}"
        if k["dilate"] != (1, 1):
            s += ", dilation={dilate}"
        if k["num_group"] != 1:
            s += ", groups={num_group}"
        if self.deformable_conv_bias is None:
            s += ", bias=False"
        if self.act:
            s += f", {self.act}"
        s += ")"
        shape = self.deformable_conv_weight.shape
        return s.format(name=type(self).__name__, mapping=f"{shape[1] if shape[1] else None} -> {shape[0]}", **k)


class DeformableConvolution(_DeformableBase):
    """2-D deformable convolution v1 (Dai et al., 2017): a ``Convolution`` predicts
    2 * kh * kw * num_deformable_group offset maps from the input, and
    ``contrib.DeformableConvolution`` reads the input at them. Offsets start at zero (the
    offset convolution's weights and bias are zero-initialized), i.e. as a plain convolution."""
    _op = "DeformableConvolution"

    def hybrid_forward(self, F: Any, x: Any, offset_weight: Any, deformable_conv_weight: Any,
                       offset_bias: Any = None, deformable_conv_bias: Any = None) -> Any:
        offset = self._offsets(F, x, offset_weight, offset_bias)
        extra = {} if deformable_conv_bias is None else {"bias": deformable_conv_bias}
        return self._finish(F.contrib.DeformableConvolution(
            data=x, offset=offset, weight=deformable_conv_weight, name="fwd", **extra,
            **self._kwargs_deformable_conv))

    def _alias(self) -> str:
        return "deformable_conv"


class ModulatedDeformableConvolution(_DeformableBase):
    """2-D modulated deformable convolution (DCNv2, Zhu et al., 2018): the offset
    ``Convolution`` predicts 3 * kh * kw * num_deformable_group maps; the first two thirds are
    the offsets, the last third through ``2 * sigmoid`` the per-tap masks (1 at the zero
    initialization) of ``contrib.ModulatedDeformableConvolution``."""
    _op = "ModulatedDeformableConvolution"
    _offset_factor = 3
    _offset_params_first = False

    def hybrid_forward(self, F: Any, x: Any, offset_weight: Any, deformable_conv_weight: Any,
                       offset_bias: Any = None, deformable_conv_bias: Any = None) -> Any:
        offset = self._offsets(F, x, offset_weight, offset_bias)
        offset_t = F.slice_axis(offset, axis=1, begin=0, end=self.offset_split_index)
        mask = F.sigmoid(F.slice_axis(offset, axis=1, begin=self.offset_split_index, end=None)) * 2
        extra = {} if deformable_conv_bias is None else {"bias": deformable_conv_bias}
        return self._finish(F.contrib.ModulatedDeformableConvolution(
            data=x, offset=offset_t, mask=mask, weight=deformable_conv_weight, name="fwd", **extra,
            **self._kwargs_deformable_conv))

    def _alias(self) -> str:
        return "modulated_deformable_conv"
