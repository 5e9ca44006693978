"""``mx.contrib.quantization``: int8 models from float32 ones, as MXNet 1.9.1 makes them.

``quantize_model`` (Symbol API) and ``quantize_net_v2`` / ``quantize_net`` (Gluon) rewrite a
float32 graph into MXNet's quantized graph: ``_contrib_quantize_v2`` before the first quantized
layer, ``_contrib_quantized_conv`` / ``_contrib_quantized_fully_connected`` (int8 x int8 -> int32)
each followed by ``_contrib_requantize``, range-keeping ``_contrib_quantized_pooling`` /
``_act`` (relu) / ``_flatten`` / ``_batch_norm`` / ``_elemwise_add`` between them, and
``_contrib_dequantize`` where a float32 operator or a graph output reads a quantized value. The
node names, attributes (``out_type``, ``min_calib_range``/``max_calib_range``) and parameter
names (``conv0_weight_quantize``, ``..._min``, ``..._max``) are MXNet's, so a quantized model
exports to -symbol.json/-params and loads again here or in MXNet 1.9.1.

Calibration runs the float32 model over ``calib_data`` and records, for every layer output a
quantized graph must scale, either its min/max (``calib_mode='naive'``) or its histogram, whose
KL-divergence-optimal threshold (``'entropy'``, MXNet's ``_get_optimal_threshold``) becomes the
range; ``'none'`` leaves the ranges to run time (each call measures them).

Where MXNet on CPU first fuses layers for oneDNN (``get_backend_symbol('MKLDNN_QUANTIZE')``:
``quantize_net_v2`` with a cpu context, ``quantize_model_mkldnn``), hybridnet folds each
inference BatchNorm into the convolution before it (new weight and bias) and keeps plain
``Convolution`` nodes: the same arithmetic in a graph any MXNet reads, without ``_sg_mkldnn_*``
subgraph operators. ``quantize_granularity='channel-wise'`` is accepted and, as for MXNet's
plain operators, has no effect. The entropy search does not need SciPy (MXNet 1.9.1 asks for it
but computes with its own operator).
"""
from __future__ import annotations

import logging
import os
import tempfile
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import ndarray
from ..base import MXNetError
from ..context import Context, cpu
from ..io import DataBatch, DataDesc, DataIter
from ..ndarray import NDArray
from ..ndarray.utils import load as nd_load
from ..ndarray.utils import save as nd_save
from ..ndarray.utils import zeros as _zeros
from ..ops import registry as _registry
from ..symbol import Symbol
from ..symbol import load as sym_load
from ..symbol import load_json as _sym_load_json

__all__ = ["quantize_model", "quantize_model_mkldnn", "quantize_graph", "calib_graph", "quantize_net",
           "quantize_net_v2", "combine_histogram"]

_CALIB_MODES = ("none", "naive", "entropy", "customize")


# ==== the graph pass (MXNet's QuantizeGraph, on -symbol.json's node list) ========================
class _QuantRule:
    """How a float32 operator is quantized (MXNet's FQuantizedOp and its companions)."""

    def __init__(self, qop: str, must: bool, requantize: bool, float_inputs: Sequence[int] = ()):
        self.qop = qop
        self.must = must                  # FQuantizable kMust (else kSupport)
        self.requantize = requantize      # FNeedRequantize: a requantize follows
        self.float_inputs = tuple(float_inputs)  # FAvoidQuantizeInput: inputs kept float32


def _ints_of(text: Any) -> tuple:
    s = str(text).strip("()[] ")
    return tuple(int(float(v)) for v in s.split(",") if v.strip()) if s else ()


def _rule_for(node: dict) -> Optional[_QuantRule]:
    op, attrs = node["op"], node.get("attrs", {})
    if op == "Convolution":
        if len(_ints_of(attrs.get("kernel", ""))) == 2 and attrs.get("layout", "NCHW") in ("NCHW", "None"):
            return _QuantRule("_contrib_quantized_conv", True, True)
    elif op == "FullyConnected":
        return _QuantRule("_contrib_quantized_fully_connected", True, True)
    elif op == "Pooling":
        kernel = _ints_of(attrs.get("kernel", ""))
        two_d = len(kernel) == 2 or (attrs.get("global_pool", "False") in ("True", "1", "true") and not kernel)
        if attrs.get("pool_type", "max") in ("max", "avg") and (two_d or len(kernel) == 2) \
                and attrs.get("layout", "NCHW") in ("NCHW", "None"):
            return _QuantRule("_contrib_quantized_pooling", False, False)
    elif op == "Activation":
        if attrs.get("act_type") == "relu":
            return _QuantRule("_contrib_quantized_act", False, False)
    elif op == "Flatten":
        return _QuantRule("_contrib_quantized_flatten", False, False)
    elif op == "elemwise_add":
        return _QuantRule("_contrib_quantized_elemwise_add", False, True)
    elif op == "BatchNorm":
        if attrs.get("output_mean_var", "False") in ("False", "0", "false") and int(attrs.get("axis", 1)) == 1:
            return _QuantRule("_contrib_quantized_batch_norm", False, False, float_inputs=(1, 2, 3, 4))
    return None


def _output_name(node: dict, index: int) -> str:
    """MXNet's GetOutputName: a variable's name, else ``<node>_<output name>``."""
    if node["op"] == "null":
        return node["name"]
    op = _registry.find(node["op"])
    names = op.output_names(op.parse_attrs(node.get("attrs", {}))) if op is not None else []
    return f"{node['name']}_{names[index] if index < len(names) else 'output' if index == 0 else index}"


def _suffix_of(node: dict, index: int) -> str:
    """The suffix MXNet puts between an entry's node name and ``_quantize``."""
    if node["op"] == "null":
        return ""
    op = _registry.find(node["op"])
    if op is not None and op._output_names is not None:
        names = op.output_names(op.parse_attrs(node.get("attrs", {})))
        if index < len(names):
            return "_" + names[index]
    return f"_{index}"


def _mark(nodes: List[dict], rules: Dict[int, _QuantRule], mode: str) -> Dict[int, _QuantRule]:
    """MXNet's MarkQuantizedNodes: in ``smart`` mode a supporting operator is quantized only
    between quantized operators (reached from a must-quantize one both up- and downstream)."""
    if mode == "full":
        return rules
    if mode != "smart":
        raise MXNetError(f"unrecognized quantize mode: {mode}; expected `full` or `smart`")
    readers: Dict[int, List[int]] = {}
    for i, n in enumerate(nodes):
        for src, _, *_ in n["inputs"]:
            readers.setdefault(src, []).append(i)
    must = [i for i, r in rules.items() if r.must]
    marks = {i: 0 for i, r in rules.items() if not r.must}
    for bit, step in ((1, lambda i: [e[0] for e in nodes[i]["inputs"]]), (2, lambda i: readers.get(i, []))):
        queue = list(must)
        while queue:
            i = queue.pop()
            for j in step(i):
                if j in marks and not marks[j] & bit:
                    marks[j] |= bit
                    queue.append(j)
    return {i: r for i, r in rules.items() if r.must or marks.get(i) == 3}


