"""Predict mode on int8: MXNet's quantized layer chains fused into one oneDNN kernel each.

A graph from ``mx.contrib.quantization`` keeps MXNet's operators node for node: an int8
convolution gives int32 accumulators (with their range), a calibrated requantize rounds them back
to int8/uint8, a quantized relu follows, a quantized add joins a residual into int32 again, which
another requantize (and relu) brings back. Run one by one, every layer makes several passes over
float32-held accumulators. This pass rewrites, for predict-mode functions only (the graph that
``export`` writes keeps MXNet's operators):

* int8 layer (``int8_role`` "conv_layer" / "fc_layer") -> calibrated "requantize" [-> "relu_act"]
  into the layer's fused operator (``_int8_conv`` / ``_int8_fully_connected``), which writes the
  requantized integers directly (uint8 or int8, channels-last for convolutions);
* int8 convolution -> requantize -> "add" (uncalibrated: int32) -> calibrated requantize
  [-> relu] into one ``_int8_conv`` with the add's other operand as its residual (oneDNN's
  "sum" post-op).

Every fused chain needs its input's range as a calibration constant: the data of the layer must
come from a calibrated quantize/requantize, through operators that keep the range
("keeps_range": pooling, flatten; relu). Chains whose intermediate values are graph outputs or
read elsewhere stay as they are. The fused node replaces the chain's last node (its outputs:
integers, min, max), so the operators after it (pooling, flatten, dequantize) read it as before.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, cast

from ...ir.graph import Graph, Node, transform
from ...ops import handles
from ...ops.quantized_ops import calibrated_output
from ...ops.registry import OpDef
from .onednn import leave_channels_last

__all__ = ["fuse_int8", "has_int8_layers"]

_LAYER_ROLES = ("conv_layer", "fc_layer")


def _role(node: Node) -> Optional[str]:
    return node.op.int8_role if node.op is not None else None


def has_int8_layers(graph: Graph) -> bool:
    """Whether ``graph`` has an int8 layer the fusion may rewrite (one walk over the nodes)."""
    return any(node.op is not None and node.op.int8_role in _LAYER_ROLES for node in graph.nodes)


def _attr(node: Node, key: str) -> Any:
    return cast(OpDef, node.op).attr_value(node.attrs, key)


def _calibrated(node: Node) -> Optional[tuple]:
    """(out_type, real) of a calibrated quantize or requantize node, else None."""
    if _role(node) not in ("requantize", "entry"):
        return None
    return calibrated_output(lambda key: _attr(node, key))


def _reads_triple(reader: Node, src: Node, first: int, lo: int, hi: int) -> bool:
    """``reader`` takes ``src``'s (value, min, max) in its slots (first, lo, hi)."""
    ins = reader.inputs
    return len(ins) > max(first, lo, hi) and ins[first] == (src, 0) and ins[lo] == (src, 1) and ins[hi] == (src, 2)


def _static_real(node: Node, slot_value: int, slot_lo: int, slot_hi: int) -> Optional[float]:
    """The calibrated real range of the quantized value ``node`` reads in (value, min, max) slots,
    followed back through operators that keep the range; None where it is only known at run
    time."""
    entries = node.inputs
    if len(entries) <= max(slot_value, slot_lo, slot_hi):
        return None
    src, k = entries[slot_value]
    if k != 0 or entries[slot_lo] != (src, 1) or entries[slot_hi] != (src, 2):
        return None
    for _ in range(1000):
        cal = _calibrated(src)
        if cal is not None:
            return float(cal[1])
        role = _role(src)
        if role in ("fused_conv", "fused_fc"):
            return float(_attr(src, "out_range"))
        if role not in ("keeps_range", "relu_act") or not _reads_triple(src, src.inputs[0][0], 0, 1, 2) \
                or src.inputs[0][1] != 0:
            return None
        src = src.inputs[0][0]
    return None


