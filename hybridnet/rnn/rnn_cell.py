"""Legacy symbol-level RNN cells (MXNet 1.9.1 ``mx.rnn``).

A cell builds one time step of a recurrent network out of :mod:`hybridnet.symbol` operators:
``cell(inputs, states) -> (output, new_states)`` on Symbols, and ``cell.unroll(length, ...)``
chains the steps.  Weights are shared ``Variable`` symbols held by :class:`RNNParams`, so the
unrolled graph trains with ``mx.mod.Module``.  Node names follow MXNet exactly
(``<prefix>t<step>_out`` ...), because checkpoints and tests address nodes by name.

``FusedRNNCell`` unrolls to the single ``RNN`` operator; ``unpack_weights``/``pack_weights``
convert between its flat parameter vector and the per-gate matrices the unfused cells use.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import initializer as init
from .. import ndarray
from .. import symbol
from ..base import BFLOAT16_NP, MXNetError

__all__ = ["RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "FusedRNNCell",
           "SequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
           "BidirectionalCell", "BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell"]

SymbolSeq = Union[symbol.Symbol, List[symbol.Symbol]]
_MODIFIED_MSG = ("After applying modifier cells (e.g. ZoneoutCell) the base cell cannot be "
                 "called directly. Call the modifier cell instead.")


def _normalize_sequence(length: Optional[int], inputs: Any, layout: str, merge: Optional[bool],
                        in_layout: Optional[str] = None) -> Tuple[Any, int]:
    """Turn ``inputs`` into a list of per-step Symbols (``merge=False``), one Symbol with a time
    axis (``merge=True``) or leave it as it is (``merge=None``); returns it and the time axis."""
    if inputs is None:
        raise ValueError("unroll(inputs=None) is not supported: create the input variables "
                         "outside unroll and pass them (a Symbol or a list of Symbols)")
    axis = layout.find('T')
    in_axis = in_layout.find('T') if in_layout is not None else axis
    if isinstance(inputs, symbol.Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ValueError("unroll does not take a grouped Symbol as inputs: pass "
                                 "list(inputs) or a single-output Symbol to split")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length,
                                       squeeze_axis=1))
    else:
        if length is not None and len(inputs) != length:
            raise ValueError(f"unroll(length={length}) got {len(inputs)} input symbols")
        if merge is True:
            inputs = symbol.Concat(*[symbol.expand_dims(i, axis=axis) for i in inputs],
                                   dim=axis)
            in_axis = axis
    if isinstance(inputs, symbol.Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis


class RNNParams:
    """Weight variables shared between cells: ``get(name)`` returns the ``Variable``
    ``prefix + name``, creating it (with ``symbol.Variable``'s keywords) on first use."""

    def __init__(self, prefix: str = '') -> None:
        self._prefix = prefix
        self._params: Dict[str, symbol.Symbol] = {}

    def get(self, name: str, **kwargs: Any) -> symbol.Symbol:
        full_name = self._prefix + name
        if full_name not in self._params:
            self._params[full_name] = symbol.Variable(full_name, **kwargs)
        return self._params[full_name]


class BaseRNNCell:
    """Abstract cell: subclasses define ``state_info``, ``__call__`` and, for fused-weight
    conversion, ``_gate_names`` (MXNet's ``mx.rnn.BaseRNNCell``)."""

    def __init__(self, prefix: str = '', params: Optional[RNNParams] = None) -> None:
        self._own_params = params is None
        self._prefix = prefix
        self._params = RNNParams(prefix) if params is None else params
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Restart step numbering before the cell builds another graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, '_cells', ()):
            cell.reset()

    def __call__(self, inputs: symbol.Symbol, states: List[symbol.Symbol]) -> Tuple[Any, list]:
        raise NotImplementedError(f"{type(self).__name__} does not define one time step")

    @property
    def params(self) -> RNNParams:
        """The weight container; reading it marks the parameters as shared (not owned)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self) -> List[Optional[dict]]:
        raise NotImplementedError(f"{type(self).__name__} does not define state_info")

    @property
    def state_shape(self) -> list:
        return [info['shape'] for info in self.state_info]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ()

    def _check_not_modified(self) -> None:
        if self._modified:
            raise RuntimeError(_MODIFIED_MSG)

    def begin_state(self, func: Callable = symbol.zeros, **kwargs: Any) -> List[symbol.Symbol]:
        """Initial states ``<prefix>begin_state_<i>`` made by ``func`` (``symbol.zeros``,
        ``symbol.Variable``, ...) with each state's shape/layout from ``state_info``."""
        self._check_not_modified()
        states = []
        for info in self.state_info:
            self._init_counter += 1
            if info is not None:
                kwargs.update(info)
            states.append(func(name='%sbegin_state_%d' % (self._prefix, self._init_counter),
                               **kwargs))
        return states

    def unpack_weights(self, args: Dict[str, Any]) -> Dict[str, Any]:
        """Split the stacked ``i2h``/``h2h`` weight and bias into one array per gate
        (``<prefix>i2h_f_weight`` ...); the inverse of :meth:`pack_weights`."""
        args = args.copy()
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ('i2h', 'h2h'):
            weight = args.pop('%s%s_weight' % (self._prefix, group))
            bias = args.pop('%s%s_bias' % (self._prefix, group))
            for j, gate in enumerate(self._gate_names):
                args['%s%s%s_weight' % (self._prefix, group, gate)] = weight[j * h:(j + 1) * h].copy()
                args['%s%s%s_bias' % (self._prefix, group, gate)] = bias[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args: Dict[str, Any]) -> Dict[str, Any]:
        """Concatenate per-gate arrays back into the stacked ``i2h``/``h2h`` weight and bias.
        The parts are checked first (present, dense floating point, ``num_hidden`` rows, one
        shape and dtype per group): MXNet concatenates whatever it gets and fails later."""
        args = args.copy()
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ('i2h', 'h2h'):
            for kind in ('weight', 'bias'):
                names = ['%s%s%s_%s' % (self._prefix, group, gate, kind) for gate in self._gate_names]
                _check_parts(args, names, '%s%s_%s' % (self._prefix, group, kind),
                             lambda first: (h,) if kind == 'bias' else (h,) + tuple(first.shape[1:]),
                             kind == 'weight')
                args['%s%s_%s' % (self._prefix, group, kind)] = ndarray.concatenate(
                    [args.pop(name) for name in names])
        return args

    def unroll(self, length: int, inputs: SymbolSeq, begin_state: Optional[list] = None,
               layout: str = 'NTC', merge_outputs: Optional[bool] = None) -> Tuple[SymbolSeq, list]:
        """Apply the cell ``length`` times; ``inputs`` is one Symbol laid out as ``layout`` or a
        list of per-step Symbols.  Outputs are merged along T when ``merge_outputs`` is True,
        a list when False, and whichever is at hand when None."""
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for step in range(length):
            output, states = self(inputs[step], states)
            outputs.append(output)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs: symbol.Symbol, activation: Any, **kwargs: Any) -> symbol.Symbol:
        """``Activation(act_type=activation)`` for a string, else ``activation(inputs)``."""
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)

    def _step_name(self) -> str:
        """Advance the step counter and return this step's node-name prefix."""
        self._counter += 1
        return '%st%d_' % (self._prefix, self._counter)


