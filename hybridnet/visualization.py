"""Network visualisation (MXNet 1.9.1 ``mx.viz`` / ``mx.visualization``).

``print_summary`` prints MXNet's layer table (name(op), output shape, parameter count, previous
layer) and the total; ``plot_network`` returns a ``graphviz.Digraph`` of the graph.  Both read
the symbol's MXNet JSON (``tojson()``), so node order and the table's quirks match MXNet's.
The ``graphviz`` Python package is an optional dependency, needed only by ``plot_network``.
"""
from __future__ import annotations

import json
import re
import warnings
from typing import Any, Dict, List, Optional, Sequence

from .symbol import Symbol

__all__ = ["print_summary", "plot_network"]


def _numbers(text: str) -> List[str]:
    """The integers in an attribute string such as ``'(3, 3)'``."""
    return re.findall(r"\d+", text)


def _internal_shapes(symbol: Symbol, shape: Dict[str, Any]) -> Dict[str, tuple]:
    internals = symbol.get_internals()
    _, out_shapes, _ = internals.infer_shape(**shape)
    if out_shapes is None:
        raise ValueError("Input shape is incomplete")
    return dict(zip(internals.list_outputs(), out_shapes))


def _layer_params(node: dict, in_features: int, out_shape: Optional[tuple]) -> int:
    """Parameters of one layer as MXNet's summary counts them (weights + biases of
    Convolution/FullyConnected, gamma+beta of BatchNorm, the Embedding table; others 0)."""
    op, attrs = node["op"], node.get("attrs", {})
    has_bias = attrs.get("no_bias") != "True"
    if op == "Convolution":
        count = in_features * int(attrs["num_filter"]) // int(attrs.get("num_group", "1"))
        for k in _numbers(attrs["kernel"]):
            count *= int(k)
        return count + (int(attrs["num_filter"]) if has_bias else 0)
    if op == "FullyConnected":
        return (in_features + (1 if has_bias else 0)) * int(attrs["num_hidden"])
    if op == "BatchNorm":
        return int(out_shape[0]) * 2 if out_shape else 0
    if op == "Embedding":
        return int(attrs["input_dim"]) * int(attrs["output_dim"])
    return 0


def print_summary(symbol: Symbol, shape: Optional[Dict[str, Any]] = None, line_length: int = 120,
                  positions: Sequence[float] = (.44, .64, .74, 1.)) -> None:
    """Print each layer of ``symbol``: ``name(op)``, output shape (without the batch axis; needs
    ``shape``, a dict of input shapes), parameter count and the layers it reads, then the total.
    ``positions`` are the column ends, as fractions of ``line_length`` or absolute."""
    if not isinstance(symbol, Symbol):
        raise TypeError(f"print_summary: symbol must be a Symbol, got {type(symbol).__name__}")
    shapes = _internal_shapes(symbol, shape) if shape is not None else None
    conf = json.loads(symbol.tojson())
    nodes = conf["nodes"]
    # MXNet takes the first head entry [node, index, version] as a set of node ids
    heads = set(conf["heads"][0])
    ends = [int(line_length * p) for p in positions] if positions[-1] <= 1 else list(positions)

    def row(fields: Sequence[Any]) -> None:
        line = ""
        for field, end in zip(fields, ends):
            line = (line + str(field))[:end]
            line += " " * (end - len(line))
        print(line)

    def shape_of(node: dict) -> Optional[tuple]:
        if shapes is None:
            return None
        key = node["name"] + "_output" if node["op"] != "null" else node["name"]
        return shapes[key][1:] if key in shapes else None

    print("_" * line_length)
    row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"])
    print("=" * line_length)
    total = 0
    for i, node in enumerate(nodes):
        if node["op"] == "null" and i > 0:
            continue
        previous, in_features = [], 0
        if node["op"] != "null":
            for src, *_ in node["inputs"]:
                src_node = nodes[src]
                if src_node["op"] != "null" or src in heads:
                    previous.append(src_node["name"])
                    src_shape = shape_of(src_node)
                    if src_shape:
                        in_features += int(src_shape[0])
        out_shape = shape_of(node)
        params = _layer_params(node, in_features, out_shape)
        total += params
        row([f"{node['name']}({node['op']})", "x".join(str(d) for d in (out_shape or ())),
             params, previous[0] if previous else ""])
        for name in previous[1:]:
            row(["", "", "", name])
        print(("=" if i == len(nodes) - 1 else "_") * line_length)
    print(f"Total params: {total}")
    print("_" * line_length)


_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean",
                    "_running_var", "_running_mean")
_COLORS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69",
           "#fccde5")


