"""Convolution, transposed convolution, pooling and padding layers (MXNet 1.9.1
``gluon.nn.conv_layers``).

All convolution layers have the name hint ``conv`` and call ``Convolution``/``Deconvolution``
with ``kernel``, ``stride``, ``dilate``, ``pad``, ``num_filter``, ``num_group``, ``no_bias``,
``layout`` (plus ``adj`` for transposed ones) and ``name='fwd'``; all pooling layers have the
hint ``pool`` and call ``Pooling`` with ``kernel``, ``stride``, ``pad``, ``global_pool``,
``pool_type``, ``layout``, ``pooling_convention`` (plus ``count_include_pad`` for average
pooling). Integer arguments are expanded to tuples; tuples/lists are passed as given.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ...base import MXNetError, numeric_types
from ..block import HybridBlock
from .activations import Activation
from .layer_args import check_ints

__all__ = ["Conv1D", "Conv2D", "Conv3D",
           "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
           "MaxPool1D", "MaxPool2D", "MaxPool3D",
           "AvgPool1D", "AvgPool2D", "AvgPool3D",
           "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D",
           "ReflectionPad2D"]

IntOrTuple = Union[int, Sequence[int]]


def _expand(value: Any, n: int, what: str, layer: str) -> Any:
    """An int becomes an n-tuple; a sequence is checked for length and kept as given."""
    if isinstance(value, numeric_types):
        return (int(value),) * n
    if not isinstance(value, (tuple, list)) or len(value) != n:
        raise ValueError(f"{layer}: {what} must be a number or a list/tuple of {n} ints, got {value!r}")
    return value


def _conv_weight_shape(op_name: str, layout: str, channels: int, in_channels: int, groups: int,
                       kernel: Sequence[int]) -> tuple:
    """The weight shape MXNet's shape inference gives with ``in_channels`` (0 = unknown)."""
    kernel = tuple(int(k) for k in kernel)
    if op_name == "Deconvolution":
        # (in_channels, channels / groups, *kernel), channel-last layouts: (in, *kernel, ch / groups)
        if layout.find("C") == 1:
            return (in_channels, channels // groups) + kernel
        return (in_channels,) + kernel + (channels // groups,)
    per_group = in_channels // groups if in_channels else 0
    if layout.find("C") == 1:
        return (channels, per_group) + kernel
    # channel-last layouts keep the channel last in the weight too (MXNet: OHWI)
    return (channels,) + kernel + (per_group,)


class _Conv(HybridBlock):
    """Common implementation of the convolution layers (MXNet's ``_Conv``)."""

    def __init__(self, channels: int, kernel_size: Sequence[int], strides: IntOrTuple,
                 padding: IntOrTuple, dilation: IntOrTuple, groups: int, layout: str,
                 in_channels: int = 0, activation: Optional[str] = None, use_bias: bool = True,
                 weight_initializer: Any = None, bias_initializer: Any = "zeros",
                 op_name: str = "Convolution", adj: Any = None, prefix: Optional[str] = None,
                 params: Any = None):
        super().__init__(prefix=prefix, params=params)
        name = self.__class__.__name__
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            n = len(kernel_size)
            strides = _expand(strides, n, "strides", name)
            padding = _expand(padding, n, "padding", name)
            dilation = _expand(dilation, n, "dilation", name)
            check_ints(name, "channels", channels, 1)
            check_ints(name, "kernel_size", kernel_size, 1)
            check_ints(name, "strides", strides, 1)
            check_ints(name, "dilation", dilation, 1)
            check_ints(name, "padding", padding, 0)
            check_ints(name, "in_channels", in_channels, 0)
            check_ints(name, "groups", groups, 1)
            if adj is not None:
                check_ints(name, "output_padding", adj, 0)
            if groups < 1 or channels % groups or (in_channels and in_channels % groups):
                raise MXNetError(f"{name}: groups={groups} must divide channels={channels}"
                                 f"{f' and in_channels={in_channels}' if in_channels else ''}")
            self._op_name = op_name
            self._kwargs = {
                "kernel": kernel_size, "stride": strides, "dilate": dilation,
                "pad": padding, "num_filter": channels, "num_group": groups,
                "no_bias": not use_bias, "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = adj
            wshape = _conv_weight_shape(op_name, layout, channels, in_channels, groups, kernel_size)
            self.weight = self.params.get("weight", shape=wshape, init=weight_initializer,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + "_")
            else:
                self.act = None

    def hybrid_forward(self, F: Any, x: Any, weight: Any, bias: Any = None) -> Any:
        op = getattr(F, self._op_name)
        if bias is None:
            act = op(x, weight, name="fwd", **self._kwargs)
        else:
            act = op(x, weight, bias, name="fwd", **self._kwargs)
        if self.act is not None:
            act = self.act(act)
        return act

    def _alias(self) -> str:
        return "conv"

    def __repr__(self) -> str:
        k = self._kwargs
        n = len(k["kernel"])
        s = "{name}({mapping}, kernel_size={kernel}, stride={stride}"
        if k["pad"] != (0,) * n:
            s += ", padding={pad}"
        if k["dilate"] != (1,) * n:
            s += ", dilation={dilate}"
        # MXNet 1.x tests ``out_pad`` while the layers store ``outpad``: output_padding is
        # therefore never shown; mirrored for identical reprs.
        if hasattr(self, "out_pad") and self.out_pad != (0,) * n:
            s += f", output_padding={self.out_pad}"
        if k["num_group"] != 1:
            s += ", groups={num_group}"
        if self.bias is None:
            s += ", bias=False"
        if self.act:
            s += f", {self.act}"
        s += ")"
        shape = self.weight.shape
        mapping = f"{shape[1] if shape[1] else None} -> {shape[0]}"
        return s.format(name=self.__class__.__name__, mapping=mapping, **k)


def _kernel(kernel_size: IntOrTuple, n: int, layer: str) -> Any:
    if isinstance(kernel_size, numeric_types):
        return (int(kernel_size),) * n
    if not isinstance(kernel_size, (tuple, list)) or len(kernel_size) != n:
        raise ValueError(f"{layer}: kernel_size must be a number or a list of {n} ints, got {kernel_size!r}")
    return kernel_size


def _check_layout(layout: str, allowed: tuple, layer: str) -> None:
    if layout not in allowed:
        raise ValueError(f"{layer}: only supports {' and '.join(repr(a) for a in allowed)} layout for "
                         f"now, got {layout!r}")


class Conv1D(_Conv):
    """1D convolution over ``(batch, in_channels, width)`` inputs (layout ``NCW``)."""

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple = 1,
                 padding: IntOrTuple = 0, dilation: IntOrTuple = 1, groups: int = 1, layout: str = "NCW",
                 activation: Optional[str] = None, use_bias: bool = True, weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", in_channels: int = 0, **kwargs: Any):
        _check_layout(layout, ("NCW",), "Conv1D")
        kernel_size = _kernel(kernel_size, 1, "Conv1D")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer, bias_initializer, **kwargs)


class Conv2D(_Conv):
    """2D convolution over ``(batch, in_channels, height, width)`` inputs (``NCHW`` or ``NHWC``)."""

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple = (1, 1),
                 padding: IntOrTuple = (0, 0), dilation: IntOrTuple = (1, 1), groups: int = 1,
                 layout: str = "NCHW", activation: Optional[str] = None, use_bias: bool = True,
                 weight_initializer: Any = None, bias_initializer: Any = "zeros", in_channels: int = 0,
                 **kwargs: Any):
        _check_layout(layout, ("NCHW", "NHWC"), "Conv2D")
        kernel_size = _kernel(kernel_size, 2, "Conv2D")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer, bias_initializer, **kwargs)


