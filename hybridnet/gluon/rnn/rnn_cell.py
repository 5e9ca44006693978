"""Recurrent cells (MXNet 1.9.1 ``gluon.rnn.rnn_cell``): one time step at a time, and
``unroll`` over a sequence.

Cells compute with ``FullyConnected``/``SliceChannel``/``Activation`` and elementwise operators
under MXNet's node names (``t0_i2h``, ``t0_slice``, ``t0_out``...); parameters are
``<prefix>i2h_weight`` (G*H, in), ``h2h_weight`` (G*H, H), ``i2h_bias``, ``h2h_bias`` with gate
order i, f, g(c), o for LSTM and r, z, n for GRU (the fused ``RNN`` operator's order).
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

from ... import ndarray, symbol
from ...base import MXNetError, numeric_types
from ...ndarray.ndarray import NDArray
from ...symbol.symbol import Symbol
from ..block import Block, HybridBlock
from ..nn import LeakyReLU

__all__ = ["RecurrentCell", "HybridRecurrentCell",
           "RNNCell", "LSTMCell", "GRUCell",
           "SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell",
           "ModifierCell", "ZoneoutCell", "ResidualCell",
           "BidirectionalCell"]

tensor_types = (Symbol, NDArray)


def _as_list(obj: Any) -> list:
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def _steps(split: Any) -> list:
    """The per-step list of a ``split`` result: a grouped Symbol gives its outputs, one
    NDArray (``num_outputs=1``) or a list of them gives the arrays."""
    if isinstance(split, Symbol):
        return list(split)
    return _as_list(split)


def _indent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(num_spaces * " " + line for line in lines)


def _cells_state_info(cells: Any, batch_size: int) -> list:
    return sum([c.state_info(batch_size) for c in cells], [])


def _cells_begin_state(cells: Any, **kwargs: Any) -> list:
    return sum([c.begin_state(**kwargs) for c in cells], [])


# ---- symbolic begin states --------------------------------------------------------------------
# MXNet creates symbolic begin states with ``symbol.zeros(shape=(..., 0, ...))`` and lets
# shape inference fill the batch size backwards from the consumer. hybridnet infers shapes
# forwards only, so symbolic begin states are built from the data instead: zeros of the data's
# batch size broadcast to the state shape (same values, a few extra graph nodes). Set to False
# once zeros with unknown dimensions are resolved by the graph compiler.
SYMBOLIC_ZERO_STATES_FROM_DATA = True


def symbolic_zero_state_maker(F: Any, ref: Any, ref_batch_axis: int) -> Callable[..., Any]:
    """A ``func`` for ``begin_state`` making symbolic zero states whose batch dimension (the
    0 in ``shape``) is taken from ``ref``'s axis ``ref_batch_axis``."""

    def make(name: Optional[str] = None, shape: Any = None, **info: Any) -> Any:
        layout = info.pop("__layout__", None)
        info.pop("dtype", None)
        info.pop("ctx", None)
        shape = tuple(shape) if shape is not None else ()
        if not SYMBOLIC_ZERO_STATES_FROM_DATA or all(d > 0 for d in shape):
            kw = {"__layout__": layout} if layout else {}
            return F.zeros(shape=shape, name=name, **kw, **info)
        batch_axis = layout.find("N") if layout and "N" in layout else shape.index(0)
        n = F.zeros_like(F.sum(ref, axis=ref_batch_axis, exclude=True))   # (batch,)
        n = F.reshape(n, shape=tuple(-1 if k == batch_axis else 1 for k in range(len(shape))))
        return F.broadcast_to(n, shape=shape, name=name)

    return make


def _get_begin_state(cell: "RecurrentCell", F: Any, begin_state: Any, inputs: Any,
                     batch_size: int, batch_axis: int = 0) -> list:
    """``begin_state`` when given, else zeros from ``cell.begin_state`` (MXNet's helper)."""
    if begin_state is not None:
        return begin_state
    ref = inputs if isinstance(inputs, tensor_types) else inputs[0]
    if not isinstance(inputs, tensor_types):
        batch_axis = 0
    if F is ndarray:
        return cell.begin_state(func=ndarray.zeros, batch_size=batch_size, ctx=ref.context,
                                dtype=ref.dtype)
    return cell.begin_state(func=symbolic_zero_state_maker(F, ref, batch_axis), batch_size=0)