def _quantize_json(graph: dict, excluded_symbols: Sequence[str], excluded_operators: Sequence[str],
                   offline_params: Sequence[str], quantized_dtype: str, quantize_mode: str) -> Tuple[dict, List[str]]:
    """The quantized graph of ``graph`` (-symbol.json as a dict) and its calibration layer names."""
    nodes = graph["nodes"]
    excluded, excluded_ops, offline = set(excluded_symbols), set(excluded_operators), set(offline_params)
    rules = {i: r for i, n in enumerate(nodes) if n["op"] != "null"
             and n["name"] not in excluded and n["op"] not in excluded_ops and (r := _rule_for(n)) is not None}
    rules = _mark(nodes, rules, quantize_mode)

    readers: Dict[int, List[int]] = {}
    for k, n in enumerate(nodes):
        for e in n["inputs"]:
            readers.setdefault(e[0], []).append(k)
    for h in graph["heads"]:
        readers.setdefault(h[0], []).append(-1)
    out: List[dict] = []
    by_name: Dict[str, int] = {}   # variables made once

    def emit(op: str, name: str, inputs: List[list], attrs: Optional[dict] = None) -> int:
        node: Dict[str, Any] = {"op": op, "name": name, "inputs": inputs}
        if attrs:
            node["attrs"] = attrs
        out.append(node)
        return len(out) - 1

    def variable(i: int) -> int:
        n = nodes[i]
        if n["name"] not in by_name:
            by_name[n["name"]] = emit("null", n["name"], [], n.get("attrs"))
        return by_name[n["name"]]

    mirror: Dict[int, int] = {}        # old node -> new node (quantized layers: their last node)
    dequantized: Dict[int, int] = {}   # old quantized node -> its dequantize node
    quantized_entry: Dict[Tuple[int, int], int] = {}  # float entry -> quantize_v2 node
    calib: List[str] = []

    def mirror_of(i: int) -> int:
        if i not in mirror:
            mirror[i] = variable(i)
        return mirror[i]

    def float_entry(src: int, idx: int) -> list:
        """Entry ``(src, idx)`` of the old graph as the new graph reads it in float: a quantized
        layer's output through one dequantize node (made once), anything else mirrored."""
        if src not in rules:
            return [mirror_of(src), idx, 0]
        if src not in dequantized:
            q = mirror[src]
            dequantized[src] = emit("_contrib_dequantize", nodes[src]["name"] + "_dequantize",
                                    [[q, idx, 0], [q, 1 + 2 * idx, 0], [q, 2 + 2 * idx, 0]])
        return [dequantized[src], 0, 0]

    def quantize_entry(src: int, idx: int) -> int:
        key = (src, idx)
        if key not in quantized_entry:
            n = nodes[src]
            name = n["name"] + _suffix_of(n, idx) + "_quantize"
            if n["op"] == "null" and n["name"] in offline:
                # an offline parameter: quantized once into three variables (MXNet's OfflineParams)
                q = emit("null", name, [])
                emit("null", name + "_min", [])
                emit("null", name + "_max", [])
                quantized_entry[key] = q
            else:
                q = emit("_contrib_quantize_v2", name, [[mirror_of(src), idx, 0]], {"out_type": quantized_dtype})
                calib.append(_output_name(n, idx))
                quantized_entry[key] = q
        return quantized_entry[key]

    def range_entries(key: int, offline_var: bool, idx: int) -> List[list]:
        if offline_var:
            return [[key + 1, 0, 0], [key + 2, 0, 0]]
        return [[key, 1 + 2 * idx, 0], [key, 2 + 2 * idx, 0]]

    for i, n in enumerate(nodes):
        if n["op"] == "null":
            continue
        rule = rules.get(i)
        if rule is not None:
            data_inputs, ranges = [], []
            for slot, (src, idx, *_) in enumerate(n["inputs"]):
                if slot in rule.float_inputs:
                    data_inputs.append([mirror_of(src), idx, 0])
                    continue
                if src in rules:  # already quantized: its integers and range
                    data_inputs.append([mirror[src], idx, 0])
                    ranges += range_entries(mirror[src], False, idx)
                else:
                    q = quantize_entry(src, idx)
                    offline_var = out[q]["op"] == "null"
                    data_inputs.append([q, 0, 0])
                    ranges += range_entries(q, offline_var, 0)
            # offline parameters' range variables come right after the layer's own inputs
            qattrs = dict(n.get("attrs", {}))
            new = emit(rule.qop, "quantized_" + n["name"], data_inputs + ranges, qattrs)
            if rule.qop == "_contrib_quantized_batch_norm":
                calib.append(_output_name(n, 0))
            if rule.requantize:
                new = emit("_contrib_requantize", "requantize_" + n["name"], [[new, 0, 0], [new, 1, 0], [new, 2, 0]],
                           {"out_type": quantized_dtype})
                relu = _sole_relu_reader(nodes, readers, rules, i)
                calib.append(_output_name(n, 0) if relu is None else _output_name(nodes[relu], 0))
            mirror[i] = new
        else:
            inputs = [float_entry(src, idx) for src, idx, *_ in n["inputs"]]
            mirror[i] = emit(n["op"], n["name"], inputs, n.get("attrs"))
    heads = [float_entry(src, idx) for src, idx, *_ in graph["heads"]]
    return _compact(out, heads, graph.get("attrs")), calib


def _sole_relu_reader(nodes: List[dict], readers: Dict[int, List[int]], rules: Dict[int, _QuantRule],
                      i: int) -> Optional[int]:
    """The quantized relu that alone reads node ``i``, if one does.

    Its requantize is then calibrated on the relu's output (min 0: uint8 under ``auto``), so
    the requantize itself clips at 0 with all 8 bits for the positive half: the precision MXNet's
    CPU backend gets by fusing the relu into the convolution, in MXNet's plain graph."""
    r = readers.get(i, [])
    if len(r) == 1 and r[0] >= 0 and r[0] in rules and rules[r[0]].qop == "_contrib_quantized_act":
        return r[0]
    return None


def _compact(nodes: List[dict], heads: List[list], attrs: Optional[dict]) -> dict:
    """-symbol.json of the nodes reachable from ``heads``, renumbered in topological order."""
    order: List[int] = []
    seen: set = set()
    for h in heads:
        stack = [(h[0], False)]
        while stack:
            i, done = stack.pop()
            if done:
                order.append(i)
                continue
            if i in seen:
                continue
            seen.add(i)
            stack.append((i, True))
            for e in reversed(nodes[i]["inputs"]):
                if e[0] not in seen:
                    stack.append((e[0], False))
    new_id = {old: k for k, old in enumerate(order)}
    out = []
    for old in order:
        n = dict(nodes[old])
        n["inputs"] = [[new_id[e[0]], e[1], 0] for e in n["inputs"]]
        out.append(n)
    graph = {"nodes": out, "arg_nodes": [k for k, n in enumerate(out) if n["op"] == "null"],
             "node_row_ptr": _row_ptr(out), "heads": [[new_id[h[0]], h[1], 0] for h in heads]}
    graph["attrs"] = attrs or {"mxnet_version": ["int", 10901]}
    return graph


def _row_ptr(nodes: List[dict]) -> List[int]:
    ptr = [0]
    for n in nodes:
        if n["op"] == "null":
            k = 1
        else:
            op = _registry.get(n["op"])
            k = op.total_outputs(op.parse_attrs(n.get("attrs", {})))
        ptr.append(ptr[-1] + k)
    return ptr


def _graph_of(sym: Symbol) -> dict:
    import json
    return json.loads(sym.tojson())


def _symbol_of(graph: dict) -> Symbol:
    import json
    return _sym_load_json(json.dumps(graph))


