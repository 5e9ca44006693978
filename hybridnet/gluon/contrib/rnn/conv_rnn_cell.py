"""Convolutional recurrent cells (MXNet 1.9.1 ``gluon.contrib.rnn.conv_rnn_cell``): RNN, LSTM
(Shi et al. 2015, ConvLSTM) and GRU cells whose input-to-hidden and hidden-to-hidden
transforms are convolutions, in 1, 2 and 3 spatial dimensions.

``input_shape`` is one sample's shape without the batch axis, in ``conv_layout`` (e.g.
``(C, W)`` for 'NCW'); a 0 channel count defers ``i2h_weight``'s shape to the first input.
The hidden-to-hidden convolution keeps the spatial size (odd ``h2h_kernel``, 'same' padding);
states have the shape of the input-to-hidden convolution's output with ``hidden_channels``
channels. Gates are stacked on the channel axis in the order of the plain cells (LSTM i, f, c,
o; GRU r, z, n). Parameter names: ``i2h_weight``, ``h2h_weight``, ``i2h_bias``, ``h2h_bias``.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

from ....base import numeric_types
from ...rnn.rnn_cell import HybridRecurrentCell

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell",
           "Conv1DLSTMCell", "Conv2DLSTMCell", "Conv3DLSTMCell",
           "Conv1DGRUCell", "Conv2DGRUCell", "Conv3DGRUCell"]

Spec = Union[int, Sequence[int]]


def _conv_out_size(dims: Sequence[int], kernel: Sequence[int], pad: Sequence[int],
                   dilate: Sequence[int]) -> tuple:
    """Spatial output size of a stride-1 convolution (0 stays unknown)."""
    return tuple(int(x + 2 * p - d * (k - 1) - 1) + 1 if x else 0
                 for x, k, p, d in zip(dims, kernel, pad, dilate))


class _ConvRecurrentCell(HybridRecurrentCell):
    """Shared setup: convolution settings, parameter and state shapes, the two convolutions."""

    _num_gates = 1
    _kind = "conv_rnn"

    def __init__(self, input_shape: Sequence[int], hidden_channels: int, i2h_kernel: Spec,
                 h2h_kernel: Spec, i2h_pad: Spec, i2h_dilate: Spec, h2h_dilate: Spec,
                 i2h_weight_initializer: Any, h2h_weight_initializer: Any, i2h_bias_initializer: Any,
                 h2h_bias_initializer: Any, dims: int, conv_layout: str, activation: Any,
                 prefix: Optional[str], params: Any):
        super().__init__(prefix=prefix, params=params)
        self._hidden_channels = hidden_channels
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout
        self._activation = activation
        specs = {"i2h_kernel": i2h_kernel, "i2h_pad": i2h_pad, "i2h_dilate": i2h_dilate,
                 "h2h_kernel": h2h_kernel, "h2h_dilate": h2h_dilate}
        for name, spec in specs.items():
            if not isinstance(spec, numeric_types) and len(spec) != dims:
                raise ValueError(f"For {dims}D convolution, {name} must be an int or a list/tuple "
                                 f"of length {dims}, got {spec!r}")
        if len(conv_layout) != dims + 2 or "N" not in conv_layout or "C" not in conv_layout:
            raise ValueError(f"conv_layout {conv_layout!r} is not a {dims}D layout such as "
                             f"{'NC' + 'DHW'[3 - dims:]!r}")
        if len(self._input_shape) != dims + 1:
            raise ValueError(f"input_shape {self._input_shape} must have {dims + 1} entries (channels "
                             f"and {dims} spatial sizes, in {conv_layout!r} without N)")

        def tup(spec: Spec) -> tuple:
            return (int(spec),) * dims if isinstance(spec, numeric_types) else tuple(spec)

        self._i2h_kernel, self._i2h_pad, self._i2h_dilate = tup(i2h_kernel), tup(i2h_pad), tup(i2h_dilate)
        self._h2h_kernel, self._h2h_dilate = tup(h2h_kernel), tup(h2h_dilate)
        self._stride = (1,) * dims
        if any(k % 2 == 0 for k in self._h2h_kernel):
            raise ValueError(f"Only support odd number, get h2h_kernel= {h2h_kernel}")
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate, self._h2h_kernel))
        self._channel_axis = conv_layout.find("C")
        channels_first = self._channel_axis == 1
        in_channels = self._input_shape[self._channel_axis - 1]
        spatial = self._input_shape[1:] if channels_first else self._input_shape[:-1]
        out_size = _conv_out_size(spatial, self._i2h_kernel, self._i2h_pad, self._i2h_dilate)
        total = hidden_channels * self._num_gates
        if channels_first:
            i2h_shape = (total, in_channels) + self._i2h_kernel
            h2h_shape = (total, hidden_channels) + self._h2h_kernel
            self._state_shape = (hidden_channels,) + out_size
        else:
            i2h_shape = (total,) + self._i2h_kernel + (in_channels,)
            h2h_shape = (total,) + self._h2h_kernel + (hidden_channels,)
            self._state_shape = out_size + (hidden_channels,)
        self.i2h_weight = self.params.get("i2h_weight", shape=i2h_shape, init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=h2h_shape, init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(total,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(total,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def _alias(self) -> str:
        return self._kind

    def __repr__(self) -> str:
        shape = self.i2h_weight.shape
        in_channels = shape[1 if self._channel_axis == 1 else -1]
        return (f"{self.__class__.__name__}({in_channels if in_channels else None} -> {shape[0]}, "
                f"{self._activation}, {self._conv_layout})")

    def _state(self, batch_size: int) -> dict:
        return {"shape": (batch_size,) + self._state_shape, "__layout__": self._conv_layout}

    def state_info(self, batch_size: int = 0) -> list:
        return [self._state(batch_size)]

    def _convolutions(self, F: Any, inputs: Any, state: Any, i2h_weight: Any, h2h_weight: Any,
                      i2h_bias: Any, h2h_bias: Any, prefix: str) -> Tuple[Any, Any]:
        num_filter = self._hidden_channels * self._num_gates
        i2h = F.Convolution(data=inputs, num_filter=num_filter, kernel=self._i2h_kernel,
                            stride=self._stride, pad=self._i2h_pad, dilate=self._i2h_dilate,
                            weight=i2h_weight, bias=i2h_bias, layout=self._conv_layout,
                            name=prefix + "i2h")
        h2h = F.Convolution(data=state, num_filter=num_filter, kernel=self._h2h_kernel,
                            dilate=self._h2h_dilate, pad=self._h2h_pad, stride=self._stride,
                            weight=h2h_weight, bias=h2h_bias, layout=self._conv_layout,
                            name=prefix + "h2h")
        return i2h, h2h


class _ConvRNN(_ConvRecurrentCell):
    """h' = act(conv(x) + conv(h))."""

    _kind = "conv_rnn"

    def hybrid_forward(self, F: Any, inputs: Any, states: Any, i2h_weight: Any, h2h_weight: Any,
                       i2h_bias: Any, h2h_bias: Any) -> Any:
        prefix = f"t{self._counter}_"
        i2h, h2h = self._convolutions(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        output = self._get_activation(F, i2h + h2h, self._activation, name=prefix + "out")
        return output, [output]


class _ConvLSTM(_ConvRecurrentCell):
    """i, f, o = sigmoid, g = act of the gate blocks of conv(x) + conv(h);
    c' = f * c + i * g; h' = o * act(c'). States [h, c]."""

    _num_gates = 4
    _kind = "conv_lstm"

    def state_info(self, batch_size: int = 0) -> list:
        return [self._state(batch_size), self._state(batch_size)]

    def hybrid_forward(self, F: Any, inputs: Any, states: Any, i2h_weight: Any, h2h_weight: Any,
                       i2h_bias: Any, h2h_bias: Any) -> Any:
        prefix = f"t{self._counter}_"
        i2h, h2h = self._convolutions(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + "slice", axis=self._channel_axis)
        in_gate = F.Activation(gates[0], act_type="sigmoid", name=prefix + "i")
        forget_gate = F.Activation(gates[1], act_type="sigmoid", name=prefix + "f")
        in_transform = self._get_activation(F, gates[2], self._activation, name=prefix + "c")
        out_gate = F.Activation(gates[3], act_type="sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform, name=prefix + "state")
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, self._activation),
                                name=prefix + "out")
        return next_h, [next_h, next_c]


