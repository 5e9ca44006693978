"""Contributed recurrent cells (MXNet 1.9.1 ``gluon.contrib.rnn.rnn_cell``): ``LSTMPCell``
(LSTM with a projected recurrent state), ``VariationalDropoutCell`` (one dropout mask per
sequence) and ``dynamic_unroll``."""
from __future__ import annotations

from typing import Any, Optional, Tuple

from ....ndarray.ndarray import NDArray
from ...rnn.rnn_cell import (BidirectionalCell, HybridRecurrentCell, ModifierCell, RecurrentCell,
                             SequentialRNNCell, _as_list, _format_sequence, _get_begin_state,
                             _mask_sequence_variable_length, tensor_types)

__all__ = ["VariationalDropoutCell", "LSTMPCell", "dynamic_unroll"]


class VariationalDropoutCell(ModifierCell):
    """Variational dropout (Gal & Ghahramani 2016) around ``base_cell``: the same dropout mask
    for every time step, separately for inputs (``drop_inputs``), the first state
    (``drop_states``) and outputs (``drop_outputs``). Masks are drawn at the first step and
    kept until ``reset()`` (``unroll`` resets), as in MXNet."""

    def __init__(self, base_cell: RecurrentCell, drop_inputs: float = 0., drop_states: float = 0.,
                 drop_outputs: float = 0.):
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise ValueError("BidirectionalCell doesn't support variational state dropout. Please add "
                             "VariationalDropoutCell to the cells underneath instead.")
        if drop_states and isinstance(base_cell, SequentialRNNCell) and \
                getattr(base_cell, "_bidirectional", False):
            raise ValueError("Bidirectional SequentialRNNCell doesn't support variational state "
                             "dropout. Please add VariationalDropoutCell to the cells underneath instead.")
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self.drop_inputs_mask: Any = None
        self.drop_states_mask: Any = None
        self.drop_outputs_mask: Any = None

    def _alias(self) -> str:
        return "vardrop"

    def reset(self) -> None:
        super().reset()
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(p_out = {self.drop_outputs}, "
                f"p_state = {self.drop_states})")

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = F.Dropout(F.ones_like(states[0]), p=self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = F.Dropout(F.ones_like(inputs), p=self.drop_inputs)
        if self.drop_states:
            states = list(states)
            states[0] = states[0] * self.drop_states_mask  # h only: the first state
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        output, next_states = self.base_cell(inputs, states)
        if self.drop_outputs and self.drop_outputs_mask is None:
            self.drop_outputs_mask = F.Dropout(F.ones_like(output), p=self.drop_outputs)
        if self.drop_outputs:
            output = output * self.drop_outputs_mask
        return output, next_states

    def unroll(self, length: int, inputs: Any, begin_state: Any = None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None, valid_length: Any = None) -> Tuple[Any, list]:
        """Without state dropout, input and output dropout run once on the whole sequence with
        the mask shared over the time axis; the base cell unrolls by itself."""
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs,
                                  valid_length=valid_length)
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs, states, layout, merge_outputs=True,
                                                    valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        merge_outputs = isinstance(outputs, tensor_types) if merge_outputs is None else merge_outputs
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    """LSTM with a projected recurrent state (Sak et al. 2014)::

        i, f, g, o = sig, sig, tanh, sig  of  W_ih x + b_ih + W_hh r + b_hh   (gate order i f c o)
        c' = f * c + i * g ;  h' = o * tanh(c') ;  r' = W_hr h'   (no bias)

    Output and first state: ``r'`` (batch, projection_size); second state ``c'`` (batch,
    hidden_size). Parameters ``i2h_weight`` (4H, in), ``h2h_weight`` (4H, P), ``h2r_weight``
    (P, H), ``i2h_bias``, ``h2h_bias`` (4H,)."""

    def __init__(self, hidden_size: int, projection_size: int, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, h2r_weight_initializer: Any = None,
                 i2h_bias_initializer: Any = "zeros", h2h_bias_initializer: Any = "zeros",
                 input_size: int = 0, prefix: Optional[str] = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        H, P = hidden_size, projection_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(4 * H, input_size),
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(4 * H, P),
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.h2r_weight = self.params.get("h2r_weight", shape=(P, H),
                                          init=h2r_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(4 * H,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(4 * H,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size: int = 0) -> list:
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self) -> str:
        return "lstmp"

    def __repr__(self) -> str:
        shape = self.i2h_weight.shape
        return (f"{self.__class__.__name__}({shape[1] if shape[1] else None} -> {shape[0]} -> "
                f"{self.h2r_weight.shape[0]})")

    def hybrid_forward(self, F: Any, inputs: Any, states: Any, i2h_weight: Any, h2h_weight: Any,
                       h2r_weight: Any, i2h_bias: Any, h2h_bias: Any) -> Any:
        prefix = f"t{self._counter}_"
        H = self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=H * 4,
                               name=prefix + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias, num_hidden=H * 4,
                               name=prefix + "h2h")
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + "slice")
        in_gate = F.Activation(gates[0], act_type="sigmoid", name=prefix + "i")
        forget_gate = F.Activation(gates[1], act_type="sigmoid", name=prefix + "f")
        in_transform = F.Activation(gates[2], act_type="tanh", name=prefix + "c")
        out_gate = F.Activation(gates[3], act_type="sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform, name=prefix + "state")
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type="tanh"), name=prefix + "hidden")
        next_r = F.FullyConnected(data=hidden, num_hidden=self._projection_size, weight=h2r_weight,
                                  no_bias=True, name=prefix + "out")
        return next_r, [next_r, next_c]