def _dtype_name(dtype: Any) -> str:
    return "bfloat16" if np.dtype(dtype) == BFLOAT16_NP else np.dtype(dtype).name


def _check_parts(args: Dict[str, Any], names: Sequence[str], packed: str,
                 expected: Callable[[Any], tuple], matrix: bool) -> None:
    """Check the per-gate arrays ``names`` that pack into ``packed``: all present, dense
    floating-point NDArrays of one dtype, each of shape ``expected(first part)`` (a weight at
    least 2-D); raise MXNetError naming the parameter and both shapes."""
    missing = [name for name in names if name not in args]
    if missing:
        raise MXNetError(f"pack_weights: {packed!r} is packed from {list(names)}, but "
                         f"{missing} {'is' if len(missing) == 1 else 'are'} missing")
    first = None
    for name in names:
        value = args[name]
        if not isinstance(value, ndarray.NDArray) or value.stype != 'default':
            what = type(value).__name__ if not isinstance(value, ndarray.NDArray) else value.stype
            raise MXNetError(f"pack_weights: parameter {name!r} is a {what} array; RNN weights "
                             f"are dense NDArrays")
        if not (np.issubdtype(np.dtype(value.dtype), np.floating) or np.dtype(value.dtype) == BFLOAT16_NP):
            raise MXNetError(f"pack_weights: parameter {name!r} has dtype {_dtype_name(value.dtype)}; "
                             f"RNN weights are floating point")
        if first is None:
            if matrix and value.ndim < 2:
                raise MXNetError(f"pack_weights: parameter {name!r} has shape {tuple(value.shape)}; "
                                 f"a weight has at least 2 dimensions")
            first = value
        want = tuple(expected(first))
        if tuple(value.shape) != want:
            raise MXNetError(f"pack_weights: parameter {name!r} has shape {tuple(value.shape)}, "
                             f"the cell expects {want}")
        if value.dtype != first.dtype:
            raise MXNetError(f"pack_weights: parameter {name!r} has dtype {_dtype_name(value.dtype)}, "
                             f"but {names[0]!r} has {_dtype_name(first.dtype)}; one packed array "
                             f"has one dtype")