def _format_sequence(length: Optional[int], inputs: Any, layout: str, merge: Optional[bool],
                     in_layout: Optional[str] = None) -> tuple:
    """Split a merged sequence into steps (``merge=False``), stack steps (``merge=True``) or
    keep it; returns ``(inputs, time_axis, F, batch_size)``."""
    if inputs is None:
        raise ValueError("unroll(inputs=None) has been deprecated. Please create input variables "
                         "outside unroll.")
    if "T" not in layout or "N" not in layout:
        raise ValueError(f"Invalid layout {layout!r}: expected a layout with 'T' and 'N', e.g. 'NTC' "
                         f"or 'TNC'")
    axis = layout.find("T")
    batch_axis = layout.find("N")
    batch_size = 0
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, Symbol):
        F: Any = symbol
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ValueError("unroll doesn't allow grouped symbol as input. Please convert to list "
                                 "with list(inputs) first or let unroll handle splitting.")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=1))
    elif isinstance(inputs, NDArray):
        F = ndarray
        batch_size = inputs.shape[batch_axis]
        if merge is False:
            if length is not None and length != inputs.shape[in_axis]:
                raise ValueError(f"unroll: length={length} but the input has {inputs.shape[in_axis]} "
                                 f"steps along axis {in_axis} (layout {layout!r}, shape {inputs.shape})")
            inputs = _as_list(ndarray.split(inputs, axis=in_axis, num_outputs=inputs.shape[in_axis],
                                            squeeze_axis=1))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise ValueError(f"unroll: length={length} but {len(inputs)} step inputs were given")
        if isinstance(inputs[0], Symbol):
            F = symbol
        else:
            F = ndarray
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, tensor_types) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _mask_sequence_variable_length(F: Any, data: Any, length: int, valid_length: Any,
                                   time_axis: int, merge: bool) -> Any:
    """Zero the steps past each sequence's ``valid_length`` (``SequenceMask``)."""
    if not isinstance(data, tensor_types):
        data = F.stack(*data, axis=time_axis)
    outputs = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True,
                             axis=time_axis)
    if not merge:
        outputs = _steps(F.split(outputs, num_outputs=length, axis=time_axis, squeeze_axis=True))
    return outputs


def _reverse_sequences(F: Any, sequences: list, length: int, valid_length: Any) -> list:
    """Reverse a list of steps; with ``valid_length`` only each sequence's valid part."""
    if valid_length is None:
        return list(reversed(sequences))
    rev = F.SequenceReverse(F.stack(*sequences, axis=0), sequence_length=valid_length,
                            use_sequence_length=True, axis=0)
    return _steps(F.split(rev, axis=0, num_outputs=length, squeeze_axis=True))


def _check_states(cell: "RecurrentCell", states: Any) -> list:
    """The step states as a list, checked against ``state_info`` (count and, eagerly, shape)."""
    states = _as_list(states) if states is not None else []
    info = cell.state_info()
    if len(states) != len(info):
        raise ValueError(f"{type(cell).__name__} '{cell.name}' expects {len(info)} state(s) "
                         f"{[tuple(i['shape']) for i in info]} (batch first), got {len(states)}; "
                         f"create them with cell.begin_state(batch_size)")
    return states


