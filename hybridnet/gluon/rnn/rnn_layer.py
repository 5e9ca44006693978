"""Fused recurrent layers RNN, LSTM and GRU (MXNet 1.9.1 ``gluon.rnn.rnn_layer``).

Each layer owns per-layer, per-direction parameters ``l0_i2h_weight`` (G*H, in),
``l0_h2h_weight`` (G*H, H or P), ``l0_i2h_bias``, ``l0_h2h_bias`` (and ``l0_h2r_weight`` (P, H)
for an LSTM with projection), ``r0_...`` for the reverse direction. ``hybrid_forward`` makes the
op sequence MXNet makes, so traced and exported graphs match MXNet's: ``swapaxes`` (NTC),
``reshape(-1)`` of every parameter, ``_rnn_param_concat`` into the fused vector (weights of all
layers/directions, then biases), one ``RNN`` node with ``state_outputs=True``, and
``swapaxes`` back.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any, Callable, Optional

from ... import ndarray, symbol
from ...base import MXNetError
from ...ndarray.ndarray import NDArray
from ...symbol.symbol import Symbol
from ..block import HybridBlock
from . import rnn_cell

__all__ = ["RNN", "LSTM", "GRU"]

tensor_types = (Symbol, NDArray)
_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}
_PARAM_KEY = re.compile(r"(l|r)(\d+)_(i2h|h2h|h2r)_(weight|bias)\Z")



# created states whose values are known without their shape: the value an operator fills with
_FILLS: dict = {"_zeros": lambda a: 0.0, "_ones": lambda a: 1.0, "_full": lambda a: float(a.get("value", 0.0))}


def _state_with_data_batch(F: Any, data_tnc: Any, state: Any) -> Any:
    """A traced begin state created with batch size 0 (GluonNLP's ``begin_state(batch_size=0,
    func=F.zeros)``: 0 is MXNet's unknown dimension, which its binding infers from the data) made
    with the data's batch size instead, filled with the same value; other states as they are."""
    entries = getattr(state, "_entries", None)
    if not entries or len(entries) != 1:
        return state
    node = entries[0][0]
    fill = _FILLS.get(getattr(node.op, "name", None))
    if fill is None or node.inputs:
        return state
    attrs = node.kernel_attrs()
    shape = tuple(attrs.get("shape", ()))
    if len(shape) != 3 or shape[1] != 0 or 0 in (shape[0], shape[2]):
        return state
    made = rnn_cell.symbolic_zero_state_maker(F, data_tnc, 1)(name=node.name, shape=shape, __layout__="LNC")
    value = fill(attrs)
    return made + value if value else made