class _DenseCell(BaseRNNCell):
    """A cell whose gates come from ``FullyConnected(inputs) + FullyConnected(state)``."""

    def __init__(self, num_hidden: int, prefix: str, params: Optional[RNNParams],
                 i2h_bias_init: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get('i2h_weight')
        self._iB = (self.params.get('i2h_bias') if i2h_bias_init is None
                    else self.params.get('i2h_bias', init=i2h_bias_init))
        self._hW = self.params.get('h2h_weight')
        self._hB = self.params.get('h2h_bias')

    @property
    def state_info(self) -> List[dict]:
        return [{'shape': (0, self._num_hidden), '__layout__': 'NC'}]

    def _projections(self, inputs: symbol.Symbol, state: symbol.Symbol, name: str,
                     sep: str = '') -> Tuple[symbol.Symbol, symbol.Symbol]:
        width = self._num_hidden * len(self._gate_names)
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=width, name='%s%si2h' % (name, sep))
        h2h = symbol.FullyConnected(data=state, weight=self._hW, bias=self._hB,
                                    num_hidden=width, name='%s%sh2h' % (name, sep))
        return i2h, h2h


class RNNCell(_DenseCell):
    """Elman cell: ``out = activation(W_i x + b_i + W_h h + b_h)``."""

    def __init__(self, num_hidden: int, activation: Any = 'tanh', prefix: str = 'rnn_',
                 params: Optional[RNNParams] = None) -> None:
        super().__init__(num_hidden, prefix, params)
        self._activation = activation

    @property
    def _gate_names(self) -> Sequence[str]:
        return ('',)

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._projections(inputs, states[0], name)
        output = self._get_activation(i2h + h2h, self._activation, name='%sout' % name)
        return output, [output]


def _lstm_update(name: str, gates: List[symbol.Symbol], prev_c: symbol.Symbol,
                 transform: Callable) -> Tuple[symbol.Symbol, symbol.Symbol]:
    """LSTM state update from the four gate pre-activations (i, f, c, o)."""
    in_gate = symbol.Activation(gates[0], act_type='sigmoid', name='%si' % name)
    forget_gate = symbol.Activation(gates[1], act_type='sigmoid', name='%sf' % name)
    in_transform = transform(gates[2], name='%sc' % name)
    out_gate = symbol.Activation(gates[3], act_type='sigmoid', name='%so' % name)
    next_c = symbol._internal._plus(forget_gate * prev_c, in_gate * in_transform,
                                    name='%sstate' % name)
    next_h = symbol._internal._mul(out_gate, transform(next_c), name='%sout' % name)
    return next_h, next_c


def _gru_update(name: str, i2h: symbol.Symbol, h2h: symbol.Symbol, prev_h: symbol.Symbol,
                transform: Callable, axis: int = 1) -> symbol.Symbol:
    """cuDNN-style GRU update from the stacked (r, z, o) projections of input and state."""
    i2h_r, i2h_z, i2h_o = symbol.SliceChannel(i2h, num_outputs=3, axis=axis,
                                              name='%s_i2h_slice' % name)
    h2h_r, h2h_z, h2h_o = symbol.SliceChannel(h2h, num_outputs=3, axis=axis,
                                              name='%s_h2h_slice' % name)
    reset_gate = symbol.Activation(i2h_r + h2h_r, act_type='sigmoid', name='%s_r_act' % name)
    update_gate = symbol.Activation(i2h_z + h2h_z, act_type='sigmoid', name='%s_z_act' % name)
    candidate = transform(i2h_o + reset_gate * h2h_o, name='%s_h_act' % name)
    return symbol._internal._plus((1.0 - update_gate) * candidate, update_gate * prev_h,
                                  name='%sout' % name)