class RecurrentCell(Block):
    """Abstract base class of recurrent cells (MXNet's ``RecurrentCell``): ``state_info``,
    ``begin_state``, one step with ``cell(inputs, states)``, and ``unroll``."""

    def __init__(self, prefix: Optional[str] = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Reset the step counters before re-using the cell for another sequence/graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            if isinstance(cell, RecurrentCell):
                cell.reset()

    def state_info(self, batch_size: int = 0) -> list:
        """``[{'shape': ..., '__layout__': ...}, ...]`` for each state of this cell."""
        raise NotImplementedError()

    def begin_state(self, batch_size: int = 0, func: Callable[..., Any] = ndarray.zeros,
                    **kwargs: Any) -> list:
        """Initial states made by ``func(name=..., shape=..., __layout__=..., **kwargs)``
        (``nd.zeros`` by default; ``sym.zeros``/``sym.var`` for symbolic graphs)."""
        if self._modified:
            raise MXNetError("After applying modifier cells (e.g. ZoneoutCell) the base cell cannot be "
                             "called directly. Call the modifier cell instead.")
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info) if info is not None else {}
            info.update(kwargs)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **info))
        return states

    def unroll(self, length: int, inputs: Any, begin_state: Any = None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None, valid_length: Any = None) -> Tuple[Any, list]:
        """Run the cell over ``length`` steps of ``inputs`` (one tensor in ``layout`` or a list
        of per-step tensors). Returns ``(outputs, states)``: outputs merged into one tensor
        (``merge_outputs=True``) or a list of steps; with ``valid_length`` (batch,) the outputs
        past each length are zero and the states are taken at each sequence's last valid step."""
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        states = begin_state
        outputs = []
        all_states = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*ele_list, axis=0), sequence_length=valid_length,
                                     use_sequence_length=True, axis=0)
                      for ele_list in zip(*all_states)]
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F: Any, inputs: Any, activation: Any, **kwargs: Any) -> Any:
        """Apply ``activation``: a name ('tanh', 'relu', 'sigmoid', 'softsign' or any
        ``Activation`` act_type), a ``LeakyReLU`` block, or a callable."""
        func = {"tanh": F.tanh, "relu": F.relu, "sigmoid": F.sigmoid,
                "softsign": F.softsign}.get(activation) if isinstance(activation, str) else None
        if func:
            return func(inputs, **kwargs)
        if isinstance(activation, str):
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type="leaky", slope=activation._alpha, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs: Any, states: Any) -> Any:
        """One time step: ``(output, new_states)``."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell that can be hybridized (its step is a ``hybrid_forward``)."""

    def __init__(self, prefix: Optional[str] = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)

    def forward(self, inputs: Any, states: Any) -> Any:
        self._counter += 1
        states = _check_states(self, states)
        if isinstance(inputs, NDArray):
            _check_state_shapes(self, inputs, states)
        return HybridBlock.forward(self, inputs, states)

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _check_state_shapes(cell: "RecurrentCell", inputs: NDArray, states: list) -> None:
    batch = inputs.shape[0] if inputs.ndim else 0
    for k, (s, info) in enumerate(zip(states, cell.state_info(batch))):
        want = tuple(info["shape"])
        if isinstance(s, NDArray) and tuple(s.shape) != want:
            raise ValueError(f"Invalid recurrent state shape for {type(cell).__name__} '{cell.name}': "
                             f"state {k} has shape {tuple(s.shape)}, expecting {want} "
                             f"(batch_size={batch}, hidden_size from the cell); use "
                             f"cell.begin_state(batch_size={batch})")


class _GatedCell(HybridRecurrentCell):
    """Shared parameter setup of RNNCell / LSTMCell / GRUCell (``gates`` blocks of H rows)."""

    _gates = 1

    def __init__(self, hidden_size: int, i2h_weight_initializer: Any, h2h_weight_initializer: Any,
                 i2h_bias_initializer: Any, h2h_bias_initializer: Any, input_size: int,
                 prefix: Optional[str], params: Any):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        g = self._gates
        self.i2h_weight = self.params.get("i2h_weight", shape=(g * hidden_size, input_size),
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(g * hidden_size, hidden_size),
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(g * hidden_size,),
                                        init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(g * hidden_size,),
                                        init=h2h_bias_initializer, allow_deferred_init=True)

    def state_info(self, batch_size: int = 0) -> list:
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def __repr__(self) -> str:
        shape = self.i2h_weight.shape
        mapping = f"{shape[1] if shape[1] else None} -> {shape[0]}"
        act = f", {self._activation}" if type(self) is RNNCell else ""
        return f"{self.__class__.__name__}({mapping}{act})"


class RNNCell(_GatedCell):
    """Elman RNN cell: ``h' = act(W_ih x + b_ih + W_hh h + b_hh)`` (``activation`` 'tanh' by
    default; any name ``_get_activation`` accepts)."""

    _gates = 1

    def __init__(self, hidden_size: int, activation: Any = "tanh", i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", input_size: int = 0, prefix: Optional[str] = None,
                 params: Any = None):
        self._activation = activation
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)

    def _alias(self) -> str:
        return "rnn"

    def hybrid_forward(self, F: Any, inputs: Any, states: Any, i2h_weight: Any, h2h_weight: Any,
                       i2h_bias: Any, h2h_bias: Any) -> Any:
        prefix = f"t{self._counter}_"
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias,
                               num_hidden=self._hidden_size, name=prefix + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias,
                               num_hidden=self._hidden_size, name=prefix + "h2h")
        i2h_plus_h2h = F.elemwise_add(i2h, h2h, name=prefix + "plus0")
        output = self._get_activation(F, i2h_plus_h2h, self._activation, name=prefix + "out")
        return output, [output]