def fuse_int8(graph: Graph) -> Graph:
    """Rewrite the int8 layer chains of ``graph`` (see the module docstring) into fused int8
    operators; a graph without such chains is returned as it is."""
    users = graph.users()
    outputs = {id(n) for n, _ in graph.outputs}

    def sole_reader(node: Node) -> Optional[Node]:
        """The one node reading all of ``node``'s (value, min, max) and nothing else of it."""
        readers = users[id(node)]
        if id(node) in outputs or len(readers) != 3 or len({id(r) for r, _ in readers}) != 1:
            return None
        return readers[0][0]

    plans: Dict[int, tuple] = {}  # id(end node) -> (layer, fused attributes, residual slot or None, add node)
    absorbed: set = set()
    for layer in graph.nodes:
        role = _role(layer)
        if role not in _LAYER_ROLES or id(layer) in absorbed:
            continue
        names = layer.input_names()
        slot = {name: i for i, name in enumerate(names)}
        if "min_data" not in slot or str(_attr(layer, "layout") if role == "conv_layer" else None) \
                not in ("None", "NCHW"):
            continue
        data_real = _static_real(layer, slot["data"], slot["min_data"], slot["max_data"])
        requant = sole_reader(layer)
        if data_real is None or requant is None or not _reads_triple(requant, layer, 0, 1, 2):
            continue
        cal = _calibrated(requant)
        if cal is None or _role(requant) != "requantize":
            continue
        fused_op = handles.int8_conv if role == "conv_layer" else handles.int8_fully_connected
        attrs = {key: _attr(layer, key) for key in fused_op.attrs if key in cast(OpDef, layer.op).attrs}
        end, relu, residual, add = requant, False, None, None
        after = sole_reader(requant)
        if after is not None and _role(after) == "relu_act" and _reads_triple(after, requant, 0, 1, 2):
            end, relu = after, True
        elif after is not None and role == "conv_layer" and _role(after) == "add" and id(after) not in absorbed \
                and _attr(after, "min_calib_range") is None:
            mine = 1 if _reads_triple(after, requant, 1, 4, 5) else 0 if _reads_triple(after, requant, 0, 2, 3) \
                else None
            requant2 = sole_reader(after)
            cal2 = _calibrated(requant2) if requant2 is not None else None
            other_real = None if mine is None else _static_real(after, 1 - mine, 4 - 2 * mine, 5 - 2 * mine)
            if cal2 is not None and other_real is not None and _reads_triple(cast(Node, requant2), after, 0, 1, 2):
                end, cal, residual, add = cast(Node, requant2), cal2, 1 - cast(int, mine), after
                attrs["accum_range"] = other_real
                last = sole_reader(end)
                if last is not None and _role(last) == "relu_act" and _reads_triple(last, end, 0, 1, 2):
                    end, relu = last, True
        attrs.update(data_range=data_real, out_type=cal[0], out_range=float(cal[1]), relu=relu)
        plans[id(end)] = (layer, attrs, residual, add)
        absorbed.update({id(layer), id(requant), id(end)} | ({id(add)} if add is not None else set()))
    if not plans:
        return graph

    rebuilt: dict = {}  # id(original node) -> its rebuilt inputs

    def visit(node: Node, inputs: tuple) -> Any:
        rebuilt[id(node)] = inputs
        plan = plans.get(id(node))
        if plan is None:
            return None
        layer, attrs, residual, add = plan
        ins = rebuilt[id(layer)]
        slot = {name: i for i, name in enumerate(layer.input_names())}
        take = ["data", "weight", "min_weight", "max_weight"]
        if not _attr(layer, "no_bias"):
            take += ["bias", "min_bias", "max_bias"]
        new_inputs = tuple(ins[slot[name]] for name in take)
        if residual is not None:
            new_inputs += (rebuilt[id(add)][residual],)
        op = cast(OpDef, layer.op)
        fused_op = handles.int8_conv if op.int8_role == "conv_layer" else handles.int8_fully_connected
        fused = Node(fused_op, node.name, attrs, new_inputs)
        return [(fused, 0), (fused, 1), (fused, 2)]

    new_outputs = transform(graph.outputs, visit)
    # a fused layer's range outputs are constants it shares between calls: graph outputs get copies
    fused_ops = (handles.int8_conv, handles.int8_fully_connected)
    new_outputs = [(Node(handles.copy, f"{n.name}_range{k}", {}, ((n, k),)), 0) if n.op in fused_ops and k else (n, k)
                   for n, k in new_outputs]
    return Graph(leave_channels_last(new_outputs, handles.int8_conv))