def _tanh(data: symbol.Symbol, name: Optional[str] = None) -> symbol.Symbol:
    return symbol.Activation(data, act_type='tanh', name=name)


class LSTMCell(_DenseCell):
    """LSTM cell (gates i, f, c, o); the i2h bias starts with ``forget_bias`` on the f gate."""

    def __init__(self, num_hidden: int, prefix: str = 'lstm_', params: Optional[RNNParams] = None,
                 forget_bias: float = 1.0) -> None:
        super().__init__(num_hidden, prefix, params,
                         i2h_bias_init=init.LSTMBias(forget_bias=forget_bias))

    @property
    def state_info(self) -> List[dict]:
        return [{'shape': (0, self._num_hidden), '__layout__': 'NC'},
                {'shape': (0, self._num_hidden), '__layout__': 'NC'}]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ['_i', '_f', '_c', '_o']

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._projections(inputs, states[0], name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, name='%sslice' % name)
        next_h, next_c = _lstm_update(name, list(gates), states[1], _tanh)
        return next_h, [next_h, next_c]


class GRUCell(_DenseCell):
    """GRU cell in cuDNN's formulation (reset gate applied after the h2h projection)."""

    def __init__(self, num_hidden: int, prefix: str = 'gru_',
                 params: Optional[RNNParams] = None) -> None:
        super().__init__(num_hidden, prefix, params)

    @property
    def _gate_names(self) -> Sequence[str]:
        return ['_r', '_z', '_o']

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._projections(inputs, states[0], name, sep='_')
        next_h = _gru_update(name, i2h, h2h, states[0], _tanh)
        return next_h, [next_h]


_FUSED_GATES = {'rnn_relu': [''], 'rnn_tanh': [''], 'lstm': ['_i', '_f', '_c', '_o'],
                'gru': ['_r', '_z', '_o']}


