"""The fused ``RNN`` operator (vanilla ReLU/tanh RNN, LSTM, GRU; multi-layer, bidirectional,
LSTM projection, variable sequence lengths) and MXNet's flat parameter layout.

Layout of the flat ``parameters`` vector (MXNet's, as gluon's ``rnn_layer`` packs it): first
every weight, layer by layer, direction by direction (``l`` then ``r``): ``i2h_weight``
(G*H, in), ``h2h_weight`` (G*H, H or P), and with a projection ``h2r_weight`` (P, H); then
every bias in the same order: ``i2h_bias`` (G*H,), ``h2h_bias`` (G*H,). G is 1 (RNN), 4 (LSTM,
gates i, f, g, o) or 3 (GRU, gates r, z, n with n = tanh(W_in x + b_in + r*(W_hn h + b_hn))).
These gate orders are torch's too, so the kernel hands views of the flat vector to torch's
fused RNN kernels. Data is TNC; states are (L*D, N, H) (h is (L*D, N, P) with a projection).
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Literal, Optional, cast

import numpy as np
import torch

from ..base import MXNetError
from .attrs import OptFloat, OptInt
from .shape_rules import concat_shape, rnn_param_concat_inputs
from .registry import Sample, find, register

__all__ = ["rnn_param_size", "rnn_param_layout", "unpack_rnn_params", "pack_rnn_params",
           "GATES"]

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def _gates(mode: str) -> int:
    try:
        return GATES[mode]
    except KeyError:
        raise MXNetError(f"RNN: invalid mode {mode!r}; expected one of {list(GATES)}") from None


@functools.lru_cache(maxsize=256)
def rnn_param_layout(mode: str, num_layers: int, input_size: int, state_size: int,
                     bidirectional: bool = False, projection_size: Optional[int] = None) -> tuple:
    """``((name, shape), ...)`` in the order of MXNet's flat RNN parameter vector.

    Names are gluon's: ``l0_i2h_weight``, ``l0_h2h_weight``, ``r0_i2h_weight``, ...,
    ``l0_h2r_weight`` (projection), then ``l0_i2h_bias``, ``l0_h2h_bias``, ...."""
    g = _gates(mode)
    H = int(state_size)
    P = int(projection_size) if projection_size else 0
    if P and mode != "lstm":
        raise MXNetError(f"RNN: projection_size is only supported with mode='lstm', got mode={mode!r}")
    dirs = ("l", "r") if bidirectional else ("l",)
    out_h = P or H
    weights, biases = [], []
    for layer in range(int(num_layers)):
        ni = int(input_size) if layer == 0 else out_h * len(dirs)
        for d in dirs:
            weights.append((f"{d}{layer}_i2h_weight", (g * H, ni)))
            weights.append((f"{d}{layer}_h2h_weight", (g * H, out_h)))
            if P:
                weights.append((f"{d}{layer}_h2r_weight", (P, H)))
            biases.append((f"{d}{layer}_i2h_bias", (g * H,)))
            biases.append((f"{d}{layer}_h2h_bias", (g * H,)))
    return tuple(weights + biases)


@functools.lru_cache(maxsize=256)
def rnn_param_size(mode: str, num_layers: int, input_size: int, state_size: int,
                   bidirectional: bool = False, projection_size: Optional[int] = None) -> int:
    """Length of MXNet's flat RNN parameter vector (MXNet's ``GetRnnParamSize``)."""
    return sum(int(np.prod(s)) for _, s in rnn_param_layout(
        mode, num_layers, input_size, state_size, bidirectional, projection_size))


def unpack_rnn_params(flat: Any, mode: str, num_layers: int, input_size: int, state_size: int,
                      bidirectional: bool = False, projection_size: Optional[int] = None) -> dict:
    """``{name: view}`` of the flat parameter vector (torch tensor or NumPy array), views not copies."""
    layout = rnn_param_layout(mode, num_layers, input_size, state_size, bidirectional, projection_size)
    total = sum(int(np.prod(s)) for _, s in layout)
    n = flat.numel() if isinstance(flat, torch.Tensor) else int(np.size(flat))
    if n != total:
        raise MXNetError(f"RNN: the parameter vector has {n} elements but mode={mode!r}, "
                         f"num_layers={num_layers}, input_size={input_size}, state_size={state_size}, "
                         f"bidirectional={bidirectional}, projection_size={projection_size} needs {total}")
    flat = flat.reshape(-1)
    out, pos = {}, 0
    for name, shape in layout:
        size = int(np.prod(shape))
        out[name] = flat[pos:pos + size].reshape(shape)
        pos += size
    return out


def pack_rnn_params(params: dict, mode: str, num_layers: int, input_size: int, state_size: int,
                    bidirectional: bool = False, projection_size: Optional[int] = None) -> torch.Tensor:
    """The flat parameter vector from ``{name: tensor}`` (inverse of ``unpack_rnn_params``)."""
    layout = rnn_param_layout(mode, num_layers, input_size, state_size, bidirectional, projection_size)
    parts = []
    for name, shape in layout:
        if name not in params:
            raise MXNetError(f"RNN: parameter {name!r} is missing; expected {[n for n, _ in layout]}")
        t = params[name]
        if tuple(t.shape) != tuple(shape):
            raise MXNetError(f"RNN: parameter {name!r} has shape {tuple(t.shape)}, expected {shape}")
        parts.append(t.reshape(-1))
    return torch.cat(parts)


# ---- operator rules --------------------------------------------------------------------------
def _input_names(attrs: dict) -> list:
    names = ["data", "parameters", "state"]
    if attrs.get("mode") == "lstm":
        names.append("state_cell")
    if attrs.get("use_sequence_length"):
        names.append("sequence_length")
    return names


def _num_outputs(attrs: dict) -> int:
    if not attrs.get("state_outputs"):
        return 1
    return 3 if attrs.get("mode") == "lstm" else 2


def _output_names(attrs: dict) -> list:
    names = ["output"]
    if attrs.get("state_outputs"):
        names.append("state_output")
        if attrs.get("mode") == "lstm":
            names.append("statecell_output")
    return names


def _dims(attrs: dict) -> tuple:
    L = int(attrs["num_layers"])
    D = 2 if attrs.get("bidirectional") else 1
    H = int(attrs["state_size"])
    P = attrs.get("projection_size")
    P = int(P) if P else 0
    return L, D, H, P


def _param_shapes(attrs: dict, in_shapes: list) -> list:
    """Parameter/state shapes from the data shape (T, N, I) (MXNet's RNNShape)."""
    data = in_shapes[0]
    if data is None or len(data) != 3:
        raise ValueError(f"RNN: data must be 3-D (seq_len, batch, input_size) in TNC layout, got {data}")
    _, N, I = data
    L, D, H, P = _dims(attrs)
    by_name = {"parameters": (rnn_param_size(attrs["mode"], L, I, H, D == 2, P or None),),
               "state": (L * D, N, P or H), "state_cell": (L * D, N, H), "sequence_length": (N,)}
    out = list(in_shapes)
    for k, name in enumerate(_input_names(attrs)):
        if k > 0 and k < len(out):
            out[k] = by_name[name]
    return out


def _infer_shape(attrs: dict, in_shapes: list) -> Optional[list]:
    """out (T, N, D*(P or H)), with ``state_outputs`` hy (L*D, N, P or H) and LSTM's cy
    (L*D, N, H); None where an input has another size than the kernel requires."""
    names = _input_names(attrs)
    if attrs["mode"] not in GATES or len(in_shapes) != len(names) or len(in_shapes[0]) != 3:
        return None
    given = {k: tuple(s) for k, s in zip(names, in_shapes)}
    T, N, I = given["data"]
    L, D, H, P = _dims(attrs)
    n_params = 1
    for d in given["parameters"]:
        n_params *= d
    if n_params != rnn_param_size(attrs["mode"], L, I, H, D == 2, P or None) \
            or given["state"] != (L * D, N, P or H) \
            or given.get("state_cell", (L * D, N, H)) != (L * D, N, H) \
            or given.get("sequence_length", (N,)) != (N,):
        return None
    outs = [(T, N, D * (P or H))]
    if attrs["state_outputs"]:
        outs.append((L * D, N, P or H))
        if attrs["mode"] == "lstm":
            outs.append((L * D, N, H))
    return outs


# ---- kernel ----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _torch_order(mode: str, L: int, I: int, H: int, D: int, P: int) -> tuple:
    """(sizes of the flat vector's pieces, ((piece index, shape), ...) in torch's per-layer order:
    w_ih, w_hh, b_ih, b_hh[, w_hr])."""
    layout = rnn_param_layout(mode, L, I, H, D == 2, P or None)
    index = {name: (k, shape) for k, (name, shape) in enumerate(layout)}
    order = []
    for layer in range(L):
        for d in ("l", "r")[:D]:
            p = f"{d}{layer}_"
            order += [index[p + "i2h_weight"], index[p + "h2h_weight"], index[p + "i2h_bias"], index[p + "h2h_bias"]]
            if P:
                order.append(index[p + "h2r_weight"])
    return tuple(int(np.prod(shape)) for _, shape in layout), tuple(order)


def _torch_weights(flat: torch.Tensor, mode: str, L: int, I: int, H: int, D: int, P: int) -> list:
    """Views of ``flat`` in torch's per-layer order."""
    sizes, order = _torch_order(mode, L, I, H, D, P)
    parts = flat.reshape(-1).split(sizes)
    return [parts[k].view(shape) for k, shape in order]


def _lstm_loop(x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor, ws: list, L: int, D: int,
               P: int, lengths: Optional[torch.Tensor], p: float, train: bool,
               clip: Optional[tuple], clip_nan: bool) -> tuple:
    """Step-by-step LSTM (used for cell-state clipping, which torch's fused kernel lacks)."""
    T, N, _ = x.shape
    per = 5 if P else 4
    inp = x
    hs, cs = [], []
    mask = None
    if lengths is not None:
        steps = torch.arange(T, device=x.device).unsqueeze(1)
        mask = (steps < lengths.to(x.device).unsqueeze(0)).unsqueeze(2).to(x.dtype)  # (T, N, 1)
    for layer in range(L):
        outs = []
        for d in range(D):
            k = layer * D + d
            w_ih, w_hh, b_ih, b_hh = ws[k * per: k * per + 4]
            w_hr = ws[k * per + 4] if P else None
            h, c = h0[k], c0[k]
            ys: list = [None] * T
            order = range(T - 1, -1, -1) if d == 1 else range(T)
            for t in order:
                gates = inp[t] @ w_ih.t() + b_ih + h @ w_hh.t() + b_hh
                i, f, g, o = gates.chunk(4, dim=1)
                c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                if clip is not None:
                    if clip_nan:
                        c_new = torch.where(torch.isnan(c_new), torch.full_like(c_new, clip[0]), c_new)
                    c_new = torch.clamp(c_new, clip[0], clip[1])
                h_new = torch.sigmoid(o) * torch.tanh(c_new)
                if w_hr is not None:
                    h_new = h_new @ w_hr.t()
                if mask is not None:
                    m = mask[t]
                    h_new = m * h_new + (1 - m) * h
                    c_new = m * c_new + (1 - m) * c
                    ys[t] = m * h_new
                else:
                    ys[t] = h_new
                h, c = h_new, c_new
            outs.append(torch.stack(ys, 0))
            hs.append(h)
            cs.append(c)
        inp = torch.cat(outs, dim=2) if D == 2 else outs[0]
        if p > 0 and train and layer < L - 1:
            inp = torch.nn.functional.dropout(inp, p, True)
    return inp, torch.stack(hs, 0), torch.stack(cs, 0)


@register("RNN", num_outputs=_num_outputs, output_names=_output_names, active_inputs=_input_names,
          param_shapes=_param_shapes, infer_shape=_infer_shape, samples=lambda: _rnn_samples())
def RNN(data, parameters, state, state_cell=None, sequence_length=None, *,
        state_size: int, num_layers: int, bidirectional: bool = False,
        mode: Literal["rnn_relu", "rnn_tanh", "lstm", "gru"], p: float = 0.0,
        state_outputs: bool = False, projection_size: OptInt = None,
        lstm_state_clip_min: OptFloat = None, lstm_state_clip_max: OptFloat = None,
        lstm_state_clip_nan: bool = False, use_sequence_length: bool = False, is_train=False):
    """Fused multi-layer (bidirectional) RNN / LSTM / GRU over TNC data (MXNet's ``RNN``).

    Outputs ``out`` (T, N, D*H), and with ``state_outputs`` the final ``hy`` (L*D, N, H) and,
    for LSTM, ``cy``. Dropout ``p`` applies between layers in training. With
    ``use_sequence_length`` outputs past each sequence's length are zero and final states are
    taken at its last valid step."""
    if mode not in GATES:
        raise MXNetError(f"RNN: invalid mode {mode!r}; expected one of {list(GATES)}")
    # MXNet passes the inputs a node has, in order: without state_cell (non-LSTM) the sequence
    # lengths arrive in the state_cell slot.
    if mode != "lstm" and state_cell is not None:
        if use_sequence_length and sequence_length is None:
            state_cell, sequence_length = None, state_cell
        else:
            raise MXNetError(f"RNN: state_cell is only an input of mode='lstm', got mode={mode!r}")
    if data.dim() != 3:
        raise MXNetError(f"RNN: data must be 3-D (seq_len, batch, input_size) in TNC layout, got "
                         f"shape {tuple(data.shape)}; transpose NTC data with swapaxes(0, 1)")
    T, N, I = data.shape
    L, H = int(num_layers), int(state_size)
    D = 2 if bidirectional else 1
    P = int(projection_size) if projection_size else 0
    out_h = P or H
    expect = rnn_param_size(mode, L, I, H, D == 2, P or None)
    if parameters.numel() != expect:
        raise MXNetError(f"RNN: parameters has {parameters.numel()} elements, but mode={mode!r} with "
                         f"input_size={I}, state_size={H}, num_layers={L}, bidirectional={bool(bidirectional)}"
                         f"{f', projection_size={P}' if P else ''} needs {expect} "
                         f"(see hybridnet.ops.rnn.rnn_param_layout)")
    if state is None:
        raise MXNetError("RNN: the initial state input is required")
    if tuple(state.shape) != (L * D, N, out_h):
        raise MXNetError(f"RNN: state has shape {tuple(state.shape)}, expected {(L * D, N, out_h)} "
                         f"(num_layers*directions, batch, {'projection_size' if P else 'state_size'})")
    if mode == "lstm":
        if state_cell is None:
            raise MXNetError("RNN: mode='lstm' needs the state_cell input (initial cell state)")
        if tuple(state_cell.shape) != (L * D, N, H):
            raise MXNetError(f"RNN: state_cell has shape {tuple(state_cell.shape)}, expected {(L * D, N, H)}")
    if use_sequence_length:
        if sequence_length is None:
            raise MXNetError("RNN: use_sequence_length=True needs the sequence_length input (batch,)")
        if tuple(sequence_length.shape) != (N,):
            raise MXNetError(f"RNN: sequence_length has shape {tuple(sequence_length.shape)}, expected ({N},)")
    else:
        sequence_length = None

    n_out = 1 if not state_outputs else (3 if mode == "lstm" else 2)
    if data.device.type == "meta":
        outs = [torch.empty((T, N, D * out_h), dtype=data.dtype, device="meta"),
                torch.empty((L * D, N, out_h), dtype=data.dtype, device="meta"),
                torch.empty((L * D, N, H), dtype=data.dtype, device="meta")]
        return outs[0] if n_out == 1 else tuple(outs[:n_out])

    ws = _torch_weights(parameters.to(data.dtype), mode, L, I, H, D, P)
    train = bool(is_train)
    drop = float(p) if train else 0.0
    clip = None
    if mode == "lstm" and lstm_state_clip_min is not None and lstm_state_clip_max is not None:
        clip = (float(lstm_state_clip_min), float(lstm_state_clip_max))
    lengths = None
    if sequence_length is not None:
        lengths = sequence_length.detach().to("cpu").round().long()
        if T and (int(lengths.min()) < 1 or int(lengths.max()) > T):
            raise MXNetError(f"RNN: sequence_length values must be in [1, {T}], got {lengths.tolist()}")
    state = state.to(data.dtype)
    cell = state_cell.to(data.dtype) if state_cell is not None else None

    if clip is not None:  # mode == "lstm": state_cell was checked above
        out, hy, cy = _lstm_loop(data, state, cast(torch.Tensor, cell), ws, L, D, P, lengths, float(p), train,
                                 clip, bool(lstm_state_clip_nan))
    elif lengths is None:
        hx: Any = (state, cell) if mode == "lstm" else state
        fn = cast(Callable[..., Any], {"lstm": torch._VF.lstm, "gru": torch._VF.gru,
                                       "rnn_tanh": torch._VF.rnn_tanh, "rnn_relu": torch._VF.rnn_relu}[mode])
        if P:
            with warnings.catch_warnings():   # "projections not supported with oneDNN": a fallback
                warnings.simplefilter("ignore", UserWarning)
                res = fn(data, hx, ws, True, L, drop, train, D == 2, False)
        else:
            res = fn(data, hx, ws, True, L, drop, train, D == 2, False)
        out, hy = res[0], res[1]
        cy = res[2] if mode == "lstm" else None
    else:
        out, hy, cy = _packed(mode, data, state, cell, ws, L, drop, train, D, lengths)
    if n_out == 1:
        return out
    if mode == "lstm":
        return out, hy, cy
    return out, hy


def _packed(mode: str, data: torch.Tensor, state: torch.Tensor, cell: Optional[torch.Tensor],
            ws: list, L: int, drop: float, train: bool, D: int, lengths: torch.Tensor) -> tuple:
    """Variable-length sequences through torch's packed-sequence kernels."""
    from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence
    T = data.shape[0]
    packed = pack_padded_sequence(data, lengths, enforce_sorted=False)
    # enforce_sorted=False: the permutations are always set
    order, unorder = cast(torch.Tensor, packed.sorted_indices), cast(torch.Tensor, packed.unsorted_indices)
    h = state.index_select(1, order)
    res: tuple[torch.Tensor, ...]
    if mode == "lstm":  # state_cell is checked by the caller
        c = cast(torch.Tensor, cell).index_select(1, order)
        res = torch._VF.lstm(packed.data, packed.batch_sizes, (h, c), ws, True, L, drop, train, D == 2)
    else:
        fn: Callable[..., Any] = {"gru": torch._VF.gru, "rnn_tanh": torch._VF.rnn_tanh,
                                  "rnn_relu": torch._VF.rnn_relu}[mode]
        res = fn(packed.data, packed.batch_sizes, h, ws, True, L, drop, train, D == 2)
    out, _ = pad_packed_sequence(PackedSequence(res[0], packed.batch_sizes, order, unorder),
                                 total_length=T)
    hy = res[1].index_select(1, unorder)
    cy = res[2].index_select(1, unorder) if mode == "lstm" else None
    return out, hy, cy


# ---- NumPy reference (for the sample table; independent of torch) -----------------------------
def _sig(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def numpy_rnn(data: np.ndarray, parameters: np.ndarray, state: np.ndarray, *rest: np.ndarray,
              state_size: int, num_layers: int, mode: str, bidirectional: bool = False,
              state_outputs: bool = False, projection_size: Optional[int] = None,
              use_sequence_length: bool = False, lstm_state_clip_min: Optional[float] = None,
              lstm_state_clip_max: Optional[float] = None, **_: Any) -> Any:
    """Reference RNN in NumPy, written from MXNet's equations (float64)."""
    extra = list(rest)
    cell = extra.pop(0) if mode == "lstm" else None
    lens = np.asarray(extra.pop(0)).astype(np.int64) if use_sequence_length else None
    x = np.asarray(data, np.float64)
    T, N, I = x.shape
    D = 2 if bidirectional else 1
    H, L = state_size, num_layers
    P = projection_size or 0
    w = unpack_rnn_params(np.asarray(parameters, np.float64), mode, L, I, H, bidirectional, projection_size)
    if lens is None:
        lens = np.full(N, T)
    hy: list = []
    cy: list = []
    inp = x
    for layer in range(L):
        outs = []
        for d in range(D):
            pre = f"{'lr'[d]}{layer}_"
            Wx, Wh, bx, bh = w[pre + "i2h_weight"], w[pre + "h2h_weight"], w[pre + "i2h_bias"], w[pre + "h2h_bias"]
            k = layer * D + d
            y = np.zeros((T, N, P or H))
            hk, ck = np.array(state[k], np.float64), (np.array(cell[k], np.float64) if cell is not None else None)
            for n in range(N):
                h = hk[n].copy()
                c = ck[n].copy() if ck is not None else None
                steps = range(lens[n] - 1, -1, -1) if d == 1 else range(lens[n])
                for t in steps:
                    gx = Wx @ inp[t, n] + bx
                    gh = Wh @ h + bh
                    if mode == "lstm":
                        i, f, g, o = np.split(gx + gh, 4)
                        c = _sig(f) * c + _sig(i) * np.tanh(g)
                        if lstm_state_clip_min is not None and lstm_state_clip_max is not None:
                            c = np.clip(c, lstm_state_clip_min, lstm_state_clip_max)
                        h = _sig(o) * np.tanh(c)
                        if P:
                            h = w[pre + "h2r_weight"] @ h
                    elif mode == "gru":
                        xr, xz, xn = np.split(gx, 3)
                        hr, hz, hn = np.split(gh, 3)
                        r, z = _sig(xr + hr), _sig(xz + hz)
                        h = (1 - z) * np.tanh(xn + r * hn) + z * h
                    elif mode == "rnn_tanh":
                        h = np.tanh(gx + gh)
                    else:
                        h = np.maximum(gx + gh, 0)
                    y[t, n] = h
                hk[n] = h
                if ck is not None:
                    ck[n] = c
            outs.append(y)
            hy.append(hk)
            cy.append(ck)
        inp = np.concatenate(outs, axis=2)
    if not state_outputs:
        return inp
    if mode == "lstm":
        return inp, np.stack(hy), np.stack(cy)
    return inp, np.stack(hy)


def _rnn_samples() -> list:
    rng = np.random.RandomState(7)
    T, N = 3, 2

    def case(mode: str, L: int = 1, bi: bool = False, lens: Optional[list] = None, I: int = 4, H: int = 5,
             **attrs: Any) -> Sample:
        D = 2 if bi else 1
        P = attrs.get("projection_size") or 0
        size = rnn_param_size(mode, L, I, H, bi, P or None)
        ins = [rng.uniform(-1, 1, (T, N, I)), rng.uniform(-0.5, 0.5, size),
               rng.uniform(-0.5, 0.5, (L * D, N, P or H))]
        if mode == "lstm":
            ins.append(rng.uniform(-0.5, 0.5, (L * D, N, H)))
        a = {"state_size": H, "num_layers": L, "mode": mode, "bidirectional": bi, "state_outputs": True}
        a.update(attrs)
        grad_inputs = tuple(range(len(ins)))
        if lens is not None:
            ins.append(np.asarray(lens, np.float64))
            a["use_sequence_length"] = True
        return Sample(tuple(ins), a, ref=numpy_rnn, grad_inputs=grad_inputs, rtol=1e-4, atol=1e-6)

    return [case("lstm"), case("gru", L=2), case("rnn_tanh", bi=True), case("rnn_relu", L=2, bi=True),
            case("lstm", L=2, bi=True, p=0.3, I=2, H=2), case("gru", bi=True, lens=[3, 2]),
            case("lstm", lens=[1, 3], I=3, H=3), case("lstm", projection_size=2, I=3, H=3),
            case("lstm", lstm_state_clip_min=-0.2, lstm_state_clip_max=0.2, I=3, H=3)]


# ---- _rnn_param_concat -------------------------------------------------------------------------
# Gluon's fused layers concatenate their parameters with this operator (it appears in exported
# -symbol.json files). It is a Concat; registered here unless the shape family already has it.
if find("_rnn_param_concat") is None:
    def _concat_samples() -> list:
        r = np.random.RandomState(3)
        return [Sample((r.uniform(-1, 1, (6,)), r.uniform(-1, 1, (4,))), {"dim": 0},
                       ref=lambda *a, dim: np.concatenate(a, axis=dim))]

    @register("_rnn_param_concat", samples=_concat_samples, infer_inputs=rnn_param_concat_inputs,
              infer_shape=concat_shape)
    def _rnn_param_concat(*data, dim: int = 1):
        """Concatenation along ``dim`` (the flat parameter vector of gluon's fused RNN layers)."""
        return torch.cat(data, dim=dim)