def _quantize_symbol(sym: Symbol, ctx: Any, excluded_symbols: Optional[List[str]] = None,
                     excluded_operators: Optional[List[str]] = None, offline_params: Optional[List[str]] = None,
                     quantized_dtype: str = "int8", quantize_mode: str = "smart",
                     quantize_granularity: str = "tensor-wise") -> Tuple[Symbol, List[str]]:
    """The quantized symbol of float32 ``sym`` and the names of the layer outputs to calibrate."""
    if excluded_symbols is not None and not isinstance(excluded_symbols, list):
        raise AssertionError("excluded_symbols must be a list")
    if excluded_operators is not None and not isinstance(excluded_operators, list):
        raise AssertionError("excluded_operators must be a list")
    graph, calib = _quantize_json(_graph_of(sym), excluded_symbols or [], excluded_operators or [],
                                  offline_params or [], quantized_dtype, quantize_mode)
    return _symbol_of(graph), calib


def _calibrate_quantized_sym(qsym: Symbol, th_dict: Dict[str, Tuple[float, float]]) -> Symbol:
    """``qsym`` with the calibrated ranges set where MXNet sets them: on quantize_v2 and
    requantize nodes (their input's float32 name) and quantized BatchNorm (its output's)."""
    if not th_dict:
        return qsym
    graph = _graph_of(qsym)
    nodes = graph["nodes"]
    readers: Dict[int, set] = {}
    for k, n in enumerate(nodes):
        for e in n["inputs"]:
            readers.setdefault(e[0], set()).add(k)
    for h in graph["heads"]:
        readers.setdefault(h[0], set()).add(-1)
    for k, n in enumerate(nodes):
        if n["op"] in ("_contrib_quantize_v2", "_contrib_requantize"):
            src, idx = n["inputs"][0][0], n["inputs"][0][1]
            name = _output_name(nodes[src], idx)
            after = readers.get(k, set())
            if n["op"] == "_contrib_requantize" and len(after) == 1 and min(after) >= 0 \
                    and nodes[min(after)]["op"] == "_contrib_quantized_act":
                relu_name = _output_name(nodes[min(after)], 0)[len("quantized_"):]
                if relu_name in th_dict:  # calibrated on the relu that alone reads it
                    name = "quantized_" + relu_name
        elif n["op"] == "_contrib_quantized_batch_norm":
            name = _output_name(n, 0)
        else:
            continue
        if name.startswith("quantized_"):
            name = name[len("quantized_"):]
        if name in th_dict:
            lo, hi = th_dict[name]
            attrs = n.setdefault("attrs", {})
            # MXNet prints std::to_string (6 decimals), which turns small ranges into 0
            attrs["min_calib_range"] = f"{float(lo):.9g}"
            attrs["max_calib_range"] = f"{float(hi):.9g}"
    return _symbol_of(graph)


def _quantize_params(qsym: Symbol, params: Dict[str, NDArray], th_dict: Dict[str, Tuple[float, float]]
                     ) -> Dict[str, NDArray]:
    """The parameters of ``qsym``: ``*weight_quantize`` / ``*bias_quantize`` as int8 with their
    ``_min``/``_max``, the others as given."""
    quantized: Dict[str, NDArray] = {}
    for name in qsym.list_arguments():
        if name.endswith(("weight_quantize", "bias_quantize")):
            param = params[name[:-len("_quantize")]]
            lo, hi = ndarray.min(param), ndarray.max(param)
            if max(abs(lo.asscalar()), abs(hi.asscalar())) == 0:  # all zeros (a fresh bias): zeros
                val, vmin, vmax = _zeros(param.shape, dtype="int8"), lo.reshape((1,)), hi.reshape((1,))
            else:
                val, vmin, vmax = ndarray.contrib.quantize(  # type: ignore[attr-defined]  # generated
                    data=param, min_range=lo, max_range=hi, out_type="int8")
            quantized[name], quantized[name + "_min"], quantized[name + "_max"] = val, vmin, vmax
        elif name in params:
            quantized[name] = params[name]
        elif name.endswith("_min") and name[:-len("_min")] in th_dict:
            quantized[name] = ndarray.array([th_dict[name[:-len("_min")]][0]])
        elif name.endswith("_max") and name[:-len("_max")] in th_dict:
            quantized[name] = ndarray.array([th_dict[name[:-len("_max")]][1]])
    return quantized


# ==== BatchNorm folded into the convolution before it (the stand-in for MKLDNN_QUANTIZE) ==========
def _true(text: Any) -> bool:
    return str(text) in ("True", "true", "1")


def _fold_batchnorm(sym: Symbol, arg_params: Dict[str, NDArray], aux_params: Dict[str, NDArray]
                    ) -> Tuple[Symbol, Dict[str, NDArray], Dict[str, NDArray]]:
    """Each inference BatchNorm whose input is a 2-D convolution read by nothing else, folded into
    that convolution's weight and bias (MXNet's oneDNN conv+bn fusion, as plain nodes)."""
    graph = _graph_of(sym)
    nodes = graph["nodes"]
    readers: Dict[int, int] = {}
    for n in nodes:
        for e in n["inputs"]:
            readers[e[0]] = readers.get(e[0], 0) + 1
    for h in graph["heads"]:
        readers[h[0]] = readers.get(h[0], 0) + 1
    args, auxs = dict(arg_params), dict(aux_params)
    replace: Dict[int, int] = {}
    names = {n["name"] for n in nodes}
    for i, n in enumerate(nodes):
        if n["op"] != "BatchNorm" or _true(n.get("attrs", {}).get("output_mean_var", "False")) \
                or int(n.get("attrs", {}).get("axis", 1)) != 1:
            continue
        conv_id = n["inputs"][0][0]
        conv = nodes[conv_id]
        if conv["op"] != "Convolution" or readers.get(conv_id, 0) != 1 or _rule_for(conv) is None:
            continue
        slots = [nodes[e[0]]["name"] for e in n["inputs"][1:5]]
        w_name = nodes[conv["inputs"][1][0]]["name"]
        if readers.get(conv["inputs"][1][0], 0) != 1 or w_name not in args or \
                any(s not in args and s not in auxs for s in slots):
            continue
        gamma, beta, mean, var = (np.asarray((args[s] if s in args else auxs[s]).asnumpy(), np.float64)
                                  for s in slots)
        attrs = n.get("attrs", {})
        if _true(attrs.get("fix_gamma", "True")):
            gamma = np.ones_like(gamma)
        scale = gamma / np.sqrt(var + float(attrs.get("eps", 1e-3)))
        w = args[w_name].asnumpy().astype(np.float64)
        cattrs = conv.setdefault("attrs", {})
        has_bias = not _true(cattrs.get("no_bias", "False"))
        if has_bias:
            b_name = nodes[conv["inputs"][2][0]]["name"]
            if readers.get(conv["inputs"][2][0], 0) != 1:
                continue
            b = args[b_name].asnumpy().astype(np.float64)
        else:
            base = w_name[:-len("weight")] if w_name.endswith("weight") else w_name + "_"
            b_name = base + "bias"
            while b_name in names:
                b_name = "_" + b_name
            names.add(b_name)
            b = np.zeros(w.shape[0])
            nodes.append({"op": "null", "name": b_name, "inputs": []})
            conv["inputs"] = conv["inputs"][:2] + [[len(nodes) - 1, 0, 0]]
            cattrs["no_bias"] = "False"
        args[w_name] = ndarray.array((w * scale.reshape(-1, 1, 1, 1)).astype(np.float32))
        args[b_name] = ndarray.array(((b - mean) * scale + beta).astype(np.float32))
        replace[i] = conv_id
    if not replace:
        return sym, arg_params, aux_params
    # the folded BatchNorms' readers read the convolutions; nodes are renumbered topologically
    for n in nodes:
        n["inputs"] = [[replace.get(e[0], e[0]), e[1] if e[0] not in replace else 0, 0] for e in n["inputs"]]
    heads = [[replace.get(h[0], h[0]), h[1] if h[0] not in replace else 0, 0] for h in graph["heads"]]
    folded = _compact(nodes, heads, graph.get("attrs"))
    new_sym = _symbol_of(folded)
    keep_args, keep_aux = set(new_sym.list_arguments()), set(new_sym.list_auxiliary_states())
    return (new_sym, {k: v for k, v in args.items() if k in keep_args},
            {k: v for k, v in auxs.items() if k in keep_aux})