class _RNNLayer(HybridBlock):
    """Implementation of the fused recurrent layers (MXNet's ``_RNNLayer``)."""

    def __init__(self, hidden_size: int, num_layers: int, layout: str, dropout: float,
                 bidirectional: bool, input_size: int, i2h_weight_initializer: Any,
                 h2h_weight_initializer: Any, i2h_bias_initializer: Any, h2h_bias_initializer: Any,
                 mode: str, projection_size: Optional[int], h2r_weight_initializer: Any,
                 lstm_state_clip_min: Optional[float], lstm_state_clip_max: Optional[float],
                 lstm_state_clip_nan: bool, dtype: Any, use_sequence_length: bool = False,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise ValueError(f"Invalid layout {layout!r}; must be one of ['TNC' or 'NTC']")
        if mode not in _GATES:
            raise ValueError(f"Invalid RNN mode {mode!r}; expected one of {list(_GATES)} (RNN "
                             f"activation must be 'relu' or 'tanh')")
        if int(num_layers) < 1:
            raise ValueError(f"{type(self).__name__}: num_layers must be >= 1, got {num_layers}")
        if projection_size and mode != "lstm":
            raise ValueError("projection_size is only supported by LSTM")
        self._hidden_size = hidden_size
        self._projection_size = projection_size if projection_size else None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._i2h_weight_initializer = i2h_weight_initializer
        self._h2h_weight_initializer = h2h_weight_initializer
        self._i2h_bias_initializer = i2h_bias_initializer
        self._h2h_bias_initializer = h2h_bias_initializer
        self._h2r_weight_initializer = h2r_weight_initializer
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self.skip_states: Optional[bool] = None
        self._traced_skip_states: Optional[bool] = None
        self._own_trace = False

        self._gates = _GATES[mode]
        ng, ni, nh = self._gates, input_size, hidden_size
        npj = self._projection_size
        for i in range(num_layers):
            for j in ["l", "r"][:self._dir]:
                self._register_param(f"{j}{i}_i2h_weight", (ng * nh, ni), i2h_weight_initializer, dtype)
                self._register_param(f"{j}{i}_h2h_weight", (ng * nh, npj or nh), h2h_weight_initializer,
                                     dtype)
                self._register_param(f"{j}{i}_i2h_bias", (ng * nh,), i2h_bias_initializer, dtype)
                self._register_param(f"{j}{i}_h2h_bias", (ng * nh,), h2h_bias_initializer, dtype)
                if npj:
                    self._register_param(f"{j}{i}_h2r_weight", (npj, nh), h2r_weight_initializer, dtype)
            ni = (npj or nh) * self._dir

    def _register_param(self, name: str, shape: tuple, init: Any, dtype: Any) -> Any:
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True, dtype=dtype)
        setattr(self, name, p)
        return p

    def __repr__(self) -> str:
        s = f"{self.__class__.__name__}({{mapping}}, {self._layout}"
        if self._num_layers != 1:
            s += f", num_layers={self._num_layers}"
        if self._dropout != 0:
            s += f", dropout={self._dropout}"
        if self._dir == 2:
            s += ", bidirectional"
        s += ")"
        shape = self.l0_i2h_weight.shape
        return s.format(mapping=f"{shape[1] if shape[1] else None} -> {shape[0] // self._gates}")

    def _collect_params_with_prefix(self, prefix: str = "") -> "OrderedDict[str, Any]":
        """Structural names of MXNet's unfused cell stack (``_unfused.0.i2h_weight``,
        ``_unfused.0.l_cell.i2h_weight`` when bidirectional), as MXNet's save_parameters writes."""
        if prefix:
            prefix += "."
        bidirectional = self._dir == 2

        def convert_key(key: str) -> str:
            m = _PARAM_KEY.match(key)
            if m is None:
                return key
            d, layer, g, t = m.groups()
            if bidirectional:
                return f"_unfused.{layer}.{d}_cell.{g}_{t}"
            return f"_unfused.{layer}.{g}_{t}"

        ret: "OrderedDict[str, Any]" = OrderedDict(
            (prefix + convert_key(k), v) for k, v in self._reg_params.items())
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def state_info(self, batch_size: int = 0) -> list:
        raise NotImplementedError

    def _unfuse(self) -> "rnn_cell.HybridSequentialRNNCell":
        """The equivalent stack of cells (``l<i>_``/``r<i>_`` cells, DropoutCells between
        layers) sharing this layer's Parameters."""
        if self._projection_size:
            raise MXNetError("_unfuse does not support projection layer yet!")
        if self._lstm_state_clip_min is not None or self._lstm_state_clip_max is not None:
            raise MXNetError("_unfuse does not support state clipping yet!")
        make = {"rnn_relu": lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation="relu", **kw),
                "rnn_tanh": lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation="tanh", **kw),
                "lstm": lambda **kw: rnn_cell.LSTMCell(self._hidden_size, **kw),
                "gru": lambda **kw: rnn_cell.GRUCell(self._hidden_size, **kw)}[self._mode]
        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                kw = {"input_size": ni, "i2h_weight_initializer": self._i2h_weight_initializer,
                      "h2h_weight_initializer": self._h2h_weight_initializer,
                      "i2h_bias_initializer": self._i2h_bias_initializer,
                      "h2h_bias_initializer": self._h2h_bias_initializer}
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(make(prefix=f"l{i}_", **kw),
                                                         make(prefix=f"r{i}_", **kw)))
                else:
                    stack.add(make(prefix=f"l{i}_", **kw))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def cast(self, dtype: Any) -> None:
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size: int = 0, func: Callable[..., Any] = ndarray.zeros,
                    **kwargs: Any) -> list:
        """Initial states ``func(name='<prefix>h0_<i>', shape=..., __layout__='LNC',
        dtype=..., **kwargs)`` (zeros of shape (num_layers*directions, batch, hidden) by
        default; LSTM: ``[h, c]``)."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            info = dict(info) if info is not None else {}
            info.update(kwargs)
            states.append(func(name=f"{self.prefix}h0_{i}", **info))
        return states

    def __call__(self, inputs: Any, states: Any = None, sequence_length: Any = None,  # type: ignore[override]
                 **kwargs: Any) -> Any:
        """``layer(inputs, states=None, sequence_length=None)``: the output, or
        ``(output, new_states)`` when ``states`` are given."""
        self.skip_states = states is None
        if states is None:
            if isinstance(inputs, NDArray):
                batch_size = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch_size, ctx=inputs.context, dtype=inputs.dtype)
            elif isinstance(inputs, Symbol):
                maker = rnn_cell.symbolic_zero_state_maker(symbol, inputs, self._layout.find("N"))
                states = self.begin_state(0, func=maker)
            else:
                raise TypeError(f"{type(self).__name__} '{self.name}': inputs must be an NDArray or a "
                                f"Symbol, got {type(inputs).__name__}")
        if isinstance(states, tensor_types):
            states = [states]
        states = list(states)
        n_states = len(self.state_info())
        if len(states) != n_states:
            raise ValueError(f"{type(self).__name__} '{self.name}' expects {n_states} state(s) "
                             f"({'[h, c]' if self._mode == 'lstm' else '[h]'}), got {len(states)}; "
                             f"create them with begin_state(batch_size)")
        if self._use_sequence_length:
            if sequence_length is None:
                raise ValueError(f"{type(self).__name__} '{self.name}' was created with "
                                 f"use_sequence_length=True: pass sequence_length (batch,)")
        elif sequence_length is not None:
            raise ValueError(f"{type(self).__name__} '{self.name}': sequence_length was given but the "
                             f"layer was created with use_sequence_length=False")
        if self._cached_graph and self._traced_skip_states is not None \
                and self._traced_skip_states != self.skip_states:
            self._clear_cached_op()  # the cached graph returns the other output structure
        if self._use_sequence_length:
            return super().__call__(inputs, states, sequence_length, **kwargs)
        return super().__call__(inputs, states, **kwargs)

    # -- deferred initialization: the input size fixes every l0/r0 i2h weight ---------------
    def infer_shape(self, inputs: Any, *args: Any) -> None:  # type: ignore[override]
        """Set the first layer's ``i2h_weight`` shapes from the input's feature size."""
        if len(inputs.shape) != 3:
            raise MXNetError(f"{type(self).__name__} '{self.name}': input data should be a rank-3 tensor "
                             f"of dim {list(self._layout)} ({self._layout}), got shape {tuple(inputs.shape)}")
        step = self._projection_size or self._hidden_size
        ni = inputs.shape[2]
        for i in range(self._num_layers):
            for j in ["l", "r"][:self._dir]:
                getattr(self, f"{j}{i}_i2h_weight").shape = (self._gates * self._hidden_size, ni)
            ni = step * self._dir

    def _deferred_infer_shape(self, *args: Any) -> None:
        self.infer_shape(*args)

    def _build_cache(self, *args: Any) -> None:
        self._own_trace = True  # traced as the top-level graph: infer_shape fills the input size
        try:
            super()._build_cache(*args)
        finally:
            self._own_trace = False

    def hybrid_forward(self, F: Any, inputs: Any, states: Any, sequence_length: Any = None,
                       **kwargs: Any) -> Any:
        if F is ndarray:
            if inputs.ndim != 3:
                raise MXNetError(f"{type(self).__name__} '{self.name}': input data should be a rank-3 "
                                 f"tensor ({self._layout}), got shape {tuple(inputs.shape)}")
            batch_size = inputs.shape[self._layout.find("N")]
            for k, (state, info) in enumerate(zip(states, self.state_info(batch_size))):
                if tuple(state.shape) != tuple(info["shape"]):
                    raise ValueError(f"Invalid recurrent state shape. Expecting {info['shape']}, got "
                                     f"{tuple(state.shape)} (state {k} of {type(self).__name__} "
                                     f"'{self.name}': (num_layers*directions, batch_size, "
                                     f"{'projection_size' if k == 0 and self._projection_size else 'hidden_size'}))")
        else:
            self._traced_skip_states = self.skip_states
        out = self._forward_kernel(F, inputs, states, sequence_length, **kwargs)
        return out[0] if self.skip_states else out

    def _forward_kernel(self, F: Any, inputs: Any, states: list, sequence_length: Any,
                        **kwargs: Any) -> tuple:
        """The fused ``RNN`` call on the concatenated parameters (MXNet's op sequence)."""
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        gates = ["i2h", "h2h", "h2r"] if self._projection_size else ["i2h", "h2h"]
        names = [f"{d}{layer}_{g}_{t}"
                 for t in ["weight", "bias"]
                 for layer in range(self._num_layers)
                 for d in ["l", "r"][:self._dir]
                 for g in gates
                 if g != "h2r" or t != "bias"]
        params = F._internal._rnn_param_concat(*[kwargs[n].reshape(-1) for n in names], dim=0)
        attrs = {"use_sequence_length": self._use_sequence_length, "state_size": self._hidden_size,
                 "projection_size": self._projection_size, "num_layers": self._num_layers,
                 "bidirectional": self._dir == 2, "p": self._dropout, "state_outputs": True,
                 "mode": self._mode, "lstm_state_clip_min": self._lstm_state_clip_min,
                 "lstm_state_clip_max": self._lstm_state_clip_max,
                 "lstm_state_clip_nan": self._lstm_state_clip_nan}
        attrs = {k: v for k, v in attrs.items() if v is not None}  # MXNet drops None attributes
        if self._use_sequence_length:
            attrs["sequence_length"] = sequence_length
        if F is not ndarray:
            states = [_state_with_data_batch(F, inputs, s) for s in states]
        rnn = F.RNN(inputs, params, *states, **attrs)
        if self._mode == "lstm":
            outputs, new_states = rnn[0], [rnn[1], rnn[2]]
        else:
            outputs, new_states = rnn[0], [rnn[1]]
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, dim1=0, dim2=1)
        return outputs, new_states