class LSTMCell(_GatedCell):
    """LSTM cell (gates i, f, c, o in that order along the 4*H rows)::

        i = sig(.), f = sig(.), g = tanh(.), o = sig(.)   of  W_ih x + b_ih + W_hh h + b_hh
        c' = f * c + i * g ;  h' = o * tanh(c')

    ``activation``/``recurrent_activation`` replace tanh/sigmoid. States: ``[h, c]``."""

    _gates = 4

    def __init__(self, hidden_size: int, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", input_size: int = 0, prefix: Optional[str] = None,
                 params: Any = None, activation: Any = "tanh", recurrent_activation: Any = "sigmoid"):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def state_info(self, batch_size: int = 0) -> list:
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self) -> str:
        return "lstm"

    def hybrid_forward(self, F: Any, inputs: Any, states: Any, i2h_weight: Any, h2h_weight: Any,
                       i2h_bias: Any, h2h_bias: Any) -> Any:
        prefix = f"t{self._counter}_"
        H = self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=H * 4,
                               name=prefix + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias, num_hidden=H * 4,
                               name=prefix + "h2h")
        gates = F.elemwise_add(i2h, h2h, name=prefix + "plus0")
        slice_gates = F.SliceChannel(gates, num_outputs=4, name=prefix + "slice")
        in_gate = self._get_activation(F, slice_gates[0], self._recurrent_activation, name=prefix + "i")
        forget_gate = self._get_activation(F, slice_gates[1], self._recurrent_activation,
                                           name=prefix + "f")
        in_transform = self._get_activation(F, slice_gates[2], self._activation, name=prefix + "c")
        out_gate = self._get_activation(F, slice_gates[3], self._recurrent_activation, name=prefix + "o")
        next_c = F._internal._plus(F.elemwise_mul(forget_gate, states[1], name=prefix + "mul0"),
                                   F.elemwise_mul(in_gate, in_transform, name=prefix + "mul1"),
                                   name=prefix + "state")
        next_h = F._internal._mul(out_gate, F.Activation(next_c, act_type=self._activation,
                                                         name=prefix + "activation0"),
                                  name=prefix + "out")
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    """GRU cell, cuDNN variant (gates r, z, n along the 3*H rows; reset applied after the
    recurrent matmul)::

        r = sig(Wx_r + Wh_r), z = sig(Wx_z + Wh_z), n = tanh(Wx_n + r * Wh_n)
        h' = (1 - z) * n + z * h        (W. include their biases)
    """

    _gates = 3

    def __init__(self, hidden_size: int, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", input_size: int = 0, prefix: Optional[str] = None,
                 params: Any = None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)

    def _alias(self) -> str:
        return "gru"

    def hybrid_forward(self, F: Any, inputs: Any, states: Any, i2h_weight: Any, h2h_weight: Any,
                       i2h_bias: Any, h2h_bias: Any) -> Any:
        prefix = f"t{self._counter}_"
        H = self._hidden_size
        prev_state_h = states[0]
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=H * 3,
                               name=prefix + "i2h")
        h2h = F.FullyConnected(data=prev_state_h, weight=h2h_weight, bias=h2h_bias, num_hidden=H * 3,
                               name=prefix + "h2h")
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, name=prefix + "i2h_slice")
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, name=prefix + "h2h_slice")
        reset_gate = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=prefix + "plus0"),
                                  act_type="sigmoid", name=prefix + "r_act")
        update_gate = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=prefix + "plus1"),
                                   act_type="sigmoid", name=prefix + "z_act")
        next_h_tmp = F.Activation(F.elemwise_add(i2h, F.elemwise_mul(reset_gate, h2h, name=prefix + "mul0"),
                                                 name=prefix + "plus2"),
                                  act_type="tanh", name=prefix + "h_act")
        ones = F.ones_like(update_gate, name=prefix + "ones_like0")
        next_h = F._internal._plus(
            F.elemwise_mul(F.elemwise_sub(ones, update_gate, name=prefix + "minus0"), next_h_tmp,
                           name=prefix + "mul1"),
            F.elemwise_mul(update_gate, prev_state_h, name=prefix + "mul20"),
            name=prefix + "out")
        return next_h, [next_h]