class FusedRNNCell(BaseRNNCell):
    """All layers and time steps in one ``RNN`` operator with a flat ``<prefix>parameters``
    vector (MXNet's cuDNN layout).  It cannot be stepped; :meth:`unfuse` gives the equivalent
    stack of per-step cells whose weights :meth:`unpack_weights` produces."""

    def __init__(self, num_hidden: int, num_layers: int = 1, mode: str = 'lstm',
                 bidirectional: bool = False, dropout: float = 0., get_next_state: bool = False,
                 forget_bias: float = 1.0, prefix: Optional[str] = None,
                 params: Optional[RNNParams] = None) -> None:
        if mode not in _FUSED_GATES:
            raise ValueError(f"FusedRNNCell mode={mode!r}: expected one of {sorted(_FUSED_GATES)}")
        super().__init__(prefix='%s_' % mode if prefix is None else prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ['l', 'r'] if bidirectional else ['l']
        initializer = init.FusedRNN(None, num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self.params.get('parameters', init=initializer)

    @property
    def state_info(self) -> List[dict]:
        shape = ((self._bidirectional + 1) * self._num_layers, 0, self._num_hidden)
        count = 2 if self._mode == 'lstm' else 1
        return [{'shape': shape, '__layout__': 'LNC'} for _ in range(count)]

    @property
    def _gate_names(self) -> Sequence[str]:
        return _FUSED_GATES[self._mode]

    @property
    def _num_gates(self) -> int:
        return len(self._gate_names)

    def _slice_weights(self, arr: Any, num_input: int, num_hidden: int) -> Dict[str, Any]:
        """Views of ``arr`` named after the unfused cells' weights: all weights first (per layer,
        direction: i2h gates then h2h gates), then all biases in the same order."""
        views: Dict[str, Any] = {}
        dirs = len(self._directions)
        pos = 0

        def take(name: str, size: int, shape: Optional[tuple]) -> None:
            nonlocal pos
            chunk = arr[pos:pos + size]
            views[name] = chunk.reshape(shape) if shape is not None else chunk
            pos += size

        for layer in range(self._num_layers):
            in_width = num_input if layer == 0 else dirs * num_hidden
            for direction in self._directions:
                for gate in self._gate_names:
                    take('%s%s%d_i2h%s_weight' % (self._prefix, direction, layer, gate),
                         in_width * num_hidden, (num_hidden, in_width))
                for gate in self._gate_names:
                    take('%s%s%d_h2h%s_weight' % (self._prefix, direction, layer, gate),
                         num_hidden * num_hidden, (num_hidden, num_hidden))
        for layer in range(self._num_layers):
            for direction in self._directions:
                for group in ('i2h', 'h2h'):
                    for gate in self._gate_names:
                        take('%s%s%d_%s%s_bias' % (self._prefix, direction, layer, group, gate),
                             num_hidden, None)
        if pos != arr.size:
            raise ValueError(f"FusedRNNCell {self._prefix!r}: parameter vector has {arr.size} "
                             f"elements, the layout needs {pos}")
        return views

    def unpack_weights(self, args):
        args = args.copy()
        arr = args.pop(self._parameter.name)
        dirs, gates, h = len(self._directions), self._num_gates, self._num_hidden
        num_input = arr.size // dirs // h // gates - (self._num_layers - 1) * (h + dirs * h + 2) - h - 2
        args.update({name: view.copy()
                     for name, view in self._slice_weights(arr, num_input, h).items()})
        return args

    def pack_weights(self, args):
        args = args.copy()
        dirs, gates, h = self._bidirectional + 1, self._num_gates, self._num_hidden
        first_name = '%sl0_i2h%s_weight' % (self._prefix, self._gate_names[0])
        _check_parts(args, [first_name], self._parameter.name, lambda first: (h,) + tuple(first.shape[1:]),
                     True)
        first = args[first_name]
        if first.ndim != 2:
            raise MXNetError(f"pack_weights: parameter {first_name!r} has shape {tuple(first.shape)}, "
                             f"the cell expects ({h}, <input size>)")
        num_input = first.shape[1]
        total = ((num_input + h + 2) * h * gates * dirs
                 + (self._num_layers - 1) * gates * h * (h + dirs * h + 2) * dirs)
        # shapes come from the layout (the first weight gives the input size); a value of
        # another shape is refused, never broadcast into its slot
        layout = {name: tuple(view.shape) for name, view in
                  self._slice_weights(_ShapeOnly(total), num_input, h).items()}
        for name, shape in layout.items():
            _check_parts(args, [name], self._parameter.name, lambda _, s=shape: s, len(shape) > 1)
            if args[name].dtype != first.dtype:
                raise MXNetError(f"pack_weights: parameter {name!r} has dtype "
                                 f"{_dtype_name(args[name].dtype)}, but {first_name!r} has "
                                 f"{_dtype_name(first.dtype)}; one packed array has one dtype")
        arr = ndarray.zeros((total,), ctx=first.context, dtype=first.dtype)
        for name, view in self._slice_weights(arr, num_input, h).items():
            view[:] = args.pop(name)
        args[self._parameter.name] = arr
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError("FusedRNNCell cannot be stepped; use unroll() or unfuse()")

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn("NTC layout detected. Consider using TNC for FusedRNNCell for faster speed")
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        elif axis != 0:
            raise ValueError(f"FusedRNNCell.unroll: unsupported layout {layout!r} (use NTC or TNC)")
        states = self.begin_state() if begin_state is None else begin_state
        state_args = {'state': states[0]}
        if self._mode == 'lstm':
            state_args['state_cell'] = states[1]
        rnn = symbol.RNN(data=inputs, parameters=self._parameter, state_size=self._num_hidden,
                         num_layers=self._num_layers, bidirectional=self._bidirectional,
                         p=self._dropout, state_outputs=self._get_next_state, mode=self._mode,
                         name=self._prefix + 'rnn', **state_args)
        if self._get_next_state:
            outputs = rnn[0]
            states = [rnn[i] for i in range(1, 3 if self._mode == 'lstm' else 2)]
            for state in states:
                state._set_attr(__layout__='LNC')
        else:
            outputs, states = rnn, []
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self) -> 'SequentialRNNCell':
        """The same network as a :class:`SequentialRNNCell` of per-step cells (runs anywhere,
        can be stepped); names match :meth:`unpack_weights`."""
        def make(cell_prefix: str) -> BaseRNNCell:
            if self._mode == 'lstm':
                return LSTMCell(self._num_hidden, prefix=cell_prefix)
            if self._mode == 'gru':
                return GRUCell(self._num_hidden, prefix=cell_prefix)
            return RNNCell(self._num_hidden, activation=self._mode[4:], prefix=cell_prefix)

        stack = SequentialRNNCell()
        for layer in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(make('%sl%d_' % (self._prefix, layer)),
                                            make('%sr%d_' % (self._prefix, layer)),
                                            output_prefix='%sbi_l%d_' % (self._prefix, layer)))
            else:
                stack.add(make('%sl%d_' % (self._prefix, layer)))
            if self._dropout > 0 and layer != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix='%s_dropout%d_' % (self._prefix, layer)))
        return stack