def _import_digraph() -> Any:
    try:
        from graphviz import Digraph
    except ImportError as e:
        raise ImportError("mx.viz.plot_network draws with the optional 'graphviz' Python package "
                          "(and the Graphviz 'dot' program to render): pip install graphviz") from e
    return Digraph


def _node_style(node: dict) -> tuple:
    """(label, fill colour) of an operator node, as MXNet draws it."""
    op, name, attrs = node["op"], node["name"], node.get("attrs", {})
    if op == "Convolution":
        stride = "x".join(_numbers(attrs["stride"])) if "stride" in attrs else "1"
        return (f"Convolution\n{'x'.join(_numbers(attrs['kernel']))}/{stride}, "
                f"{attrs['num_filter']}", _COLORS[1])
    if op == "FullyConnected":
        return f"FullyConnected\n{attrs['num_hidden']}", _COLORS[1]
    if op == "BatchNorm":
        return name, _COLORS[3]
    if op == "Activation":
        return f"Activation\n{attrs['act_type']}", _COLORS[2]
    if op == "LeakyReLU":
        return f"LeakyReLU\n{attrs.get('act_type', 'Leaky')}", _COLORS[2]
    if op == "Pooling":
        kernel = "x".join(_numbers(attrs["kernel"])) if "kernel" in attrs else "[]"
        stride = "x".join(_numbers(attrs["stride"])) if "stride" in attrs else "1"
        return f"Pooling\n{attrs['pool_type']}, {kernel}/{stride}", _COLORS[4]
    if op in ("Concat", "Flatten", "Reshape"):
        return name, _COLORS[5]
    if op == "Softmax":
        return name, _COLORS[6]
    return (attrs["op_type"] if op == "Custom" else name), _COLORS[7]


def plot_network(symbol: Symbol, title: str = "plot", save_format: str = "pdf",
                 shape: Optional[Dict[str, Any]] = None, dtype: Optional[Dict[str, Any]] = None,
                 node_attrs: Optional[Dict[str, str]] = None, hide_weights: bool = True) -> Any:
    """A ``graphviz.Digraph`` of ``symbol``: operators as boxes, inputs as ovals, edges labelled
    with the (batch-less) shape when ``shape`` is given and the dtype when ``dtype`` is given.
    Weight-like variables (``*_weight``, ``*_bias``, ...) are left out when ``hide_weights``.
    Render it with ``.render()`` / ``.view()``."""
    Digraph = _import_digraph()
    if not isinstance(symbol, Symbol):
        raise TypeError(f"plot_network: symbol must be a Symbol, got {type(symbol).__name__}")
    shapes = _internal_shapes(symbol, shape) if shape is not None else None
    types = None
    if dtype is not None:
        internals = symbol.get_internals()
        _, out_types, _ = internals.infer_type(**dtype)
        if out_types is None:
            raise ValueError("Input type is incomplete")
        types = dict(zip(internals.list_outputs(), out_types))
    nodes = json.loads(symbol.tojson())["nodes"]
    seen: set = set()
    repeated = sorted({n["name"] for n in nodes if n["name"] in seen or seen.add(n["name"])})
    if repeated:
        warnings.warn("There are multiple variables with the same name in your graph, this may "
                      "result in cyclic graph. Repeated names: " + ",".join(repeated),
                      RuntimeWarning)
    base_attr = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034",
                 "style": "filled"}
    base_attr.update(node_attrs or {})
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    for node in nodes:
        attr = dict(base_attr)
        if node["op"] == "null":
            if node["name"].endswith(_WEIGHT_SUFFIXES):
                if hide_weights:
                    hidden.add(node["name"])
                continue
            label, attr["shape"], attr["fillcolor"] = node["name"], "oval", _COLORS[0]
        else:
            label, attr["fillcolor"] = _node_style(node)
        dot.node(name=node["name"], label=label, **attr)

    def output_key(src: dict) -> str:
        if src["op"] == "null":
            return src["name"]
        key = src["name"] + "_output"
        if "num_outputs" in src.get("attrs", {}):
            key += str(int(src["attrs"]["num_outputs"]) - 1)
        return key

    for node in nodes:
        if node["op"] == "null":
            continue
        inputs = node["inputs"][:1] if node["op"] == "_contrib_BilinearResize2D" else node["inputs"]
        for src_id, *_ in inputs:
            src = nodes[src_id]
            if src["name"] in hidden:
                continue
            label = ""
            if shapes is not None:
                label = "x".join(str(d) for d in shapes[output_key(src)][1:])
            if types is not None:
                label += f"({types[output_key(src)].__name__})"
            dot.edge(tail_name=node["name"], head_name=src["name"], dir="back",
                     arrowtail="open", label=label)
    return dot