class _CellStack:
    """What the two sequential cells share: a stack of cells run in order, whose states are
    the concatenation of theirs (MXNet writes ``SequentialRNNCell`` and
    ``HybridSequentialRNNCell`` out twice; they differ only in their base class)."""

    def __repr__(self) -> str:
        modstr = "\n".join(f"({i}): {_indent(repr(m), 2)}" for i, m in self._children.items())
        return f"{self.__class__.__name__}(\n{modstr}\n)"

    def add(self, cell: "RecurrentCell") -> None:
        """Append a cell to the stack."""
        self.register_child(cell)

    def state_info(self, batch_size: int = 0) -> list:
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs: Any) -> list:
        if self._modified:
            raise MXNetError("After applying modifier cells (e.g. ZoneoutCell) the base cell cannot be "
                             "called directly. Call the modifier cell instead.")
        return _cells_begin_state(self._children.values(), **kwargs)

    def __call__(self, inputs: Any, states: Any) -> Any:
        self._counter += 1
        states = _as_list(states) if states is not None else []
        need = len(self.state_info())
        if len(states) != need:
            raise ValueError(f"{type(self).__name__} '{self.name}' expects {need} states (the states "
                             f"of its cells, in order), got {len(states)}; use "
                             f"cell.begin_state(batch_size)")
        next_states = []
        p = 0
        for c in self._children.values():
            if isinstance(c, BidirectionalCell):
                raise MXNetError("BidirectionalCell cannot be stepped inside a sequential cell; use unroll")
            n = len(c.state_info())
            state = states[p:p + n]
            p += n
            inputs, state = c(inputs, state)
            next_states.append(state)
        return inputs, sum(next_states, [])

    def unroll(self, length: int, inputs: Any, begin_state: Any = None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None, valid_length: Any = None) -> Tuple[Any, list]:
        self.reset()
        inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        num_cells = len(self._children)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size, layout.find("N"))
        p = 0
        next_states = []
        for i, c in enumerate(self._children.values()):
            n = len(c.state_info())
            states = begin_state[p:p + n]
            p += n
            inputs, states = c.unroll(length, inputs=inputs, begin_state=states, layout=layout,
                                      merge_outputs=None if i < num_cells - 1 else merge_outputs,
                                      valid_length=valid_length)
            next_states.extend(states)
        return inputs, next_states

    def __getitem__(self, i: int) -> "RecurrentCell":
        return self._children[str(i)]

    def __len__(self) -> int:
        return len(self._children)