class _ShapeOnly:
    """Stands in for the flat parameter vector when only the layout's shapes are wanted."""

    def __init__(self, size: int, shape: tuple = ()) -> None:
        self.size, self.shape = size, shape or (size,)

    def __getitem__(self, key: slice) -> "_ShapeOnly":
        n = len(range(*key.indices(self.size)))
        return _ShapeOnly(n)

    def reshape(self, shape: tuple) -> "_ShapeOnly":
        return _ShapeOnly(self.size, tuple(shape))


def _share_params(container: BaseRNNCell, cells: Sequence[BaseRNNCell], override: bool) -> None:
    """Merge child cells' variables into ``container``'s params (and, when the container was
    given its own params, hand those to the children first)."""
    for cell in cells:
        if override:
            if not cell._own_params:
                raise ValueError(f"Either specify params for {type(container).__name__} or for "
                                 "its child cells, not both.")
            cell.params._params.update(container.params._params)
        container.params._params.update(cell.params._params)


class _CellGroup(BaseRNNCell):
    """A cell made of the child cells ``_cells``: their weights and their states, in order."""

    _cells: List[BaseRNNCell]

    @property
    def state_info(self):
        return sum((c.state_info for c in self._cells), [])

    def begin_state(self, **kwargs):
        self._check_not_modified()
        return sum((c.begin_state(**kwargs) for c in self._cells), [])

    def unpack_weights(self, args):
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args):
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args


