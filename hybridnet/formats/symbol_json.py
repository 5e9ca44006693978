"""MXNet 1.9.1 ``-symbol.json`` <-> the graph IR (spec section B).

``graph_to_json`` writes the exact bytes MXNet 1.9.1 writes for the same graph (layout of B.3,
nodes in DFS post-order, ``node_row_ptr`` from each operator's total output count, entry
versions, ``"mxnet_version": ["int", 10901]``). ``json_to_graph`` reads any file MXNet 1.9.1
reads (``attrs``/``attr``/``param`` maps, two-element entries, the legacy upgrades selected by
``mxnet_version``) and rejects everything MXNet rejects with an ``MXNetError`` naming the node.

Inside the IR operator attributes are typed Python values (parsed by the operator's
``OpDef.parse_attrs``); hidden ``__x__`` keys and all variable attributes stay strings.
Control-flow nodes (``_foreach``, ``_while_loop``, ``_cond``) keep their ``subgraphs``, each read
as a graph of its own (nested at most ``MAX_SUBGRAPH_DEPTH`` deep). Not represented in the IR:
``control_deps`` (validated, then dropped: they carry no data).

A node may have at most ``max_node_outputs()`` outputs (``HYBRIDNET_MAX_NODE_OUTPUTS``, default
16384): each output costs code and memory from the first forward on, so a 300-byte file asking
for a million (``SliceChannel num_outputs=1000000``) is refused at load, not after minutes of
code generation.
"""
from __future__ import annotations

import functools
import json
import os
import warnings
from typing import Any, Optional, Union

from ..base import MXNetError, NotGiven
from ..ir.graph import MAX_SUBGRAPH_DEPTH, Graph, GraphError, Node, collector_paused
from ..ops import registry as _registry
from ..ops.attrs import format_value
from ..ops.registry import OpDef

__all__ = ["graph_to_json", "json_to_graph", "check_param_shapes", "MXNET_VERSION"]

MXNET_VERSION = 10901          # 1.9.1 as major*10000 + minor*100 + patch
_LEGACY_VERSION = 800          # files without mxnet_version are taken to be 0.8.0

_NODE_KEYS = frozenset(("op", "name", "inputs", "attrs", "attr", "param", "control_deps",
                        "subgraphs", "backward_source_id"))
_REQUIRED_NODE_KEYS = frozenset(("op", "name", "inputs"))
_TOP_KEYS = frozenset(("nodes", "arg_nodes", "node_row_ptr", "heads", "attrs"))
_HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")
_AUX_INIT = {"moving_mean": '["zero", {}]', "moving_var": '["one", {}]'}


# ----------------------------------------------------------------------------------------
# writing
# ----------------------------------------------------------------------------------------
class _Obj:
    """A JSON object to emit: ordered (key, value) pairs, one item per line when ``multi``."""
    __slots__ = ("items", "multi")

    def __init__(self, items: list, multi: bool):
        self.items, self.multi = items, multi


class _Arr:
    __slots__ = ("items", "multi")

    def __init__(self, items: list, multi: bool):
        self.items, self.multi = items, multi


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _string(s: str) -> str:
    # MXNet (dmlc JSONWriter) escapes only these five characters and writes the rest raw.
    if any(c in s for c in _ESCAPES):
        s = "".join(_ESCAPES.get(c, c) for c in s)
    return f'"{s}"'


def _emit(v: Any, depth: int, out: list) -> None:
    """dmlc-style layout: ``", "`` then newline + 2*depth spaces between multi-line items."""
    if isinstance(v, str):
        out.append(_string(v))
    elif isinstance(v, bool):
        out.append("true" if v else "false")
    elif isinstance(v, int):
        out.append(str(v))
    elif isinstance(v, (_Obj, _Arr)):
        is_obj = isinstance(v, _Obj)
        out.append("{" if is_obj else "[")
        sep = "\n" + "  " * depth
        for i, item in enumerate(v.items):
            if i:
                out.append(", ")
            if v.multi:
                out.append(sep)
            if is_obj:
                key, item = item
                out.append(_string(key) + ": ")
            _emit(item, depth + 1, out)
        if v.multi and v.items:
            out.append("\n" + "  " * (depth - 1))
        out.append("}" if is_obj else "]")
    else:  # pragma: no cover - internal misuse
        raise TypeError(f"cannot emit {type(v).__name__}")