class Conv3D(_Conv):
    """3D convolution over ``(batch, in_channels, depth, height, width)`` inputs."""

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple = (1, 1, 1),
                 padding: IntOrTuple = (0, 0, 0), dilation: IntOrTuple = (1, 1, 1), groups: int = 1,
                 layout: str = "NCDHW", activation: Optional[str] = None, use_bias: bool = True,
                 weight_initializer: Any = None, bias_initializer: Any = "zeros", in_channels: int = 0,
                 **kwargs: Any):
        _check_layout(layout, ("NCDHW", "NDHWC"), "Conv3D")
        kernel_size = _kernel(kernel_size, 3, "Conv3D")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer, bias_initializer, **kwargs)


class _ConvTranspose(_Conv):
    def _setup(self, output_padding: Any) -> None:
        self.outpad = output_padding


class Conv1DTranspose(_ConvTranspose):
    """Transposed 1D convolution (``Deconvolution``); ``output_padding`` becomes ``adj``."""

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple = 1,
                 padding: IntOrTuple = 0, output_padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
                 groups: int = 1, layout: str = "NCW", activation: Optional[str] = None,
                 use_bias: bool = True, weight_initializer: Any = None, bias_initializer: Any = "zeros",
                 in_channels: int = 0, **kwargs: Any):
        _check_layout(layout, ("NCW",), "Conv1DTranspose")
        kernel_size = _kernel(kernel_size, 1, "Conv1DTranspose")
        output_padding = _expand(output_padding, 1, "output_padding", "Conv1DTranspose")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer, bias_initializer,
                         op_name="Deconvolution", adj=output_padding, **kwargs)
        self._setup(output_padding)


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2D convolution (``Deconvolution``); ``output_padding`` becomes ``adj``."""

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple = (1, 1),
                 padding: IntOrTuple = (0, 0), output_padding: IntOrTuple = (0, 0),
                 dilation: IntOrTuple = (1, 1), groups: int = 1, layout: str = "NCHW",
                 activation: Optional[str] = None, use_bias: bool = True, weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", in_channels: int = 0, **kwargs: Any):
        _check_layout(layout, ("NCHW", "NHWC"), "Conv2DTranspose")
        kernel_size = _kernel(kernel_size, 2, "Conv2DTranspose")
        output_padding = _expand(output_padding, 2, "output_padding", "Conv2DTranspose")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer, bias_initializer,
                         op_name="Deconvolution", adj=output_padding, **kwargs)
        self._setup(output_padding)


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3D convolution (``Deconvolution``); ``output_padding`` becomes ``adj``."""

    def __init__(self, channels: int, kernel_size: IntOrTuple, strides: IntOrTuple = (1, 1, 1),
                 padding: IntOrTuple = (0, 0, 0), output_padding: IntOrTuple = (0, 0, 0),
                 dilation: IntOrTuple = (1, 1, 1), groups: int = 1, layout: str = "NCDHW",
                 activation: Optional[str] = None, use_bias: bool = True, weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", in_channels: int = 0, **kwargs: Any):
        _check_layout(layout, ("NCDHW", "NDHWC"), "Conv3DTranspose")
        kernel_size = _kernel(kernel_size, 3, "Conv3DTranspose")
        output_padding = _expand(output_padding, 3, "output_padding", "Conv3DTranspose")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout,
                         in_channels, activation, use_bias, weight_initializer, bias_initializer,
                         op_name="Deconvolution", adj=output_padding, **kwargs)
        self._setup(output_padding)