class SequentialRNNCell(_CellStack, RecurrentCell):
    """Stacks cells: each step runs them in order; states are the concatenation of theirs."""

    def hybrid_forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class HybridSequentialRNNCell(_CellStack, HybridRecurrentCell):
    """Stacks hybridizable cells (see ``SequentialRNNCell``)."""

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        return self.__call__(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Applies Dropout(``rate``, ``axes``) to the input of each step; has no states."""

    def __init__(self, rate: float, axes: Sequence[int] = (), prefix: Optional[str] = None,
                 params: Any = None):
        super().__init__(prefix, params)
        if not isinstance(rate, numeric_types):
            raise TypeError(f"DropoutCell: rate must be a number, got {rate!r}")
        self._rate = rate
        self._axes = axes

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(rate={self._rate}, axes={self._axes})"

    def state_info(self, batch_size: int = 0) -> list:
        return []

    def _alias(self) -> str:
        return "dropout"

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes, name=f"t{self._counter}_fwd")
        return inputs, states

    def unroll(self, length: int, inputs: Any, begin_state: Any = None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None, valid_length: Any = None) -> Tuple[Any, list]:
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, tensor_types):
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=None)


class ModifierCell(HybridRecurrentCell):
    """Base class of cells that wrap a ``base_cell`` and modify it (prefix
    ``<base prefix><alias>``); the base cell must then only be used through the modifier."""

    def __init__(self, base_cell: RecurrentCell):
        if base_cell._modified:
            raise MXNetError(f"Cell {base_cell.name} is already modified. One cell cannot be modified twice")
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self) -> Any:  # type: ignore[override]
        return self.base_cell.params

    def state_info(self, batch_size: int = 0) -> list:
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func: Callable[..., Any] = ndarray.zeros, **kwargs: Any) -> list:  # type: ignore[override]
        if self._modified:
            raise MXNetError("After applying modifier cells (e.g. DropoutCell) the base cell cannot be "
                             "called directly. Call the modifier cell instead.")
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_cell!r})"


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al. 2016): while training, each output/state unit keeps its previous
    value with probability ``zoneout_outputs``/``zoneout_states``."""

    def __init__(self, base_cell: RecurrentCell, zoneout_outputs: float = 0., zoneout_states: float = 0.):
        if isinstance(base_cell, BidirectionalCell):
            raise MXNetError("BidirectionalCell doesn't support zoneout since it doesn't support step. "
                             "Please add ZoneoutCell to the cells underneath instead.")
        if isinstance(base_cell, SequentialRNNCell) and getattr(base_cell, "_bidirectional", False):
            raise MXNetError("Bidirectional SequentialRNNCell doesn't support zoneout. Please add "
                             "ZoneoutCell to the cells underneath instead.")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output: Any = None

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(p_out={self.zoneout_outputs}, p_state={self.zoneout_states}, "
                f"{self.base_cell!r})")

    def _alias(self) -> str:
        return "zoneout"

    def reset(self) -> None:
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        cell, p_outputs, p_states = self.base_cell, self.zoneout_outputs, self.zoneout_states
        next_output, next_states = cell(inputs, states)

        def mask(p: float, like: Any) -> Any:
            return F.Dropout(F.ones_like(like), p=p)

        prev_output = self._prev_output
        if prev_output is None:
            prev_output = F.zeros_like(next_output)
        output = (F.where(mask(p_outputs, next_output), next_output, prev_output)
                  if p_outputs != 0. else next_output)
        states = ([F.where(mask(p_states, new_s), new_s, old_s) for new_s, old_s in zip(next_states, states)]
                  if p_states != 0. else next_states)
        self._prev_output = output
        return output, states


class ResidualCell(ModifierCell):
    """Adds the step input to the base cell's output (Wu et al. 2016)."""

    def __init__(self, base_cell: RecurrentCell):
        super().__init__(base_cell)

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        output, states = self.base_cell(inputs, states)
        output = F.elemwise_add(output, inputs, name=f"t{self._counter}_fwd")
        return output, states

    def unroll(self, length: int, inputs: Any, begin_state: Any = None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None, valid_length: Any = None) -> Tuple[Any, list]:
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state,
                                                    layout=layout, merge_outputs=merge_outputs,
                                                    valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        merge_outputs = isinstance(outputs, tensor_types) if merge_outputs is None else merge_outputs
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, axis, merge_outputs)
        if merge_outputs:
            outputs = F.elemwise_add(outputs, inputs)
        else:
            outputs = [F.elemwise_add(i, j) for i, j in zip(outputs, inputs)]
        return outputs, states


class BidirectionalCell(HybridRecurrentCell):
    """Runs ``l_cell`` forward and ``r_cell`` backward over the sequence and concatenates their
    outputs on the feature axis (``<output_prefix>out``); only ``unroll`` is supported."""

    def __init__(self, l_cell: RecurrentCell, r_cell: RecurrentCell, output_prefix: str = "bi_"):
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs: Any, states: Any) -> Any:  # type: ignore[override]
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(forward={self._children['l_cell']!r}, "
                f"backward={self._children['r_cell']!r})")

    def state_info(self, batch_size: int = 0) -> list:
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs: Any) -> list:  # type: ignore[override]
        if self._modified:
            raise MXNetError("After applying modifier cells (e.g. DropoutCell) the base cell cannot be "
                             "called directly. Call the modifier cell instead.")
        return _cells_begin_state(self._children.values(), **kwargs)

    def unroll(self, length: int, inputs: Any, begin_state: Any = None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None, valid_length: Any = None) -> Tuple[Any, list]:
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        reversed_inputs = _reverse_sequences(F, inputs, length, valid_length)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        states = begin_state
        l_cell, r_cell = self._children.values()
        n_l = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n_l],
                                            layout=layout, merge_outputs=merge_outputs,
                                            valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs, begin_state=states[n_l:],
                                            layout=layout, merge_outputs=False,
                                            valid_length=valid_length)
        reversed_r_outputs = _reverse_sequences(F, r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, tensor_types)
        if merge_outputs:
            l_outputs, _, _, _ = _format_sequence(None, l_outputs, layout, True)
            reversed_r_outputs = F.stack(*reversed_r_outputs, axis=axis)
            outputs = F.concat(l_outputs, reversed_r_outputs, dim=2, name=f"{self._output_prefix}out")
        else:
            l_outputs, _, _, _ = _format_sequence(None, l_outputs, layout, False)
            outputs = [F.concat(l_o, r_o, dim=1, name=f"{self._output_prefix}t{i}")
                       for i, (l_o, r_o) in enumerate(zip(l_outputs, reversed_r_outputs))]
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, merge_outputs)
        return outputs, l_states + r_states