def _int_array(values: list) -> _Arr:
    return _Arr(values, len(values) > 10)


def _attr_map(attrs: dict) -> _Obj:
    items = []
    for k in sorted(attrs):  # code point order == UTF-8 byte order
        v = attrs[k]
        if v is NotGiven:
            continue
        items.append((k, format_value(v)))
    return _Obj(items, len(items) > 1)


def graph_to_json(graph: Graph, *, is_np_shape: bool = False) -> str:
    """MXNet 1.9.1's ``Symbol.tojson()`` text for ``graph`` (byte for byte, spec B.3).

    ``is_np_shape=True`` adds the ``is_np_shape`` graph attribute MXNet writes in NumPy mode.
    Variadic operators get ``num_args`` (= number of inputs) when the node lacks it, as MXNet's
    front end always records it. Control-flow nodes carry their subgraphs under ``subgraphs``,
    each written as a graph without the top-level ``attrs``, as MXNet writes them.
    """
    gattrs = [("mxnet_version", _Arr(["int", MXNET_VERSION], False))]
    if is_np_shape:
        gattrs.insert(0, ("is_np_shape", _Arr(["int", 1], False)))
    out: list = []
    _emit(_graph_obj(graph, gattrs), 1, out)
    return "".join(out)


def _graph_obj(graph: Graph, gattrs: Optional[list]) -> _Obj:
    nodes = graph.nodes
    index = {id(n): i for i, n in enumerate(nodes)}
    mutations: dict = {}   # id(variable) -> times mutated so far (NNVM's variable version)
    node_objs = []
    row_ptr = [0]
    for n in nodes:
        entries = []
        aux = set(n.aux_slots())
        for slot, (src, out_idx) in enumerate(n.inputs):
            version = 0
            if src.op is None:
                version = mutations.get(id(src), 0)
                if slot in aux:
                    version += 1
                    mutations[id(src)] = version
            entries.append(_Arr([index[id(src)], int(out_idx), version], False))
        items: list = [("op", n.opname), ("name", n.name)]
        attrs = n.attrs
        if n.op is not None and n.op.variadic and "num_args" not in attrs:
            attrs = dict(attrs, num_args=len(n.inputs) + n.op.num_subgraphs)
        amap = _attr_map(attrs)
        if amap.items:
            items.append(("attrs", amap))
        items.append(("inputs", _Arr(entries, len(entries) > 10)))
        if n.subgraphs:
            items.append(("subgraphs", _Arr([_graph_obj(g, None) for g in n.subgraphs], True)))
        node_objs.append(_Obj(items, True))
        row_ptr.append(row_ptr[-1] + (1 if n.op is None else n.op.total_outputs(n.attrs)))
    heads = [_Arr([index[id(n)], int(k), 0], False) for n, k in graph.outputs]
    top = [
        ("nodes", _Arr(node_objs, True)),
        ("arg_nodes", _int_array([i for i, n in enumerate(nodes) if n.op is None])),
        ("node_row_ptr", _int_array(row_ptr)),
        ("heads", _Arr(heads, len(heads) > 10)),
    ]
    if gattrs is not None:
        top.append(("attrs", _Obj(gattrs, len(gattrs) > 1)))
    return _Obj(top, True)


# ----------------------------------------------------------------------------------------
# reading
# ----------------------------------------------------------------------------------------
def _pairs_last_wins(pairs: list) -> dict:
    """JSON object hook: duplicate keys keep the last value *and* the last position."""
    d: dict = dict(pairs)
    if len(d) == len(pairs):  # no duplicate key (the usual case): positions are those of the text
        return d
    d = {}
    for k, v in pairs:
        d.pop(k, None)
        d[k] = v
    return d