class _Pooling(HybridBlock):
    """Common implementation of the pooling layers (MXNet's ``_Pooling``)."""

    def __init__(self, pool_size: Sequence[int], strides: Any, padding: Any, ceil_mode: bool,
                 global_pool: bool, pool_type: str, layout: str, count_include_pad: Optional[bool] = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        name = self.__class__.__name__
        if strides is None:
            strides = pool_size
        strides = _expand(strides, len(pool_size), "strides", name)
        padding = _expand(padding, len(pool_size), "padding", name)
        check_ints(name, "pool_size", pool_size, 1)
        check_ints(name, "strides", strides, 1)
        check_ints(name, "padding", padding, 0)
        self._kwargs = {
            "kernel": pool_size, "stride": strides, "pad": padding,
            "global_pool": global_pool, "pool_type": pool_type, "layout": layout,
            "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self) -> str:
        return "pool"

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return (f"{self.__class__.__name__}(size={k['kernel']}, stride={k['stride']}, padding={k['pad']}, "
                f"ceil_mode={k['pooling_convention'] == 'full'}, global_pool={k['global_pool']}, "
                f"pool_type={k['pool_type']}, layout={k['layout']})")


def _pool_size(pool_size: IntOrTuple, n: int, layer: str) -> Any:
    if isinstance(pool_size, numeric_types):
        return (int(pool_size),) * n
    if not isinstance(pool_size, (tuple, list)) or len(pool_size) != n:
        raise ValueError(f"{layer}: pool_size must be a number or a list of {n} ints, got {pool_size!r}")
    return pool_size


_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _check_pool_layout(layout: str, n: int, layer: str) -> None:
    if layout not in _LAYOUTS[n]:
        raise ValueError(f"{layer}: only {' and '.join(_LAYOUTS[n])} layouts are valid for {n}D Pooling, "
                         f"got {layout!r}")


class MaxPool1D(_Pooling):
    """Max pooling over the width of ``NCW``/``NWC`` inputs; ``strides`` defaults to ``pool_size``."""

    def __init__(self, pool_size: IntOrTuple = 2, strides: Any = None, padding: IntOrTuple = 0,
                 layout: str = "NCW", ceil_mode: bool = False, **kwargs: Any):
        _check_pool_layout(layout, 1, "MaxPool1D")
        pool_size = _pool_size(pool_size, 1, "MaxPool1D")
        super().__init__(pool_size, strides, padding, ceil_mode, False, "max", layout, **kwargs)


class MaxPool2D(_Pooling):
    """Max pooling over the spatial axes of ``NCHW``/``NHWC`` inputs."""

    def __init__(self, pool_size: IntOrTuple = (2, 2), strides: Any = None, padding: IntOrTuple = 0,
                 layout: str = "NCHW", ceil_mode: bool = False, **kwargs: Any):
        _check_pool_layout(layout, 2, "MaxPool2D")
        pool_size = _pool_size(pool_size, 2, "MaxPool2D")
        super().__init__(pool_size, strides, padding, ceil_mode, False, "max", layout, **kwargs)


class MaxPool3D(_Pooling):
    """Max pooling over the spatial axes of ``NCDHW``/``NDHWC`` inputs."""

    def __init__(self, pool_size: IntOrTuple = (2, 2, 2), strides: Any = None, padding: IntOrTuple = 0,
                 ceil_mode: bool = False, layout: str = "NCDHW", **kwargs: Any):
        _check_pool_layout(layout, 3, "MaxPool3D")
        pool_size = _pool_size(pool_size, 3, "MaxPool3D")
        super().__init__(pool_size, strides, padding, ceil_mode, False, "max", layout, **kwargs)


class AvgPool1D(_Pooling):
    """Average pooling over the width; ``count_include_pad=False`` excludes padding from the mean."""

    def __init__(self, pool_size: IntOrTuple = 2, strides: Any = None, padding: IntOrTuple = 0,
                 layout: str = "NCW", ceil_mode: bool = False, count_include_pad: bool = True,
                 **kwargs: Any):
        _check_pool_layout(layout, 1, "AvgPool1D")
        pool_size = _pool_size(pool_size, 1, "AvgPool1D")
        super().__init__(pool_size, strides, padding, ceil_mode, False, "avg", layout, count_include_pad,
                         **kwargs)


class AvgPool2D(_Pooling):
    """Average pooling over the spatial axes of ``NCHW``/``NHWC`` inputs."""

    def __init__(self, pool_size: IntOrTuple = (2, 2), strides: Any = None, padding: IntOrTuple = 0,
                 ceil_mode: bool = False, layout: str = "NCHW", count_include_pad: bool = True,
                 **kwargs: Any):
        _check_pool_layout(layout, 2, "AvgPool2D")
        pool_size = _pool_size(pool_size, 2, "AvgPool2D")
        super().__init__(pool_size, strides, padding, ceil_mode, False, "avg", layout, count_include_pad,
                         **kwargs)


class AvgPool3D(_Pooling):
    """Average pooling over the spatial axes of ``NCDHW``/``NDHWC`` inputs."""

    def __init__(self, pool_size: IntOrTuple = (2, 2, 2), strides: Any = None, padding: IntOrTuple = 0,
                 ceil_mode: bool = False, layout: str = "NCDHW", count_include_pad: bool = True,
                 **kwargs: Any):
        _check_pool_layout(layout, 3, "AvgPool3D")
        pool_size = _pool_size(pool_size, 3, "AvgPool3D")
        super().__init__(pool_size, strides, padding, ceil_mode, False, "avg", layout, count_include_pad,
                         **kwargs)


class GlobalMaxPool1D(_Pooling):
    """Max over the whole width: output ``(batch, channels, 1)``."""

    def __init__(self, layout: str = "NCW", **kwargs: Any):
        _check_pool_layout(layout, 1, "GlobalMaxPool1D")
        super().__init__((1,), None, 0, True, True, "max", layout, **kwargs)


class GlobalMaxPool2D(_Pooling):
    """Max over the spatial axes: output ``(batch, channels, 1, 1)``."""

    def __init__(self, layout: str = "NCHW", **kwargs: Any):
        _check_pool_layout(layout, 2, "GlobalMaxPool2D")
        super().__init__((1, 1), None, 0, True, True, "max", layout, **kwargs)


class GlobalMaxPool3D(_Pooling):
    """Max over the spatial axes: output ``(batch, channels, 1, 1, 1)``."""

    def __init__(self, layout: str = "NCDHW", **kwargs: Any):
        _check_pool_layout(layout, 3, "GlobalMaxPool3D")
        super().__init__((1, 1, 1), None, 0, True, True, "max", layout, **kwargs)


class GlobalAvgPool1D(_Pooling):
    """Mean over the whole width: output ``(batch, channels, 1)``."""

    def __init__(self, layout: str = "NCW", **kwargs: Any):
        _check_pool_layout(layout, 1, "GlobalAvgPool1D")
        super().__init__((1,), None, 0, True, True, "avg", layout, **kwargs)


class GlobalAvgPool2D(_Pooling):
    """Mean over the spatial axes: output ``(batch, channels, 1, 1)``."""

    def __init__(self, layout: str = "NCHW", **kwargs: Any):
        _check_pool_layout(layout, 2, "GlobalAvgPool2D")
        super().__init__((1, 1), None, 0, True, True, "avg", layout, **kwargs)


class GlobalAvgPool3D(_Pooling):
    """Mean over the spatial axes: output ``(batch, channels, 1, 1, 1)``."""

    def __init__(self, layout: str = "NCDHW", **kwargs: Any):
        _check_pool_layout(layout, 3, "GlobalAvgPool3D")
        super().__init__((1, 1, 1), None, 0, True, True, "avg", layout, **kwargs)


class ReflectionPad2D(HybridBlock):
    """Pads the two spatial axes of an ``NCHW`` input by reflection (``pad`` with
    ``mode='reflect'``); an int ``padding`` pads all four sides by that amount."""

    def __init__(self, padding: Any = 0, **kwargs: Any):
        super().__init__(**kwargs)
        if isinstance(padding, numeric_types):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        if len(padding) != 8:
            raise ValueError(f"ReflectionPad2D: padding must be an int or 8 ints (before/after for each "
                             f"of the 4 axes), got {padding!r}")
        self._padding = padding

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.pad(x, mode="reflect", pad_width=self._padding)