# ==== collecting layer statistics =================================================================
def combine_histogram(old_hist: tuple, arr: np.ndarray, new_min: float, new_max: float, new_th: float) -> tuple:
    """Collect layer histogram for arr and combine it with old histogram."""
    (old_hist, old_hist_edges, old_min, old_max, old_th) = old_hist
    if new_th <= old_th:
        hist, _ = np.histogram(arr, bins=len(old_hist), range=(-old_th, old_th))
        return (old_hist + hist, old_hist_edges, min(old_min, new_min), max(old_max, new_max), old_th)
    old_num_bins = len(old_hist)
    old_step = 2 * old_th / old_num_bins
    half_increased_bins = int((new_th - old_th) // old_step + 1)
    new_num_bins = half_increased_bins * 2 + old_num_bins
    new_th = half_increased_bins * old_step + old_th
    hist, hist_edges = np.histogram(arr, bins=new_num_bins, range=(-new_th, new_th))
    hist[half_increased_bins:new_num_bins - half_increased_bins] += old_hist
    return (hist, hist_edges, min(old_min, new_min), max(old_max, new_max), new_th)


def _as_numpy(arr: Any) -> np.ndarray:
    return arr.asnumpy() if isinstance(arr, NDArray) else np.asarray(arr)


class _LayerHistogramCollector:
    """Saves layer histogram in a dict with layer names as keys and lists of NDArrays as
    values. The collected histogram will be used for calculating the optimal thresholds for
    quantization using KL divergence."""

    def __init__(self, num_bins: int = 8001, include_layer: Any = None, logger: Any = None):
        self.hist_dict: Dict[str, tuple] = {}
        self.num_bins = num_bins
        self.include_layer = include_layer
        self.logger = logger

    def collect(self, name: str, arr: Any) -> None:
        """Callback function for collecting layer output NDArrays."""
        if self.include_layer is not None and name not in self.include_layer:
            return
        arr = _as_numpy(arr)
        if self.logger:
            self.logger.debug("Collecting layer %s histogram of shape %s" % (name, arr.shape))
        min_range, max_range = float(np.min(arr)), float(np.max(arr))
        th = max(abs(min_range), abs(max_range))
        if name in self.hist_dict:
            self.hist_dict[name] = combine_histogram(self.hist_dict[name], arr, min_range, max_range, th)
        else:
            hist, hist_edges = np.histogram(arr, bins=self.num_bins, range=(-th, th))
            self.hist_dict[name] = (hist, hist_edges, min_range, max_range, th)


class _LayerOutputMinMaxCollector:
    """Saves layer output min and max values in a dict with layer names as keys.
    The collected min and max values will be directly used as thresholds for quantization."""

    def __init__(self, quantized_dtype: str, include_layer: Any = None, logger: Any = None):
        self.min_max_dict: Dict[str, Tuple[float, float]] = {}
        self.quantized_dtype = quantized_dtype
        self.include_layer = include_layer
        self.logger = logger

    def collect(self, name: str, arr: Any) -> None:
        """Callback function for collecting min and max values from an NDArray."""
        if self.include_layer is not None and name not in self.include_layer:
            return
        arr = _as_numpy(arr)
        min_range, max_range = float(np.min(arr)), float(np.max(arr))
        if name in self.min_max_dict:
            cur = self.min_max_dict[name]
            self.min_max_dict[name] = (min(cur[0], min_range), max(cur[1], max_range))
        else:
            self.min_max_dict[name] = (min_range, max_range)
        if self.logger:
            self.logger.debug("Collecting layer %s min_range=%f, max_range=%f" % (name, min_range, max_range))


# MXNet's public-looking names of the collectors
LayerHistogramCollector = _LayerHistogramCollector
LayerOutputMinMaxCollector = _LayerOutputMinMaxCollector


class _LayerRunner:
    """Runs a float32 symbol and hands chosen internal outputs to a collector (the part of
    MXNet's monitor callback quantization uses)."""

    def __init__(self, sym: Symbol, arg_params: Dict[str, NDArray], aux_params: Dict[str, NDArray],
                 data_names: Sequence[str], include_layer: Optional[Sequence[str]], ctx: Any):
        internals = sym.get_internals()
        outputs = internals.list_outputs()
        names = [n for n in outputs if include_layer is None or n in include_layer]
        names = list(dict.fromkeys(names))
        from ..symbol import Group
        self.names = names
        self.group = Group([internals[n] for n in names]) if names else None
        self.arg_params, self.aux_params = arg_params, aux_params
        self.data_names = list(data_names)
        self.ctx = ctx if isinstance(ctx, Context) else cpu()
        self._exe: Any = None
        self._shapes: Optional[tuple] = None

    def _bind(self, shapes: Dict[str, tuple]) -> Any:
        assert self.group is not None
        arg_shapes, _, aux_shapes = self.group.infer_shape(**shapes)
        args = {}
        for name, shape in zip(self.group.list_arguments(), arg_shapes):
            if name in shapes:
                args[name] = _zeros(shape, ctx=self.ctx)
            elif name in self.arg_params:
                args[name] = self.arg_params[name].as_in_context(self.ctx)
            else:  # labels and other inputs no calibrated layer reads
                args[name] = _zeros(shape, ctx=self.ctx)
        aux = {name: self.aux_params[name].as_in_context(self.ctx) if name in self.aux_params
               else _zeros(shape, ctx=self.ctx)
               for name, shape in zip(self.group.list_auxiliary_states(), aux_shapes)}
        return self.group.bind(self.ctx, args, grad_req="null", aux_states=aux)

    def run(self, batch: Sequence[NDArray], collector: Any) -> None:
        if self.group is None:
            return
        data = {n: x for n, x in zip(self.data_names, batch)}
        shapes = tuple((n, tuple(x.shape)) for n, x in data.items())
        if self._exe is None or shapes != self._shapes:
            self._exe, self._shapes = self._bind(dict(shapes)), shapes
        outs = self._exe.forward(is_train=False, **data)
        for name, arr in zip(self.names, outs):
            collector.collect(name, arr)


def _batches(data: Any) -> Any:
    """The data arrays of each batch of a DataIter (reset first) or iterable."""
    if isinstance(data, DataIter):
        data.reset()
        for batch in data:
            yield list(batch.data or ()), data.batch_size
        return
    for batch in data:
        arrays = list(batch.data or ()) if isinstance(batch, DataBatch) else \
            list(batch) if isinstance(batch, (list, tuple)) else [batch]
        yield arrays, arrays[0].shape[0]


def _collect_layer_statistics(runner: _LayerRunner, data: Any, collector: Any, max_num_examples: Optional[int] = None,
                              logger: Any = None, max_num_batches: Optional[int] = None) -> int:
    num_batches = num_examples = 0
    for arrays, batch_size in _batches(data):
        if max_num_batches is not None and num_batches >= max_num_batches:
            break
        runner.run(arrays, collector)
        num_batches += 1
        num_examples += batch_size
        if max_num_examples is not None and num_examples >= max_num_examples:
            break
    if logger is not None:
        logger.info("Collected statistics from %d batches with batch_size=%d"
                    % (num_batches, getattr(data, "batch_size", 0)))
    return num_examples


# ==== the KL-divergence threshold (MXNet's calibrate_entropy) ========================================
def _smooth_distribution(p: np.ndarray, eps: float = 0.0001) -> np.ndarray:
    """Given a discrete distribution (may have not been normalized to 1), smooth it by
    replacing zeros with eps multiplied by a scaling factor and taking the corresponding amount
    off the non-zero values."""
    is_zeros = (p == 0).astype(np.float32)
    is_nonzeros = (p != 0).astype(np.float32)
    n_zeros = is_zeros.sum()
    n_nonzeros = p.size - n_zeros
    if not n_nonzeros:
        raise ValueError("The discrete probability distribution is malformed. All entries are 0.")
    eps1 = eps * float(n_zeros) / float(n_nonzeros)
    assert eps1 < 1.0, "n_zeros=%d, n_nonzeros=%d, eps1=%f" % (n_zeros, n_nonzeros, eps1)
    hist = p.astype(np.float32)
    hist += eps * is_zeros + (-eps1) * is_nonzeros
    assert (hist <= 0).sum() == 0
    return hist


def _entropy_thresholds(hist: np.ndarray, hist_edges: np.ndarray, num_quantized_bins: int,
                        eps: float = 0.0001) -> Tuple[float, float]:
    """MXNet's calibrate_entropy (``calibrate.cc``): over every symmetric threshold, the KL
    divergence between the clipped histogram ``p`` and its ``num_quantized_bins``-level
    quantization ``q`` (both smoothed); returns (threshold, divergence) of the least.

    Computed for all thresholds at once: the smoothing keeps each sum, so the divergence is
    ``(sum p_s log p_s - sum p_s log q_s) / T + log(S_q / T)``, whose parts are prefix sums
    over the histogram (``(h - e) log(h - e)`` by its Taylor series to second order in the
    smoothing's ``e``, which is < 1 while counts are >= 1)."""
    h = np.asarray(hist, np.float64)
    n = h.size
    z, half, nq = n // 2, num_quantized_bins // 2, num_quantized_bins
    i = np.arange(half, z + 1)
    if i.size == 0:
        return float(hist_edges[-1]), float("inf")
    nz = h != 0
    safe = np.where(nz, h, 1.0)
    cs = np.concatenate(([0.0], np.cumsum(h)))
    cnz = np.concatenate(([0.0], np.cumsum(nz)))
    c_hlogh = np.concatenate(([0.0], np.cumsum(np.where(nz, h * np.log(safe), 0.0))))
    c_logp1 = np.concatenate(([0.0], np.cumsum(np.where(nz, np.log(safe) + 1.0, 0.0))))
    c_inv = np.concatenate(([0.0], np.cumsum(np.where(nz, 1.0 / safe, 0.0))))
    total = cs[-1]
    start, stop = z - i, z + i + 1
    length = 2 * i + 1
    p0 = cs[start + 1]                         # everything at or below the first bin
    p_last = cs[n] - cs[stop - 1]              # the last bin and everything above it
    h_last = h[stop - 1]
    lo_in, hi_in = start + 1, stop - 1         # interior histogram indices [lo_in, hi_in)
    nnz_in = cnz[hi_in] - cnz[lo_in]
    nnz_p = nnz_in + (p0 != 0) + (p_last != 0)
    e_p = eps * (length - nnz_p) / np.maximum(nnz_p, 1)
    # the quantized bins, in histogram indices: bin j covers [start + j*m, start + (j+1)*m), the
    # last one up to stop; s (the sliced histogram) is h there except s[0] = 0
    m = length // nq
    j = np.arange(nq)
    a = start[:, None] + j[None, :] * m[:, None]
    b = np.where(j[None, :] == nq - 1, stop[:, None], a + m[:, None])
    a_s = np.where(j[None, :] == 0, a + 1, a)  # s[0] is 0
    big_q = cs[b] - cs[a_s]
    norm = cnz[b] - cnz[a_s]
    # interior parts (without the last element, which p holds with the outliers above it)
    q_in = big_q.copy()
    cnt_in = norm.copy()
    q_in[:, -1] -= h_last
    cnt_in[:, -1] -= (h_last != 0)
    has0 = (p0 != 0) & (norm[:, 0] > 0)
    has_last = (p_last != 0) & (norm[:, -1] > 0)
    nnz_q = nnz_in + has0 + has_last
    ok = (nnz_p > 0) & (nnz_q > 0) & (e_p < 1)
    e_q = eps * (length - nnz_q) / np.maximum(nnz_q, 1)
    ok &= e_q < 1
    with np.errstate(divide="ignore", invalid="ignore"):
        level = np.where(norm > 0, big_q / np.maximum(norm, 1), 0.0)          # q's value in bin j
        log_q = np.where(norm > 0, np.log(np.maximum(level - e_q[:, None], 1e-300)), 0.0)
        # q's sum: the bins' sums, plus q at the ends where p has values the sliced histogram has not
        s_q = big_q.sum(axis=1) + np.where(has0, level[:, 0], 0.0) \
            + np.where(has_last & (h_last == 0), level[:, -1], 0.0)
        # sum p_s log p_s: interior by Taylor, the two ends exactly
        a_in = (c_hlogh[hi_in] - c_hlogh[lo_in]) - e_p * (c_logp1[hi_in] - c_logp1[lo_in]) \
            + 0.5 * e_p ** 2 * (c_inv[hi_in] - c_inv[lo_in])

        def xlogx(x: np.ndarray) -> np.ndarray:
            return np.where(x > 0, x * np.log(np.maximum(x, 1e-300)), 0.0)
        p0_s, pl_s = p0 - e_p, p_last - e_p
        a_sum = a_in + np.where(p0 != 0, xlogx(p0_s), 0.0) + np.where(p_last != 0, xlogx(pl_s), 0.0)
        # sum p_s log q_s
        b_in = (log_q * (q_in - e_p[:, None] * cnt_in)).sum(axis=1)
        log_eps = np.log(eps)
        q0 = np.where(has0, np.log(np.maximum(level[:, 0] - e_q, 1e-300)), log_eps)
        ql = np.where(has_last, np.log(np.maximum(level[:, -1] - e_q, 1e-300)), log_eps)
        b_sum = b_in + np.where(p0 != 0, p0_s * q0, 0.0) + np.where(p_last != 0, pl_s * ql, 0.0)
        divergence = (a_sum - b_sum) / total + np.log(s_q / total)
    divergence = np.where(ok & np.isfinite(divergence), divergence, np.inf)
    # the first of the least (as MXNet's scan), ties within rounding counted as ties
    low = divergence.min()
    best = int(np.argmax(divergence <= low + 1e-9 * max(1.0, abs(low)))) if np.isfinite(low) else 0
    if np.isfinite(low) and abs(divergence[best]) < 1e-9:
        divergence[best] = 0.0
    return float(hist_edges[stop[best]]), float(divergence[best])


def _get_optimal_threshold(hist_data: tuple, quantized_dtype: str, num_quantized_bins: int = 255) -> tuple:
    """Given a dataset, find the optimal threshold for quantizing it.
    The reference distribution is `q`, and the candidate distribution is `p`.
    `q` is a truncated version of the original distribution."""
    (hist, hist_edges, min_val, max_val, _) = hist_data
    num_bins = len(hist)
    assert num_bins % 2 == 1
    if min_val >= 0 and quantized_dtype in ["auto", "uint8"]:
        # We need to move negative bins to positive bins to fit uint8 range.
        num_quantized_bins = num_quantized_bins * 2 + 1
    threshold, divergence = _entropy_thresholds(np.asarray(hist), np.asarray(hist_edges), num_quantized_bins)
    return min_val, max_val, threshold, divergence


def _get_optimal_thresholds(hist_dict: Dict[str, tuple], quantized_dtype: str, num_quantized_bins: int = 255,
                            logger: Any = None) -> Dict[str, Tuple[float, float]]:
    """Given a ndarray dict, find the optimal threshold for quantizing each value of the key."""
    assert isinstance(hist_dict, dict)
    if logger is not None:
        logger.info("Calculating optimal thresholds for quantization using KL divergence"
                    " with num_quantized_bins=%d" % num_quantized_bins)
    th_dict: Dict[str, Tuple[float, float]] = {}
    for name in list(hist_dict.keys()):
        min_val, max_val, th, divergence = _get_optimal_threshold(hist_dict[name], quantized_dtype,
                                                                  num_quantized_bins=num_quantized_bins)
        if min_val >= 0 and quantized_dtype in ["auto", "uint8"]:
            th_dict[name] = (0, th)
        else:
            th_dict[name] = (-th, th)
        del hist_dict[name]  # release the memory
        if logger:
            logger.debug("layer=%s, min_val=%f, max_val=%f, th=%f, divergence=%f"
                         % (name, min_val, max_val, th, divergence))
    return th_dict


# ==== loading and data ==============================================================================
def _load_sym(sym: Any, logger: Any = None) -> Symbol:
    """Given a str as a path the symbol .json file or a symbol, returns a Symbol object."""
    if isinstance(sym, str):
        cur_path = os.path.dirname(os.path.realpath(__file__))
        symbol_file_path = os.path.join(cur_path, sym)
        if logger:
            logger.info("Loading symbol from file %s" % symbol_file_path)
        return sym_load(symbol_file_path)
    if isinstance(sym, Symbol):
        return sym
    raise ValueError("_load_sym only accepts Symbol or path to the symbol file,"
                     " while received type %s" % str(type(sym)))


def _load_params(params: Any, logger: Any = None) -> tuple:
    """Given a str as a path to the .params file or a pair of params, returns two dictionaries
    representing arg_params and aux_params."""
    if isinstance(params, str):
        cur_path = os.path.dirname(os.path.realpath(__file__))
        param_file_path = os.path.join(cur_path, params)
        if logger:
            logger.info("Loading params from file %s" % param_file_path)
        save_dict = nd_load(param_file_path)
        arg_params, aux_params = {}, {}
        for k, v in save_dict.items():
            tp, name = k.split(":", 1)
            if tp == "arg":
                arg_params[name] = v
            if tp == "aux":
                aux_params[name] = v
        return arg_params, aux_params
    if isinstance(params, (tuple, list)) and len(params) == 2:
        return params[0], params[1]
    raise ValueError("Unsupported params provided. Must be either a path to the param file or"
                     " a pair of dictionaries representing arg_params and aux_params")


class _DataIterWrapper(DataIter):
    """DataIter wrapper for general iterator, e.g., gluon dataloader"""

    def __init__(self, calib_data: Any):
        self._data = calib_data
        try:
            calib_iter = iter(calib_data)
        except TypeError as e:
            raise TypeError("calib_data is not a valid iterator. {}".format(str(e))) from None
        data_example = next(calib_iter)
        if isinstance(data_example, (list, tuple)):
            data_example = list(data_example)
        else:
            data_example = [data_example]
        num_data = len(data_example)
        assert num_data > 0
        if len(data_example[0].shape) > 4:
            data_example[0] = data_example[0].reshape((-1,) + data_example[0].shape[2:])
        provide = [DataDesc(name="data", shape=(data_example[0].shape))]
        provide += [DataDesc(name="data{}".format(i), shape=x.shape) for i, x in enumerate(data_example[1:])]
        if num_data >= 3:
            provide = [DataDesc(name="data{}".format(i), shape=x.shape) for i, x in enumerate(data_example[0:])]
        self.provide_data = provide
        self.provide_label = []
        self.batch_size = data_example[0].shape[0]
        self.reset()

    def reset(self) -> None:
        self._iter = iter(self._data)

    def next(self) -> DataBatch:
        next_data = next(self._iter)
        if not isinstance(next_data, (list, tuple)):
            next_data = [next_data]
        next_data = list(next_data)
        if len(next_data[0].shape) > 4:
            next_data[0] = next_data[0].reshape((-1,) + next_data[0].shape[2:])
        return DataBatch(data=next_data)


def _as_data_iter(calib_data: Any) -> tuple:
    """Convert normal iterator to mx.io.DataIter while parsing the data_shapes"""
    if isinstance(calib_data, DataIter):
        return calib_data, calib_data.provide_data
    calib_data = _DataIterWrapper(calib_data)
    return calib_data, calib_data.provide_data


# ==== the API ==========================================================================================
def _check_dtype(quantized_dtype: str) -> None:
    if quantized_dtype not in ("int8", "uint8", "auto"):
        raise ValueError("unknown quantized_dtype %s received, expected `int8`, `uint8` or `auto`" % quantized_dtype)


def _check_granularity(quantize_granularity: str) -> None:
    if quantize_granularity not in ("tensor-wise", "channel-wise"):
        raise ValueError("unkonwn quantize_granularity %s received, expected `tensor-wise` or `channel-wise`."
                         % quantize_granularity)


def _check_names(value: Any, what: str, kind: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError("%s must be a list of strings representing the names of the %s that will not be "
                         "quantized, while received type %s" % (what, kind, str(type(value))))
    return value


def _calib_names(data_names: Sequence[str], calib_data: Any) -> List[str]:
    names = list(data_names)
    provided = [d[0] for d in getattr(calib_data, "provide_data", []) or []]
    return names if names else provided


def quantize_model(sym: Any, arg_params: Dict[str, NDArray], aux_params: Dict[str, NDArray],
                   data_names: Sequence[str] = ("data",), label_names: Optional[Sequence[str]] = ("softmax_label",),
                   ctx: Any = cpu(), excluded_sym_names: Optional[List[str]] = None,
                   excluded_op_names: Optional[List[str]] = None, calib_mode: str = "entropy",
                   calib_data: Any = None, num_calib_examples: Optional[int] = None, quantized_dtype: str = "int8",
                   quantize_mode: str = "smart", quantize_granularity: str = "tensor-wise",
                   logger: Any = None) -> tuple:
    """User-level API for generating a quantized model from a FP32 model w/ or w/o calibration.

    Returns (quantized symbol, quantized arg_params, aux_params). ``calib_mode``: ``'none'``
    (ranges measured at run time), ``'naive'`` (min/max of the layer outputs over
    ``calib_data``, a DataIter) or ``'entropy'`` (the KL-optimal thresholds)."""
    excluded_syms = _check_names(excluded_sym_names, "excluded_sym_names", "symbols")
    excluded_ops = _check_names(excluded_op_names, "excluded_op_names", "operators")
    if logger:
        logger.info("Quantizing symbol")
    _check_dtype(quantized_dtype)
    _check_granularity(quantize_granularity)
    sym = _load_sym(sym, logger)
    qsym, calib_layer = _quantize_symbol(sym, ctx, excluded_symbols=excluded_syms,
                                         excluded_operators=excluded_ops, offline_params=list(arg_params.keys()),
                                         quantized_dtype=quantized_dtype, quantize_mode=quantize_mode,
                                         quantize_granularity=quantize_granularity)
    th_dict: Dict[str, Tuple[float, float]] = {}
    if calib_mode is not None and calib_mode != "none":
        if not isinstance(ctx, Context):
            raise ValueError("currently only supports single ctx, while received %s" % str(ctx))
        if calib_data is None:
            raise ValueError("calib_data must be provided when calib_mode=%s" % calib_mode)
        if not isinstance(calib_data, DataIter):
            raise ValueError("calib_data must be of DataIter type when calib_mode=%s, while received type %s"
                             % (calib_mode, str(type(calib_data))))
        if calib_mode not in ("entropy", "naive"):
            raise ValueError("unknown calibration mode %s received, expected `none`, `naive`, or `entropy`"
                             % calib_mode)
        runner = _LayerRunner(sym, arg_params, aux_params, _calib_names(data_names, calib_data), calib_layer, ctx)
        collector: Any
        if calib_mode == "entropy":
            collector = _LayerHistogramCollector(include_layer=calib_layer, logger=logger)
            num_examples = _collect_layer_statistics(runner, calib_data, collector, num_calib_examples, logger)
            if logger:
                logger.info("Collected layer outputs from FP32 model using %d examples" % num_examples)
                logger.info("Calculating optimal thresholds for quantization")
            th_dict = _get_optimal_thresholds(collector.hist_dict, quantized_dtype, logger=logger)
        else:
            collector = _LayerOutputMinMaxCollector(quantized_dtype=quantized_dtype, include_layer=calib_layer,
                                                    logger=logger)
            num_examples = _collect_layer_statistics(runner, calib_data, collector, num_calib_examples, logger)
            if logger:
                logger.info("Collected layer output min/max values from FP32 model using %d examples"
                            % num_examples)
            th_dict = collector.min_max_dict
        qsym = _calibrate_quantized_sym(qsym, th_dict)
    if logger:
        logger.info("Quantizing parameters")
    qarg_params = _quantize_params(qsym, arg_params, th_dict)
    return qsym, qarg_params, aux_params


def quantize_model_mkldnn(sym: Any, arg_params: Dict[str, NDArray], aux_params: Dict[str, NDArray],
                          data_names: Sequence[str] = ("data",),
                          label_names: Optional[Sequence[str]] = ("softmax_label",), ctx: Any = cpu(),
                          excluded_sym_names: Optional[List[str]] = None,
                          excluded_op_names: Optional[List[str]] = None, calib_mode: str = "entropy",
                          calib_data: Any = None, num_calib_examples: Optional[int] = None,
                          quantized_dtype: str = "int8", quantize_mode: str = "smart",
                          quantize_granularity: str = "tensor-wise", logger: Any = None) -> tuple:
    """quantize_model after the CPU backend's fusion (here: BatchNorm folded into the
    convolution before it)."""
    if not isinstance(ctx, Context):
        raise ValueError("currently only supports single ctx, while received %s" % str(ctx))
    if ctx.device_type != "cpu":
        raise ValueError("quantize_model_mkldnn only support Intel cpu platform with MKL-DNN Backend")
    sym, arg_params, aux_params = _fold_batchnorm(_load_sym(sym, logger), arg_params, aux_params)
    return quantize_model(sym=sym, arg_params=arg_params, aux_params=aux_params, data_names=data_names,
                          label_names=label_names, ctx=ctx, excluded_sym_names=excluded_sym_names,
                          excluded_op_names=excluded_op_names, calib_mode=calib_mode, calib_data=calib_data,
                          num_calib_examples=num_calib_examples, quantized_dtype=quantized_dtype,
                          quantize_mode=quantize_mode, quantize_granularity=quantize_granularity, logger=logger)


def quantize_graph(sym: Any, arg_params: Dict[str, NDArray], aux_params: Dict[str, NDArray], ctx: Any = cpu(),
                   excluded_sym_names: Optional[List[str]] = None, excluded_op_names: Optional[List[str]] = None,
                   calib_mode: str = "entropy", quantized_dtype: str = "int8", quantize_mode: str = "full",
                   quantize_granularity: str = "tensor-wise", LayerOutputCollector: Any = None,
                   logger: Any = None) -> tuple:
    """User-level API for generating a quantized model from a FP32 model w/o calibration and a
    collector for naive or entropy calibration. Returns (quantized symbol, quantized
    arg_params, aux_params, collector)."""
    excluded_sym_names = _check_names(excluded_sym_names, "excluded_sym_names", "symbols")
    if not isinstance(ctx, Context):
        raise ValueError("currently only supports single ctx, while received %s" % str(ctx))
    if logger:
        logger.info("Quantizing graph")
    _check_dtype(quantized_dtype)
    _check_granularity(quantize_granularity)
    sym = _load_sym(sym, logger)
    qsym, calib_layer = _quantize_symbol(sym, ctx, excluded_symbols=excluded_sym_names,
                                         excluded_operators=excluded_op_names, offline_params=list(arg_params.keys()),
                                         quantized_dtype=quantized_dtype, quantize_mode=quantize_mode,
                                         quantize_granularity=quantize_granularity)
    collector: Any = None
    if calib_mode is not None and calib_mode != "none":
        if calib_mode == "entropy":
            collector = _LayerHistogramCollector(include_layer=calib_layer, logger=logger)
            if logger:
                logger.info("Create a layer output collector for entropy calibration.")
        elif calib_mode == "naive":
            collector = _LayerOutputMinMaxCollector(quantized_dtype=quantized_dtype, include_layer=calib_layer,
                                                    logger=logger)
            if logger:
                logger.info("Create a layer output minmax collector for naive calibration")
        elif calib_mode == "customize" and LayerOutputCollector is not None:
            collector = LayerOutputCollector
            if getattr(collector, "include_layer", None) is None and hasattr(collector, "include_layer"):
                collector.include_layer = calib_layer
            if logger:
                logger.info("Create a customize layer output minmax collector for calibration")
        else:
            raise ValueError("unknown calibration mode %s received, expected `none`, `naive`, `entropy` or "
                             "`customize`" % calib_mode)
        if logger:
            logger.info("Collector created, please use set_monitor_callback to collect calibration information.")
    if logger:
        logger.info("Quantizing parameters")
    qarg_params = _quantize_params(qsym, arg_params, {})
    return qsym, qarg_params, aux_params, collector


def calib_graph(qsym: Any, arg_params: Dict[str, NDArray], aux_params: Dict[str, NDArray], collector: Any,
                calib_mode: str = "entropy", quantized_dtype: str = "int8", logger: Any = logging) -> tuple:
    """User-level API for calibrating a quantized model using a filled collector. Returns
    (calibrated symbol, quantized arg_params, aux_params)."""
    th_dict: Dict[str, Tuple[float, float]] = {}
    if calib_mode is not None and calib_mode != "none":
        if calib_mode == "entropy":
            if logger:
                logger.info("Calculating optimal thresholds for quantization")
            th_dict = _get_optimal_thresholds(collector.hist_dict, quantized_dtype, logger=logger)
        elif calib_mode in ("naive", "customize"):
            th_dict = collector.min_max_dict
        else:
            raise ValueError("unknown calibration mode %s received, expected `none`, `naive`, `entropy` or "
                             "`customize`" % calib_mode)
        qsym = _calibrate_quantized_sym(_load_sym(qsym, logger), th_dict)
    else:
        raise ValueError("please set calibration mode to naive or entropy.")
    if logger:
        logger.info("Quantizing parameters")
    qarg_params = _quantize_params(qsym, arg_params, th_dict)
    return qsym, qarg_params, aux_params


def _zeros_for(shape_desc: Any) -> NDArray:
    shape = shape_desc.shape if hasattr(shape_desc, "shape") else shape_desc[1]
    return _zeros(tuple(shape))


def quantize_net_v2(network: Any, quantized_dtype: str = "auto", quantize_mode: str = "full",
                    quantize_granularity: str = "tensor-wise", exclude_layers: Optional[List[str]] = None,
                    exclude_layers_match: Optional[List[str]] = None, exclude_operators: Optional[List[str]] = None,
                    calib_data: Any = None, data_shapes: Optional[list] = None, calib_mode: str = "none",
                    num_calib_examples: Optional[int] = None, ctx: Any = cpu(), LayerOutputCollector: Any = None,
                    logger: Any = None, num_calib_batches: Optional[int] = None) -> Any:
    """User-level API for Gluon users to generate a quantized SymbolBlock from a FP32
    HybridBlock w/ or w/o calibration. ``calib_data``: a DataIter or an iterable such as a
    gluon DataLoader; ``data_shapes``: DataDesc list, required without ``calib_data``;
    ``num_calib_examples`` (MXNet 1.9.1) or ``num_calib_batches`` (MXNet 2.0's spelling, also
    taken here) bound the calibration pass."""
    from ..gluon import SymbolBlock
    from ..model import load_checkpoint
    from ..symbol import var

    if logger:
        logger.info("Export HybridBlock")
    network.hybridize()
    if calib_data is not None:
        if isinstance(calib_data, DataIter):
            dshapes = calib_data.provide_data
        else:
            calib_data, dshapes = _as_data_iter(calib_data)
        if not data_shapes:
            data_shapes = list(dshapes)
    if not data_shapes:
        raise ValueError("data_shapes required")
    data_shapes = list(data_shapes)
    data_nd = [_zeros_for(shape) for shape in data_shapes]
    while True:
        try:
            network(*data_nd)
        except TypeError:
            if len(data_nd) <= 1:
                raise
            del data_nd[-1]
            del data_shapes[-1]
            if calib_data is not None and len(calib_data.provide_data) > len(data_nd):
                del calib_data.provide_data[-1]
            continue
        else:
            break

    with tempfile.TemporaryDirectory() as tmpdirname:
        prefix = os.path.join(tmpdirname, "tmp")
        network.export(prefix, epoch=0)
        symnet, args, auxs = load_checkpoint(prefix, 0)

    exclude_layers = list(exclude_layers) if exclude_layers is not None else []
    exclude_layers_match = exclude_layers_match or []
    exclude_operators = exclude_operators or []
    for name_match in exclude_layers_match:
        for layers in list(symnet.get_internals()):
            if layers.name.find(name_match) != -1:
                exclude_layers.append(layers.name)
    if logger:
        logger.info("These layers have been excluded %s" % exclude_layers)

    if isinstance(ctx, Context) and ctx.device_type == "cpu":
        symnet, args, auxs = _fold_batchnorm(symnet, args, auxs)

    qsym, qarg_params, aux_params, collector = quantize_graph(
        sym=symnet, arg_params=args, aux_params=auxs, ctx=ctx, excluded_sym_names=exclude_layers,
        excluded_op_names=exclude_operators, calib_mode=calib_mode, quantized_dtype=quantized_dtype,
        quantize_mode=quantize_mode, quantize_granularity=quantize_granularity,
        LayerOutputCollector=LayerOutputCollector, logger=logger)

    data_names = [pair[0] for pair in data_shapes]
    if calib_mode is not None and calib_mode != "none":
        if not isinstance(ctx, Context):
            raise ValueError("currently only supports single ctx, while received %s" % str(ctx))
        if calib_data is None:
            raise ValueError("calib_data must be provided when calib_mode=%s" % calib_mode)
        if calib_mode in ["naive", "entropy", "customize"]:
            data_names = [pair[0] for pair in calib_data.provide_data][:len(data_nd)]
            include = getattr(collector, "include_layer", None)
            runner = _LayerRunner(symnet, args, auxs, data_names, include, ctx)
            num_examples = _collect_layer_statistics(runner, _Truncated(calib_data, len(data_nd)), collector,
                                                     num_calib_examples, logger, max_num_batches=num_calib_batches)
            if logger:
                logger.info("Collected layer output values from FP32 model using %d examples" % num_examples)
            qsym, qarg_params, aux_params = calib_graph(qsym=qsym, arg_params=args, aux_params=auxs,
                                                        collector=collector, calib_mode=calib_mode,
                                                        quantized_dtype=quantized_dtype, logger=logger)
        else:
            raise ValueError("please set calibration mode to naive or entropy.")

    net = SymbolBlock(qsym, [var(name) for name in data_names])
    with tempfile.TemporaryDirectory() as tmpdirname:
        prefix = os.path.join(tmpdirname, "tmp")
        param_name = "%s-%04d.params" % (prefix + "net-quantized", 0)
        save_dict = {("arg:%s" % k): v.as_in_context(cpu()) for k, v in qarg_params.items()}
        save_dict.update({("aux:%s" % k): v.as_in_context(cpu()) for k, v in aux_params.items()})
        nd_save(param_name, save_dict)
        net.collect_params().load(param_name, cast_dtype=True, dtype_source="saved")
        net.collect_params().reset_ctx(ctx)
    return net


class _Truncated:
    """A calibration iterator's batches with only the first ``n`` data arrays (the network's
    inputs; a DataLoader's labels dropped)."""

    def __init__(self, data: Any, n: int):
        self.data, self.n = data, n
        self.batch_size = getattr(data, "batch_size", 0)

    def __iter__(self) -> Any:
        for arrays, batch_size in _batches(self.data):
            yield DataBatch(data=arrays[: self.n])


def quantize_net(network: Any, quantized_dtype: str = "auto", quantize_mode: str = "full",
                 exclude_layers: Optional[List[str]] = None, exclude_layers_match: Optional[List[str]] = None,
                 exclude_operators: Optional[List[str]] = None, calib_data: Any = None,
                 data_shapes: Optional[list] = None, calib_mode: str = "none",
                 num_calib_examples: Optional[int] = None, ctx: Any = cpu(), logger: Any = None,
                 num_calib_batches: Optional[int] = None) -> Any:
    """User-level API for Gluon users to generate a quantized SymbolBlock from a FP32
    HybridBlock w/ or w/o calibration. Will be deprecated after MXNet 2.0, please use
    quantize_net_v2."""
    warnings.warn("WARNING: This will be deprecated after MXNet 2.0, please use quantize_net_v2.")
    return quantize_net_v2(network=network, quantized_dtype=quantized_dtype, quantize_mode=quantize_mode,
                           quantize_granularity="tensor-wise", exclude_layers=exclude_layers,
                           exclude_layers_match=exclude_layers_match, exclude_operators=exclude_operators,
                           calib_data=calib_data, data_shapes=data_shapes, calib_mode=calib_mode,
                           num_calib_examples=num_calib_examples, ctx=ctx, LayerOutputCollector=None, logger=logger,
                           num_calib_batches=num_calib_batches)