class _Rec:
    """A node while loading: raw strings, resolved op, inputs as (record, index), subgraphs."""
    __slots__ = ("i", "op", "name", "sattrs", "inputs", "attrs", "subgraphs")

    def __init__(self, i: int, op: Optional[OpDef], name: str, sattrs: dict, inputs: list,
                 subgraphs: tuple = ()):
        self.i, self.op, self.name, self.sattrs, self.inputs = i, op, name, sattrs, inputs
        self.attrs: dict = {}
        self.subgraphs = subgraphs

    def where(self) -> str:
        return f"node {self.i} ({self.name!r})" if self.i >= 0 else f"node {self.name!r}"


def _err(msg: str) -> MXNetError:
    return MXNetError(f"symbol JSON: {msg}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _entry(v: Any, what: str) -> tuple:
    """``[node_id, output_index]`` or ``[node_id, output_index, version]`` -> a 3-tuple."""
    # the usual case, decided with few operations (``type(x) is int``: JSON gives exact ints)
    if type(v) is list and len(v) == 3:
        a, b, c = v
        if type(a) is int and type(b) is int and type(c) is int and a >= 0 and b >= 0 and c >= 0:
            return (a, b, c)
    if not isinstance(v, list) or len(v) not in (2, 3) or not all(_is_int(x) for x in v):
        raise _err(f"{what}: invalid entry {v!r}; expected [node_id, output_index, version] "
                   f"with non-negative integers")
    if any(x < 0 for x in v):
        raise _err(f"{what}: invalid entry {v!r}; node ids, output indices and versions are non-negative")
    return (v[0], v[1], v[2] if len(v) == 3 else 0)


_STR_ONLY = frozenset((str,))


def _string_map(v: Any, what: str) -> dict:
    if type(v) is dict and set(map(type, v.values())) <= _STR_ONLY:  # the usual case, fast
        return dict(v)
    if not isinstance(v, dict):
        raise _err(f"{what}: expected an object of string attributes, got {type(v).__name__}")
    for k, s in v.items():
        if not isinstance(s, str):
            raise _err(f"{what}: attribute {k!r} has the non-string value {s!r}; MXNet stores "
                       f"every attribute value as a string (write \"{json.dumps(s)}\" in quotes)")
    return dict(v)


def _version(top: dict) -> int:
    gattrs = top.get("attrs", {})
    if not isinstance(gattrs, dict):
        raise _err(f"top-level 'attrs' must be an object, got {type(gattrs).__name__}")
    for k, v in gattrs.items():
        if not (isinstance(v, list) and len(v) == 2 and isinstance(v[0], str)):
            raise _err(f"graph attribute {k!r} must be a [type, value] pair, got {v!r}")
    if "mxnet_version" not in gattrs:
        return _LEGACY_VERSION
    tag, value = gattrs["mxnet_version"]
    if tag != "int" or not _is_int(value):
        raise _err(f"graph attribute mxnet_version must be [\"int\", <number>], got {gattrs['mxnet_version']!r}")
    return value


def _node_label(i: int, name: Any) -> str:
    """How an error names node ``i`` (built only when there is an error to report)."""
    return f"node {i}" + (f" ({name!r})" if isinstance(name, str) else "")


def _parse_node(i: int, raw: Any, recs: list, total: int, version: int, depth: int) -> _Rec:
    if not isinstance(raw, dict):
        raise _err(f"node {i} must be an object, got {type(raw).__name__}")
    name = raw.get("name")
    if not raw.keys() <= _NODE_KEYS:
        for k in raw:
            if k not in _NODE_KEYS:
                raise _err(f"{_node_label(i, name)}: unknown key {k!r}; a node has only {sorted(_NODE_KEYS)}")
    if not raw.keys() >= _REQUIRED_NODE_KEYS:
        for k in ("op", "name", "inputs"):
            if k not in raw:
                raise _err(f"{_node_label(i, name)}: required key {k!r} is missing")
    if not isinstance(name, str):
        raise _err(f"{_node_label(i, name)}: 'name' must be a string, got {name!r}")
    opname = raw["op"]
    if not isinstance(opname, str):
        raise _err(f"{_node_label(i, name)}: 'op' must be a string, got {opname!r}")
    op: Optional[OpDef] = None
    if opname != "null":
        try:
            op = _registry.get(opname)
        except MXNetError as e:
            raise _err(f"{_node_label(i, name)}: failed loading op {opname!r}: {e} "
                       f"(MXNet: 'Failed loading Op {name} of type {opname}')") from None
    # 'attrs' and 'attr' fill the same map; the later one in the text replaces the earlier one.
    sattrs: dict = {}
    if "attr" not in raw and type(v := raw.get("attrs")) is dict and set(map(type, v.values())) <= _STR_ONLY:
        sattrs = v  # the usual case, fast (the parsed object is this node's alone)
    elif "attrs" in raw or "attr" in raw:
        for k, v in raw.items():
            if k in ("attrs", "attr"):
                sattrs = _string_map(v, f"{_node_label(i, name)} '{k}'")
    if "param" in raw:
        for k, v in _string_map(raw["param"], f"{_node_label(i, name)} 'param'").items():
            sattrs.setdefault(k, v)
    inputs_raw = raw["inputs"]
    if not isinstance(inputs_raw, list):
        raise _err(f"{_node_label(i, name)}: 'inputs' must be a list of entries, got {type(inputs_raw).__name__}")
    inputs = []
    for k, e in enumerate(inputs_raw):
        # the usual [earlier node, output, version] entry in few operations, else _entry's checks
        if type(e) is list and len(e) == 3 and type(e[0]) is int and type(e[1]) is int \
                and type(e[2]) is int and 0 <= e[0] < i and e[1] >= 0 and e[2] >= 0:
            inputs.append((recs[e[0]], e[1]))
            continue
        nid, idx, _version_ = _entry(e, f"{_node_label(i, name)} input {k}")
        if nid >= i:
            what = "itself" if nid == i else (f"node {nid}, which comes later (nodes must be in "
                                              f"topological order; a cycle or a forward reference)"
                                              if nid < total else
                                              f"node {nid}, which does not exist ({total} nodes)")
            raise _err(f"{_node_label(i, name)}: input {k} refers to {what}")
        inputs.append((recs[nid], idx))
    if op is None and inputs:
        raise _err(f"{_node_label(i, name)}: a variable (op 'null') cannot have inputs")
    cdeps = raw.get("control_deps", [])
    if not isinstance(cdeps, list) or (cdeps and not all(_is_int(d) and 0 <= d < i for d in cdeps)):
        raise _err(f"{_node_label(i, name)}: 'control_deps' must list ids of earlier nodes, got {cdeps!r}")
    if "subgraphs" not in raw and (op is None or not op.num_subgraphs):  # the usual case
        if "backward_source_id" in raw and not _is_int(raw["backward_source_id"]):
            raise _err(f"{_node_label(i, name)}: 'backward_source_id' must be an integer")
        return _Rec(i, op, name, sattrs, inputs)
    subgraphs = raw.get("subgraphs", [])
    if not isinstance(subgraphs, list):
        raise _err(f"{_node_label(i, name)}: 'subgraphs' must be a list, got {type(subgraphs).__name__}")
    want = 0 if op is None else op.num_subgraphs
    if subgraphs and not want:
        raise _err(f"{_node_label(i, name)}: subgraphs given, but operator {opname!r} takes none (only the control-flow "
                   f"operators _foreach, _while_loop and _cond have subgraphs)")
    if len(subgraphs) != want:
        raise _err(f"{_node_label(i, name)}: operator {opname!r} needs {want} subgraph(s), the node has {len(subgraphs)}")
    if subgraphs and depth >= MAX_SUBGRAPH_DEPTH:
        raise _err(f"{_node_label(i, name)}: subgraphs nested more than {MAX_SUBGRAPH_DEPTH} deep")
    graphs = []
    for k, sub in enumerate(subgraphs):
        try:
            graphs.append(_load_graph(sub, version, depth + 1))
        except MXNetError as e:
            raise _err(f"{_node_label(i, name)} subgraph {k}: {str(e).removeprefix('symbol JSON: ')}") from None
    if "backward_source_id" in raw and not _is_int(raw["backward_source_id"]):
        raise _err(f"{_node_label(i, name)}: 'backward_source_id' must be an integer")
    return _Rec(i, op, name, sattrs, inputs, tuple(graphs))


def _active(rec: _Rec, attrs: dict) -> tuple:
    """``op.active_inputs(attrs)``; a failing operator rule still names the node."""
    assert rec.op is not None
    try:
        return tuple(rec.op.active_inputs(attrs))
    except MXNetError as e:
        raise _err(f"{rec.where()}: {e}") from None
    except Exception as e:
        raise _err(f"{rec.where()}: cannot determine the inputs of {rec.op.name} from attributes "
                   f"{attrs!r}: {type(e).__name__}: {e}") from None


def _n_outputs(rec: _Rec, node: Node) -> int:
    try:
        return node.num_outputs()
    except Exception as e:
        raise _err(f"{rec.where()}: cannot determine the number of outputs of {node.opname} "
                   f"from attributes {node.attrs!r}: {type(e).__name__}: {e}") from None


MAX_NODE_OUTPUTS_ENV = "HYBRIDNET_MAX_NODE_OUTPUTS"
_DEFAULT_MAX_NODE_OUTPUTS = 16384


def max_node_outputs() -> int:
    """The most outputs one loaded node may have (``HYBRIDNET_MAX_NODE_OUTPUTS``)."""
    raw = os.environ.get(MAX_NODE_OUTPUTS_ENV)
    if raw is None:
        return _DEFAULT_MAX_NODE_OUTPUTS
    try:
        return int(raw)
    except ValueError:
        raise MXNetError(f"environment variable {MAX_NODE_OUTPUTS_ENV}={raw!r} is not an integer") from None


def _check_output_count(rec: _Rec, node: Node, bound: int) -> int:
    """``node``'s number of outputs, refused above ``bound`` (``max_node_outputs``)."""
    n = _n_outputs(rec, node)
    if n > bound:
        raise _err(f"{rec.where()}: {node.opname} has {n} outputs, more than the {bound} a loaded "
                   f"node may have; if the file is trusted, raise the bound with the environment "
                   f"variable {MAX_NODE_OUTPUTS_ENV}")
    return n


def _input_names(rec: _Rec, attrs: dict) -> tuple:
    assert rec.op is not None
    if rec.op.variadic:
        return tuple(f"arg{k}" for k in range(len(rec.inputs)))
    if rec.op.active_inputs_rule is None:  # optional inputs are trailing and may be absent
        return rec.op.inputs[: len(rec.inputs)]
    return _active(rec, attrs)


def _parse_attrs(rec: _Rec, strings: dict) -> dict:
    assert rec.op is not None
    try:
        return rec.op.parse_attrs(strings)
    except MXNetError as e:
        raise _err(f"{rec.where()}: {e}") from None
    except Exception as e:  # a parser bug must still name the node
        raise _err(f"{rec.where()}: cannot parse attributes {strings!r}: {type(e).__name__}: {e}") from None


def _upgrade_hidden_keys(recs: list) -> None:
    """(< 1.9.1) ``lr_mult`` -> ``__lr_mult__``; ``weight_lr_mult`` moves to the weight input."""
    for rec in recs:
        hidden = [(k, v) for k, v in rec.sattrs.items()
                  if any(k == h or (k.endswith(h) and len(k) - len(h) > 1) for h in _HIDDEN_KEYS)]
        if not hidden:
            continue
        for k, _ in hidden:
            del rec.sattrs[k]
        names: tuple = ()
        if rec.op is not None:
            names = _input_names(rec, _parse_attrs(rec, rec.sattrs))
        for k, v in hidden:
            placed = False
            for h in _HIDDEN_KEYS:
                if k == h:
                    rec.sattrs[f"__{h}__"] = v
                    placed = True
                    break
                if k.endswith(h) and len(k) - len(h) > 1:
                    arg = k[:len(k) - len(h) - 1]
                    if rec.op is not None and arg in names:
                        src = rec.inputs[names.index(arg)][0]
                        src.sattrs[f"__{h}__"] = v
                        placed = True
                    break
            if not placed:
                rec.sattrs[k] = v


def _create_missing_aux(recs: list) -> None:
    """(< 0.9.0) graphs from before auxiliary states were inputs: create their variables."""
    for rec in recs:
        op = rec.op
        if op is None or not op.aux or op.variadic:
            continue
        names = _active(rec, rec.attrs)
        missing = names[len(rec.inputs):]
        if missing and all(m in op.aux for m in missing):
            for m in missing:
                var = _Rec(-1, None, f"{rec.name}_{m}", dict(rec.sattrs), [])
                rec.inputs.append((var, 0))


def _set_aux_init(recs: list) -> None:
    """(< 0.9.4) BatchNorm gives its moving mean / var variables their ``__init__``."""
    for rec in recs:
        op = rec.op
        if op is None or not op.aux or op.variadic:
            continue
        names = _active(rec, rec.attrs)
        for slot, (src, _) in enumerate(rec.inputs):
            if slot < len(names) and names[slot] in _AUX_INIT and src.op is None:
                src.sattrs.setdefault("__init__", _AUX_INIT[names[slot]])


def json_to_graph(text: Union[str, bytes, bytearray]) -> Graph:
    """Load MXNet ``-symbol.json`` text into a ``Graph`` (``mx.sym.load_json`` semantics, B.8).

    The returned graph carries the file's graph attributes as ``graph.json_attrs``
    (``{"mxnet_version": 10901, ...}``, values without their type tags).
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise _err(f"the file is not valid UTF-8 ({e.reason} at byte {e.start})") from None
    if not isinstance(text, str):
        raise TypeError(f"json_to_graph expects str or bytes, got {type(text).__name__}")
    with collector_paused():
        return _json_to_graph(text)


def _json_to_graph(text: str) -> Graph:
    try:
        top = json.loads(text, strict=False, object_pairs_hook=_pairs_last_wins)
    except json.JSONDecodeError as e:
        raise _err(f"invalid JSON (truncated or malformed) at line {e.lineno} column {e.colno}: "
                   f"{e.msg}") from None
    except (RecursionError, ValueError) as e:
        raise _err(f"invalid JSON: {e}") from None
    if not isinstance(top, dict):
        raise _err(f"the top level must be an object, got {type(top).__name__}")
    version = _version(top)
    if version > MXNET_VERSION:
        warnings.warn(f"symbol JSON was written by a newer MXNet (version {version} > {MXNET_VERSION}); "
                      f"loading it anyway", stacklevel=3)
    graph = _load_graph(top, version, 0)
    graph.json_attrs = {k: v[1] for k, v in top.get("attrs", {}).items()}  # type: ignore[attr-defined]
    return graph


def _load_graph(top: Any, version: int, depth: int) -> Graph:
    """One graph object (the file's top level, or a node's subgraph) -> a linted Graph."""
    if not isinstance(top, dict):
        raise _err(f"a graph must be an object, got {type(top).__name__}")
    for k in top:
        if k not in _TOP_KEYS:
            raise _err(f"unknown top-level key {k!r}; expected {sorted(_TOP_KEYS)}")
    for k in ("nodes", "arg_nodes", "heads"):
        if k not in top:
            raise _err(f"required top-level key {k!r} is missing")
    if depth:
        _version(top)  # a subgraph's own 'attrs', if any, must still be well formed
    raw_nodes = top["nodes"]
    if not isinstance(raw_nodes, list):
        raise _err(f"'nodes' must be a list, got {type(raw_nodes).__name__}")

    total = len(raw_nodes)
    recs: list = []
    for i, raw in enumerate(raw_nodes):
        recs.append(_parse_node(i, raw, recs, total, version, depth))

    arg_nodes = top["arg_nodes"]
    if not isinstance(arg_nodes, list):
        raise _err(f"'arg_nodes' must be a list of node ids, got {type(arg_nodes).__name__}")
    for a in arg_nodes:
        if not _is_int(a) or not 0 <= a < total:
            raise _err(f"arg_nodes: {a!r} is not a node id (there are {total} nodes)")
        if recs[a].op is not None:
            raise _err(f"arg_nodes: {recs[a].where()} is an operator ({recs[a].op.name}), not a variable")

    # legacy upgrades, in MXNet's order (spec B.8 step 3)
    if version < MXNET_VERSION:
        _upgrade_hidden_keys(recs)
    parsed: dict = {}  # (operator, attribute strings) -> checked attributes: networks repeat them
    for rec in recs:
        if rec.op is not None:
            key = (rec.op, tuple(rec.sattrs.items()))
            attrs = parsed.get(key)
            if attrs is None:
                attrs = _parse_attrs(rec, rec.sattrs)
                try:
                    rec.op.check_attrs(attrs)
                except MXNetError as e:
                    raise _err(f"{rec.where()}: {e}") from None
                parsed[key] = attrs
            # shared by the records of equal attributes (a Node copies its attributes); only the
            # upgrade of files before 0.9.5 below edits them, so those get their own
            rec.attrs = attrs if version >= 905 else dict(attrs)
    if version < 900:
        _create_missing_aux(recs)
    if version < 904:
        _set_aux_init(recs)
    if version < 905:
        for rec in recs:
            if rec.op is not None and rec.op.name in ("argmax", "argmin") and rec.sattrs.get("axis") == "-1":
                rec.attrs.pop("axis", None)

    # build the IR nodes (inputs always point backwards, so one pass suffices)
    made: dict = {}  # id(record) -> (its Node, its number of outputs)
    var_names: dict = {}
    bound = max_node_outputs()
    for rec in recs:
        for src, _ in rec.inputs:
            if src.i < 0 and id(src) not in made:  # a variable created by an upgrade
                made[id(src)] = _make_node(src, made, var_names, bound)
        made[id(rec)] = _make_node(rec, made, var_names, bound)

    heads_raw = top["heads"]
    if not isinstance(heads_raw, list):
        raise _err(f"'heads' must be a list of entries, got {type(heads_raw).__name__}")
    outputs = []
    for k, e in enumerate(heads_raw):
        nid, idx, _ = _entry(e, f"heads[{k}]")
        if nid >= total:
            raise _err(f"heads[{k}] refers to node {nid}, which does not exist ({total} nodes)")
        node, n_out = made[id(recs[nid])]
        if idx >= n_out:
            raise _err(f"heads[{k}] selects output {idx} of {recs[nid].where()}, which has "
                       f"{n_out} output(s)")
        outputs.append((node, idx))
    graph = Graph(outputs)
    try:
        graph.lint()
    except GraphError as e:
        raise _err(str(e)) from None
    return graph


@functools.lru_cache(maxsize=None)
def _input_bounds(op: OpDef) -> tuple:
    """(required, all) input counts of an operator without an ``active_inputs`` rule."""
    return len([k for k in op.inputs if k not in op.optional_inputs]), len(op.inputs)


def _arity_ok(op: OpDef, n: int, attrs: dict) -> bool:
    """``op.arity_ok(n, attrs)`` for a fixed-arity operator, its input counts computed once."""
    if op.active_inputs_rule is None:
        lo, hi = _input_bounds(op)
        return lo <= n <= hi
    return op.arity_ok(n, attrs)


def _make_node(rec: _Rec, made: dict, var_names: dict, bound: int) -> tuple:
    """(the Node of ``rec``, its number of outputs); ``made`` holds those of earlier records."""
    if rec.op is None:
        other = var_names.get(rec.name)
        if other is not None:
            raise _err(f"{rec.where()}: duplicate variable name {rec.name!r} (also {other.where()}); "
                       f"variable names must be unique because parameters are bound by name")
        var_names[rec.name] = rec
        return Node(None, rec.name, dict(rec.sattrs), ()), 1
    op = rec.op
    if not op.variadic:
        if not _arity_ok(op, len(rec.inputs), rec.attrs):
            expected = _active(rec, rec.attrs)
            raise _err(f"{rec.where()}: operator {op.name} takes {len(expected)} input(s) "
                       f"({', '.join(expected)}) with these attributes, but the node has {len(rec.inputs)}")
    else:
        n_args = rec.attrs.get("num_args")
        if n_args is not None and n_args != len(rec.inputs) + op.num_subgraphs:
            counted = f" and {op.num_subgraphs} subgraph(s)" if op.num_subgraphs else ""
            raise _err(f"{rec.where()}: num_args is {n_args} but the node has {len(rec.inputs)} inputs{counted}")
    inputs = []
    for k, (src, idx) in enumerate(rec.inputs):
        node, n_out = made[id(src)]
        if idx >= n_out:
            raise _err(f"{rec.where()}: input {k} selects output {idx} of {src.where()}, which has "
                       f"{n_out} output(s)")
        inputs.append((node, idx))
    node = Node(op, rec.name, rec.attrs, inputs, rec.subgraphs)
    return node, _check_output_count(rec, node, bound)


# ----------------------------------------------------------------------------------------
# loaded parameters vs the graph (SymbolBlock.imports)
# ----------------------------------------------------------------------------------------
_PROBES = ((1009, 1013, 1019, 1021, 1031, 1033), (2003, 2011, 2017, 2027, 2029, 2039))


def check_param_shapes(graph: Graph, shapes: dict, where: str = "graph") -> None:
    """Raise MXNetError when a loaded parameter cannot be the input of the operator it feeds.

    The data shape is unknown at load time, so each operator's parameter-shape rule runs with
    two probe data shapes of every rank from 1 to 6: a parameter dimension that comes out the
    same for both probes depends only on the attributes (``num_hidden``, ``kernel``,
    ``num_filter``...) and must equal the loaded one, and so must the parameter's rank. The
    parameter is refused only when no data rank fits."""
    for node in graph.nodes:
        op = node.op
        if op is None or op.param_shapes is None or len(node.inputs) < 2:
            continue
        loaded = [shapes.get(src.name) if src.op is None else None for src, _ in node.inputs]
        if all(s is None for s in loaded[1:]):
            continue
        best: Optional[list] = None
        for rank in range(1, 7):
            try:
                a, b = (list(op.param_shapes(node.kernel_attrs(), [p[:rank]] + [None] * (len(loaded) - 1)))
                        for p in _PROBES)
            except Exception:  # this data rank is not valid for the operator
                continue
            problems = _param_mismatches(node, loaded, a, b)
            if not problems:
                best = None
                break
            if best is None or _fit(problems) < _fit(best):
                best = problems
        if best:
            raise MXNetError(f"{where}: {best[0]}")


def _fit(problems: list) -> tuple:
    """Ranks the data ranks tried: fewest mismatches, then the least specific requirement (the
    likeliest data rank; degenerate ranks pin dimensions that are really data-dependent)."""
    return len(problems), -sum(m.count("?") for m in problems)


def _param_mismatches(node: Node, loaded: list, a: list, b: list) -> list:
    """Messages for the loaded parameters of ``node`` that differ from the probe results."""
    names = node.input_names()
    out = []
    for k in range(1, len(loaded)):
        have = loaded[k]
        if have is None or k >= len(a) or a[k] is None or b[k] is None:
            continue
        need = tuple(x if x == y and x > 0 else None for x, y in zip(a[k], b[k]))
        if len(need) != len(have) or any(n is not None and n != h for n, h in zip(need, have)):
            dims = ", ".join("?" if n is None else str(n) for n in need)
            spelled = f"({dims},)" if len(need) == 1 else f"({dims})"
            label = names[k] if k < len(names) else f"input {k}"
            out.append(f"parameter {node.inputs[k][0].name!r} ({label} of node {node.name!r}, operator "
                       f"{node.op.name}) has shape {tuple(have)}, but the node's attributes need {spelled}")
    return out