class _ConvGRU(_ConvRecurrentCell):
    """r, z = sigmoid of conv(x) + conv(h) blocks; n = act(x_n + r * h_n);
    h' = (1 - z) * n + z * h."""

    _num_gates = 3
    _kind = "conv_gru"

    def hybrid_forward(self, F: Any, inputs: Any, states: Any, i2h_weight: Any, h2h_weight: Any,
                       i2h_bias: Any, h2h_bias: Any) -> Any:
        prefix = f"t{self._counter}_"
        i2h, h2h = self._convolutions(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        i2h_r, i2h_z, i2h_n = F.SliceChannel(i2h, num_outputs=3, name=prefix + "i2h_slice",
                                             axis=self._channel_axis)
        h2h_r, h2h_z, h2h_n = F.SliceChannel(h2h, num_outputs=3, name=prefix + "h2h_slice",
                                             axis=self._channel_axis)
        reset_gate = F.Activation(i2h_r + h2h_r, act_type="sigmoid", name=prefix + "r_act")
        update_gate = F.Activation(i2h_z + h2h_z, act_type="sigmoid", name=prefix + "z_act")
        candidate = self._get_activation(F, i2h_n + reset_gate * h2h_n, self._activation,
                                         name=prefix + "h_act")
        next_h = F.elemwise_add((1. - update_gate) * candidate, update_gate * states[0],
                                name=prefix + "out")
        return next_h, [next_h]


def _define(kind: type, dims: int, layout: str, name: str) -> type:
    """The public cell ``name``: ``kind`` in ``dims`` spatial dimensions with MXNet's defaults."""

    def __init__(self: Any, input_shape: Sequence[int], hidden_channels: int, i2h_kernel: Spec,
                 h2h_kernel: Spec, i2h_pad: Spec = (0,) * dims, i2h_dilate: Spec = (1,) * dims,
                 h2h_dilate: Spec = (1,) * dims, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", conv_layout: str = layout,
                 activation: Any = "tanh", prefix: Optional[str] = None, params: Any = None) -> None:
        kind.__init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate,
                      h2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                      i2h_bias_initializer, h2h_bias_initializer, dims, conv_layout, activation,
                      prefix, params)

    doc = (f"{dims}D convolutional {kind._kind[5:].upper()} cell (MXNet 1.9.1 "
           f"``gluon.contrib.rnn.{name}``; default layout {layout!r}). {kind.__doc__}")
    return type(name, (kind,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


Conv1DRNNCell = _define(_ConvRNN, 1, "NCW", "Conv1DRNNCell")
Conv2DRNNCell = _define(_ConvRNN, 2, "NCHW", "Conv2DRNNCell")
Conv3DRNNCell = _define(_ConvRNN, 3, "NCDHW", "Conv3DRNNCell")
Conv1DLSTMCell = _define(_ConvLSTM, 1, "NCW", "Conv1DLSTMCell")
Conv2DLSTMCell = _define(_ConvLSTM, 2, "NCHW", "Conv2DLSTMCell")
Conv3DLSTMCell = _define(_ConvLSTM, 3, "NCDHW", "Conv3DLSTMCell")
Conv1DGRUCell = _define(_ConvGRU, 1, "NCW", "Conv1DGRUCell")
Conv2DGRUCell = _define(_ConvGRU, 2, "NCHW", "Conv2DGRUCell")
Conv3DGRUCell = _define(_ConvGRU, 3, "NCDHW", "Conv3DGRUCell")