class RNN(_RNNLayer):
    r"""Multi-layer Elman RNN with ``tanh`` or ``relu`` non-linearity:
    ``h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)``.

    Inputs ``data`` (T, N, C) for layout 'TNC' ((N, T, C) for 'NTC') and optionally
    ``states`` ``[h0]`` (num_layers*directions, N, hidden_size); returns the output
    (T, N, directions*hidden_size), plus the new states when states were given.
    """

    def __init__(self, hidden_size: int, num_layers: int = 1, activation: str = "relu",
                 layout: str = "TNC", dropout: float = 0, bidirectional: bool = False,
                 i2h_weight_initializer: Any = None, h2h_weight_initializer: Any = None,
                 i2h_bias_initializer: Any = "zeros", h2h_bias_initializer: Any = "zeros",
                 input_size: int = 0, dtype: Any = "float32", use_sequence_length: bool = False,
                 **kwargs: Any):
        if activation not in ("relu", "tanh"):
            raise ValueError(f"RNN: activation must be 'relu' or 'tanh', got {activation!r}")
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer,
                         "rnn_" + activation, None, None, None, None, False,
                         dtype, use_sequence_length=use_sequence_length, **kwargs)

    def state_info(self, batch_size: int = 0) -> list:
        return [{"shape": (self._num_layers * self._dir, batch_size, self._hidden_size),
                 "__layout__": "LNC", "dtype": self._dtype}]