def dynamic_unroll(cell: RecurrentCell, inputs: Any, begin_state: Any, drop_inputs: float = 0,
                   drop_outputs: float = 0, layout: str = "TNC", valid_length: Any = None) -> tuple:
    """Run ``cell`` over every step of ``inputs`` (one NDArray in ``layout``); returns
    ``(outputs, states)`` with outputs stacked in ``layout``. With ``valid_length`` (batch,)
    each sequence's states stop changing after its last valid step and later outputs are 0.

    NDArrays are unrolled by a Python loop; Symbols (inside a hybridized block) become one
    ``contrib.foreach`` node, as in MXNet, so the sequence length need not be known."""
    if not isinstance(inputs, NDArray):
        return _foreach_unroll(cell, inputs, begin_state, drop_inputs, drop_outputs, layout, valid_length)
    from .... import ndarray as F
    axis = layout.find("T")
    if axis < 0 or "N" not in layout:
        raise ValueError(f"Invalid layout {layout!r}: expected a layout with 'T' and 'N'")
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(axis,))
    steps = F.split(inputs, axis=axis, num_outputs=inputs.shape[axis], squeeze_axis=True)
    steps = _as_list(steps)
    states = _as_list(begin_state)
    outputs = []
    for t, x in enumerate(steps):
        out, new_states = cell(x, states)
        if valid_length is not None:
            alive = valid_length > t  # (batch,): 1 while step t is inside the sequence
            new_states = [F.where(alive, n, s) for n, s in zip(new_states, states)]
        outputs.append(out)
        states = list(new_states)
    merged = F.stack(*outputs, axis=axis)
    if drop_outputs:
        merged = F.Dropout(merged, p=drop_outputs, axes=(axis,))
    if valid_length is not None:
        merged = F.SequenceMask(merged, sequence_length=valid_length, use_sequence_length=True,
                                axis=axis)
    return merged, states


def _foreach_unroll(cell: RecurrentCell, inputs: Any, begin_state: Any, drop_inputs: float,
                    drop_outputs: float, layout: str, valid_length: Any) -> tuple:
    """``dynamic_unroll`` on Symbols: the steps run in one ``contrib.foreach`` over the time axis
    (moved first); with ``valid_length`` a step counter rides along as an extra state."""
    from .... import symbol as F
    if not isinstance(inputs, F.Symbol):
        raise TypeError(f"dynamic_unroll: inputs must be an NDArray or a Symbol, got {type(inputs).__name__}")
    axis = layout.find("T")
    if axis < 0 or "N" not in layout:
        raise ValueError(f"Invalid layout {layout!r}: expected a layout with 'T' and 'N'")
    axes = list(range(len(layout)))
    axes[0], axes[axis] = axes[axis], axes[0]
    if axis:
        inputs = F.transpose(inputs, axes=axes)
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(0,))
    states = list(_as_list(begin_state))
    if valid_length is None:
        def step(x: Any, st: list) -> tuple:
            return cell(x, st)
    else:
        states.append(F.zeros((1,)))

        def step(x: Any, st: list) -> tuple:
            count = st[-1]
            out, new_states = cell(x, st[:-1])
            alive = F.broadcast_greater(valid_length, count)  # (batch,): inside the sequence
            new_states = [F.where(alive, n, s) for n, s in zip(_as_list(new_states), st[:-1])]
            return out, new_states + [count + 1]
    outputs, states = F.contrib.foreach(step, inputs, states)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(0,))
    if axis:
        outputs = F.transpose(outputs, axes=axes)
    if valid_length is None:
        return outputs, states
    outputs = F.SequenceMask(outputs, sequence_length=valid_length, use_sequence_length=True, axis=axis)
    return outputs, states[:-1]