class SequentialRNNCell(_CellGroup):
    """Stack of cells: each cell's output is the next cell's input."""

    def __init__(self, params: Optional[RNNParams] = None) -> None:
        super().__init__(prefix='', params=params)
        self._override_cell_params = params is not None
        self._cells: List[BaseRNNCell] = []

    def add(self, cell: BaseRNNCell) -> None:
        """Append ``cell`` to the stack."""
        self._cells.append(cell)
        _share_params(self, [cell], self._override_cell_params)

    def _split_states(self, states: list) -> List[list]:
        parts, pos = [], 0
        for cell in self._cells:
            count = len(cell.state_info)
            parts.append(states[pos:pos + count])
            pos += count
        return parts

    def __call__(self, inputs, states):
        self._counter += 1
        next_states = []
        for cell, state in zip(self._cells, self._split_states(states)):
            if isinstance(cell, BidirectionalCell):
                raise NotImplementedError("a SequentialRNNCell holding a BidirectionalCell "
                                          "cannot be stepped; use unroll()")
            inputs, state = cell(inputs, state)
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        begin_state = self.begin_state() if begin_state is None else begin_state
        next_states = []
        last = len(self._cells) - 1
        for i, (cell, states) in enumerate(zip(self._cells, self._split_states(begin_state))):
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=states, layout=layout,
                                         merge_outputs=merge_outputs if i == last else None)
            next_states.extend(states)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout on the inputs of each step (no state)."""

    def __init__(self, dropout: float, prefix: str = 'dropout_',
                 params: Optional[RNNParams] = None) -> None:
        super().__init__(prefix, params)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)):
            raise TypeError(f"DropoutCell: dropout must be a number, got {dropout!r}")
        self.dropout = dropout

    @property
    def state_info(self):
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, symbol.Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs)


class ModifierCell(BaseRNNCell):
    """Wraps a base cell and changes what one step does; the base cell must then only be used
    through the modifier."""

    def __init__(self, base_cell: BaseRNNCell) -> None:
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self):
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self):
        return self.base_cell.state_info

    def begin_state(self, init_sym: Callable = symbol.zeros, **kwargs):
        self._check_not_modified()
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(init_sym, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args):
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args):
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs, states):
        raise NotImplementedError(f"{type(self).__name__} does not define one time step")


class ZoneoutCell(ModifierCell):
    """Zoneout: in training, each output/state unit keeps its previous value with probability
    ``zoneout_outputs``/``zoneout_states`` (a Dropout mask picks the new or the old value)."""

    def __init__(self, base_cell: BaseRNNCell, zoneout_outputs: float = 0.,
                 zoneout_states: float = 0.) -> None:
        for kind in (FusedRNNCell, BidirectionalCell):
            if isinstance(base_cell, kind):
                raise TypeError(f"ZoneoutCell cannot wrap a {kind.__name__} (it cannot be "
                                "stepped); wrap the cells underneath instead")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output: Optional[symbol.Symbol] = None

    def reset(self):
        super().reset()
        self.prev_output = None

    def __call__(self, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p: float, like: symbol.Symbol) -> symbol.Symbol:
            return symbol.Dropout(symbol.ones_like(like), p=p)

        prev_output = (symbol.zeros_like(next_output) if self.prev_output is None
                       else self.prev_output)
        output = next_output
        if self.zoneout_outputs != 0.:
            output = symbol.where(keep_new(self.zoneout_outputs, next_output), next_output,
                                  prev_output)
        if self.zoneout_states != 0.:
            next_states = [symbol.where(keep_new(self.zoneout_states, new), new, old)
                           for new, old in zip(next_states, states)]
        self.prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """Residual connection: the step's output is the base cell's output plus its input."""

    def __call__(self, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = symbol.elemwise_add(output, inputs, name='%s_plus_residual' % output.name)
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state,
                                                    layout=layout, merge_outputs=merge_outputs)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, symbol.Symbol)
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            return symbol.elemwise_add(outputs, inputs,
                                       name='%s_plus_residual' % outputs.name), states
        return [symbol.elemwise_add(out, inp, name='%s_plus_residual' % out.name)
                for out, inp in zip(outputs, inputs)], states


class BidirectionalCell(_CellGroup):
    """Runs ``l_cell`` forward and ``r_cell`` backward in time and concatenates their outputs
    on the feature axis (``<output_prefix>t<i>`` per step, ``<output_prefix>out`` merged)."""

    def __init__(self, l_cell: BaseRNNCell, r_cell: BaseRNNCell,
                 params: Optional[RNNParams] = None, output_prefix: str = 'bi_') -> None:
        super().__init__('', params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        _share_params(self, [l_cell, r_cell], self._override_cell_params)
        self._cells = [l_cell, r_cell]

    def __call__(self, inputs, states):
        raise NotImplementedError("BidirectionalCell cannot be stepped; use unroll()")

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        n_left = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n_left],
                                            layout=layout, merge_outputs=merge_outputs)
        r_outputs, r_states = r_cell.unroll(length, inputs=list(reversed(inputs)),
                                            begin_state=states[n_left:], layout=layout,
                                            merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = (isinstance(l_outputs, symbol.Symbol)
                             and isinstance(r_outputs, symbol.Symbol))
            if not merge_outputs:
                if isinstance(l_outputs, symbol.Symbol):
                    l_outputs = list(symbol.SliceChannel(l_outputs, axis=axis, num_outputs=length,
                                                         squeeze_axis=1))
                if isinstance(r_outputs, symbol.Symbol):
                    r_outputs = list(symbol.SliceChannel(r_outputs, axis=axis, num_outputs=length,
                                                         squeeze_axis=1))
        if merge_outputs:
            outputs = symbol.Concat(l_outputs, symbol.reverse(r_outputs, axis=axis), dim=2,
                                    name='%sout' % self._output_prefix)
        else:
            outputs = [symbol.Concat(l_o, r_o, dim=1, name='%st%d' % (self._output_prefix, i))
                       for i, (l_o, r_o) in enumerate(zip(l_outputs, reversed(r_outputs)))]
        return outputs, [l_states, r_states]


_LEAKY = functools.partial(symbol.LeakyReLU, act_type='leaky', slope=0.2)


class BaseConvRNNCell(BaseRNNCell):
    """Convolutional cell base: ``Convolution(inputs) + Convolution(state)`` gates with the state
    shape inferred from ``input_shape`` through the i2h convolution (batch dimension 0)."""

    def __init__(self, input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride,
                 i2h_pad, i2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, activation, prefix='', params=None,
                 conv_layout='NCHW'):
        super().__init__(prefix=prefix, params=params)
        if h2h_kernel[0] % 2 != 1 or h2h_kernel[1] % 2 != 1:
            raise ValueError(f"h2h_kernel must have odd sizes (the state keeps its shape), "
                             f"got h2h_kernel={tuple(h2h_kernel)}")
        self._h2h_kernel = h2h_kernel
        self._h2h_pad = (h2h_dilate[0] * (h2h_kernel[0] - 1) // 2,
                         h2h_dilate[1] * (h2h_kernel[1] - 1) // 2)
        self._h2h_dilate = h2h_dilate
        self._i2h_kernel = i2h_kernel
        self._i2h_stride = i2h_stride
        self._i2h_pad = i2h_pad
        self._i2h_dilate = i2h_dilate
        self._num_hidden = num_hidden
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        probe = symbol.Convolution(data=symbol.Variable('data'), num_filter=num_hidden,
                                   kernel=i2h_kernel, stride=i2h_stride, pad=i2h_pad,
                                   dilate=i2h_dilate, layout=conv_layout)
        out_shape = probe.infer_shape(data=input_shape)[1][0]
        self._state_shape = (0,) + tuple(out_shape[1:])
        self._iW = self.params.get('i2h_weight', init=i2h_weight_initializer)
        self._hW = self.params.get('h2h_weight', init=h2h_weight_initializer)
        self._iB = self.params.get('i2h_bias', init=i2h_bias_initializer)
        self._hB = self.params.get('h2h_bias', init=h2h_bias_initializer)

    @property
    def _num_gates(self) -> int:
        return len(self._gate_names)

    @property
    def state_info(self):
        return [{'shape': self._state_shape, '__layout__': self._conv_layout}] * 2

    def _conv_forward(self, inputs, states, name):
        width = self._num_hidden * self._num_gates
        i2h = symbol.Convolution(name='%si2h' % name, data=inputs, num_filter=width,
                                 kernel=self._i2h_kernel, stride=self._i2h_stride,
                                 pad=self._i2h_pad, dilate=self._i2h_dilate, weight=self._iW,
                                 bias=self._iB, layout=self._conv_layout)
        h2h = symbol.Convolution(name='%sh2h' % name, data=states[0], num_filter=width,
                                 kernel=self._h2h_kernel, dilate=self._h2h_dilate,
                                 pad=self._h2h_pad, stride=(1, 1), weight=self._hW,
                                 bias=self._hB, layout=self._conv_layout)
        return i2h, h2h

    def _transform(self, data, name=None):
        kwargs = {} if name is None else {'name': name}
        return self._get_activation(data, self._activation, **kwargs)

    def __call__(self, inputs, states):
        raise NotImplementedError("BaseConvRNNCell is abstract; use ConvRNNCell, ConvLSTMCell "
                                  "or ConvGRUCell")


class _ConvCellDefaults(BaseConvRNNCell):
    """MXNet's constructor signature of the concrete convolutional cells (3x3 kernels, 'same'
    padding, LeakyReLU(0.2) activation, zero biases); ``_DEFAULT_PREFIX`` per cell."""
    _DEFAULT_PREFIX = ''

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', activation=_LEAKY,
                 prefix=None, params=None, conv_layout='NCHW'):
        super().__init__(input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride,
                         i2h_pad, i2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, activation,
                         prefix=self._DEFAULT_PREFIX if prefix is None else prefix,
                         params=params, conv_layout=conv_layout)


class ConvRNNCell(_ConvCellDefaults):
    """Convolutional Elman cell (activation defaults to LeakyReLU(0.2))."""

    _DEFAULT_PREFIX = 'ConvRNN_'

    @property
    def _gate_names(self):
        return ('',)

    @property
    def state_info(self):
        return [{'shape': self._state_shape, '__layout__': self._conv_layout}]

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        output = self._transform(i2h + h2h, name='%sout' % name)
        return output, [output]


class ConvLSTMCell(_ConvCellDefaults):
    """Convolutional LSTM cell (Shi et al. 2015)."""

    _DEFAULT_PREFIX = 'ConvLSTM_'

    @property
    def _gate_names(self):
        return ['_i', '_f', '_c', '_o']

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, axis=self._conv_layout.find('C'),
                                    name='%sslice' % name)
        next_h, next_c = _lstm_update(name, list(gates), states[1], self._transform)
        return next_h, [next_h, next_c]


class ConvGRUCell(_ConvCellDefaults):
    """Convolutional GRU cell."""

    _DEFAULT_PREFIX = 'ConvGRU_'

    @property
    def _gate_names(self):
        return ['_r', '_z', '_o']

    @property
    def state_info(self):
        return [{'shape': self._state_shape, '__layout__': self._conv_layout}]

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        next_h = _gru_update(name, i2h, h2h, states[0], self._transform)
        return next_h, [next_h]