class LSTM(_RNNLayer):
    r"""Multi-layer LSTM (gates i, f, g, o)::

        i, f, o = sigmoid(W_i* x + b_i* + W_h* h + b_h*);  g = tanh(...)
        c_t = f * c_{t-1} + i * g;  h_t = o * tanh(c_t)  (then h_t = W_hr h_t with projection_size)

    ``state_clip_min``/``state_clip_max`` clip the cell state (``state_clip_nan`` also replaces
    NaN). States are ``[h, c]``, each (num_layers*directions, N, hidden_size) (h uses
    projection_size when set).
    """

    def __init__(self, hidden_size: int, num_layers: int = 1, layout: str = "TNC", dropout: float = 0,
                 bidirectional: bool = False, input_size: int = 0, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", projection_size: Optional[int] = None,
                 h2r_weight_initializer: Any = None, state_clip_min: Optional[float] = None,
                 state_clip_max: Optional[float] = None, state_clip_nan: bool = False,
                 dtype: Any = "float32", use_sequence_length: bool = False, **kwargs: Any):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer,
                         "lstm", projection_size, h2r_weight_initializer,
                         state_clip_min, state_clip_max, state_clip_nan,
                         dtype, use_sequence_length=use_sequence_length, **kwargs)

    def state_info(self, batch_size: int = 0) -> list:
        h = self._projection_size or self._hidden_size
        return [{"shape": (self._num_layers * self._dir, batch_size, h),
                 "__layout__": "LNC", "dtype": self._dtype},
                {"shape": (self._num_layers * self._dir, batch_size, self._hidden_size),
                 "__layout__": "LNC", "dtype": self._dtype}]


class GRU(_RNNLayer):
    r"""Multi-layer GRU, cuDNN variant (gates r, z, n)::

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr);  z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn));  h_t = (1 - z) * n + z * h_{t-1}
    """

    def __init__(self, hidden_size: int, num_layers: int = 1, layout: str = "TNC", dropout: float = 0,
                 bidirectional: bool = False, input_size: int = 0, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", dtype: Any = "float32",
                 use_sequence_length: bool = False, **kwargs: Any):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer,
                         "gru", None, None, None, None, False,
                         dtype, use_sequence_length=use_sequence_length, **kwargs)

    def state_info(self, batch_size: int = 0) -> list:
        return [{"shape": (self._num_layers * self._dir, batch_size, self._hidden_size),
                 "__layout__": "LNC", "dtype": self._dtype}]
