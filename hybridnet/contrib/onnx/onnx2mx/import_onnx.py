"""ONNX graph -> Symbol (MXNet 1.9.1's ``onnx2mx.import_onnx.GraphProto``).

A model file is untrusted input: it is parsed by onnx's protobuf parser only (no
``onnx.load`` path handling, no checker that runs code), then validated before anything is
allocated: the opset of the default domain, every node's domain and operator, every attribute's
type, every initializer's element type, dimensions and byte length (external data only from a
plain file name beside the model, inside its bounds). Problems raise MXNetError naming the file,
the node or tensor and what to do.

Each ONNX node becomes registry operators through ``sym`` (``_op_translations``); constant
inputs (initializers, ``Constant`` nodes and what is folded from them, such as ``Shape``
subgraphs) stay NumPy arrays until a node needs them as a graph input, where they become
variables named after the tensor: their values are ``arg_params`` (``aux_params`` for
BatchNorm's moving statistics), as MXNet does.

Shapes are inferred node by node. A graph input's dim known only at run time (a ``dim_param``)
is a ``Dim``: inference runs with two sets of probe sizes, one pair per named dim, so each
output dim is static, a named Dim, or an unnamed run-time size. ``Shape`` of such a tensor
folds to an object array holding Dims, which the shape arithmetic carries; a Reshape target
then becomes MXNet's 0/-1 codes, and ConstantOfShape or ``x[:t]`` are built from a tensor that
carries the dim.
"""
from __future__ import annotations

import builtins
import os
import re
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ....base import MXNetError
from ....symbol import symbol as _symbol
from ....symbol.symbol import Symbol, sym_invoke
from ._tensors import (MAX_FILE_BYTES, MAX_TENSOR_ELEMENTS, OPSET_RANGE, Dim, DynamicDimError, np_dtype,
                       tensor_to_array)

__all__ = ["GraphProto", "load_model_proto", "OPSET_RANGE", "MAX_TENSOR_ELEMENTS"]

# AttributeProto.type -> field
_ATTR_FIELDS = {1: "f", 2: "i", 3: "s", 4: "t", 6: "floats", 7: "ints", 8: "strings"}
_ATTR_KIND = {1: "float", 2: "int", 3: "string", 4: "tensor", 5: "graph", 6: "floats", 7: "ints",
              8: "strings", 9: "tensors", 10: "graphs", 11: "sparse_tensor", 12: "sparse_tensors",
              13: "type_proto", 14: "type_protos"}


def onnx_module() -> Any:
    """The optional ``onnx`` package, imported only when a model is read."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise ImportError("ONNX import needs the 'onnx' package: pip install onnx") from None
    return onnx


def load_model_proto(model_file: Any) -> tuple:
    """(ModelProto, directory of the file) from a path or bytes, by the protobuf parser only."""
    onnx = onnx_module()
    if isinstance(model_file, (bytes, bytearray)):
        data, where, base = bytes(model_file), "<bytes>", None
    else:
        where = os.fspath(model_file)
        try:
            size = os.path.getsize(where)
        except OSError as e:
            raise MXNetError(f"ONNX import: cannot read {where!r}: {e.strerror}") from None
        if size > MAX_FILE_BYTES:
            raise MXNetError(f"ONNX import: {where!r} is {size} bytes, over the {MAX_FILE_BYTES} read")
        with open(where, "rb") as f:
            data = f.read()
        base = os.path.dirname(os.path.abspath(where))
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as e:  # google.protobuf.message.DecodeError and kin
        raise MXNetError(f"ONNX import: {where!r} is not an ONNX model (protobuf parse failed: {e}); "
                         f"is the file truncated or of another format?") from None
    if not model.HasField("graph"):
        raise MXNetError(f"ONNX import: {where!r} holds no graph (empty, truncated or not an ONNX "
                         f"model)")
    return model, base, where


def model_opset(model: Any, where: str) -> int:
    """The default domain's opset, checked against what the importer reads."""
    versions = [int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        raise MXNetError(f"ONNX import: {where!r} declares no opset of the default ONNX domain")
    v = max(versions)
    lo, hi = OPSET_RANGE
    if not lo <= v <= hi:
        raise MXNetError(f"ONNX import: {where!r} uses opset {v}; hybridnet reads opsets {lo} to {hi} "
                         f"(convert it with onnx.version_converter)")
    return v


# ---- attributes ----------------------------------------------------------------------------
class Attrs:
    """A node's attributes, typed; getters check the ONNX type and name the node on mismatch."""

    def __init__(self, node: "OnnxNode", protos: Sequence) -> None:
        self._node = node
        self._v: dict = {}
        for a in protos:
            kind = int(a.type)
            if kind == 0:  # old files leave type unset: take the one field that is set
                kind = next((k for k, f in _ATTR_FIELDS.items()
                             if (a.HasField(f) if f in ("f", "i", "s", "t") else len(getattr(a, f)))), 0)
            if kind not in _ATTR_FIELDS:
                what = _ATTR_KIND.get(kind, str(kind))
                extra = " (subgraphs: If/Loop/Scan are not supported)" if what.startswith("graph") else ""
                raise node.error(f"attribute {a.name!r} has type {what}, which hybridnet does not "
                                 f"read{extra}")
            val = getattr(a, _ATTR_FIELDS[kind])
            if kind == 3:
                val = val.decode("utf-8", "replace")
            elif kind == 8:
                val = tuple(s.decode("utf-8", "replace") for s in val)
            elif kind in (6, 7):
                val = tuple(val)
            self._v[a.name] = (kind, val)

    def has(self, name: builtins.str) -> bool:
        return name in self._v

    def _get(self, name: builtins.str, kinds: tuple, default: Any) -> Any:
        if name not in self._v:
            return default
        kind, val = self._v[name]
        if kind not in kinds:
            raise self._node.error(f"attribute {name!r} is {_ATTR_KIND[kind]}, expected "
                                   f"{' or '.join(_ATTR_KIND[k] for k in kinds)}")
        return val

    def int(self, name: builtins.str, default: Any = None) -> Any:
        v = self._get(name, (2,), default)
        return int(v) if v is not None else None

    def float(self, name: builtins.str, default: Any = None) -> Any:
        v = self._get(name, (1, 2), default)
        return float(v) if v is not None else None

    def str(self, name: builtins.str, default: Any = None) -> Any:
        return self._get(name, (3,), default)

    def ints(self, name: builtins.str, default: Any = None) -> Any:
        v = self._get(name, (7, 2), default)
        if isinstance(v, int):
            return (v,)
        return tuple(int(i) for i in v) if v is not None else None

    def floats(self, name: builtins.str, default: Any = None) -> Any:
        v = self._get(name, (6, 1), default)
        if isinstance(v, float):
            return (v,)
        return tuple(float(i) for i in v) if v is not None else None

    def strs(self, name: builtins.str, default: Any = None) -> Any:
        return self._get(name, (8,), default)

    def tensor(self, name: builtins.str) -> Any:
        return self._get(name, (4,), None)


class OnnxNode:
    """One ONNX node as the translations see it."""

    def __init__(self, proto: Any, index: int, where: str) -> None:
        self.op_type = str(proto.op_type)
        self.name = str(proto.name).strip() or f"{self.op_type.lower()}{index}"
        self.where = where
        self.inputs = [str(i) for i in proto.input]
        self.outputs = [str(o) for o in proto.output]
        self.attrs = Attrs(self, proto.attribute)

    def error(self, what: str) -> MXNetError:
        return MXNetError(f"ONNX import: {self.where}: node {self.name!r} ({self.op_type}): {what}")

    def input(self, i: int) -> str:
        """Input ``i``'s tensor name, '' when absent (optional inputs may be left off)."""
        return self.inputs[i] if i < len(self.inputs) else ""


# ---- tensors ---------------------------------------------------------------------------------
def _value_info_shape(vi: Any) -> tuple:
    """(shape, elem_type) of a graph input: a dim known only at run time is a ``Dim`` named by
    its ``dim_param`` (dims sharing one are equal), else by ``input:axis``."""
    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type"):
        return None, 0
    if not tt.HasField("shape"):
        return None, int(tt.elem_type)
    dims = tuple(int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0
                 else Dim(d.dim_param or f"{vi.name}:{k}") for k, d in enumerate(tt.shape.dim))
    return dims, int(tt.elem_type)


_NAME_RE = re.compile(r"[^\w.\-/:]")


class GraphProto:
    """Translates an ONNX graph to a Symbol and its parameters (MXNet's GraphProto)."""

    def __init__(self) -> None:
        self._nodes: dict = {}        # tensor name -> Symbol (single output)
        self._params: dict = {}       # tensor name -> np.ndarray (constant)
        self._param_vars: dict = {}   # variable name -> np.ndarray (values of created variables)
        self._const_var: dict = {}    # tensor name -> variable Symbol made for it
        self._names: set = set()
        self._shape_cache: dict = {}
        self._var_shapes: dict = {}   # data input name -> static shape or None
        self._var_dtypes: dict = {}
        self._initializers: set = set()
        self.arg_dict: dict = {}
        self.aux_dict: dict = {}
        self.model_metadata: dict = {}
        self.opset_version = 0
        self.where = "<graph>"
        self.base: Optional[str] = None

    # -- helpers for translations
    def unique(self, hint: str) -> str:
        hint = _NAME_RE.sub("_", hint) or "node"
        name, i = hint, 1
        while name in self._names:
            name = f"{hint}_{i}"
            i += 1
        self._names.add(name)
        return name

    def op(self, opname: str, inputs: Sequence[Symbol], name: str, **attrs: Any) -> Symbol:
        """Record registry operator ``opname`` on ``inputs`` as a node named after ``name``."""
        from ....ops import registry
        return sym_invoke(registry.get(opname), list(inputs), attrs, name=self.unique(name))

    def is_const(self, t: str) -> bool:
        return t in self._params

    def const(self, t: str) -> Optional[np.ndarray]:
        return self._params.get(t)

    def param(self, arr: np.ndarray, hint: str, exact: bool = False) -> Symbol:
        """A new variable holding ``arr`` (a parameter of the imported model); ``exact`` keeps
        ``hint`` as the name (a constant tensor's own name, reserved for it)."""
        name = hint if exact else self.unique(hint)
        arr = np.ascontiguousarray(arr)
        self._param_vars[name] = arr
        return _symbol.var(name, shape=arr.shape, dtype=arr.dtype)

    def sym(self, t: str, node: Optional[OnnxNode] = None) -> Symbol:
        """Tensor ``t`` as a Symbol (a constant becomes a variable named after the tensor)."""
        if t in self._nodes:
            return self._nodes[t]
        if t in self._params:
            if self._params[t].dtype == object:
                raise DynamicDimError(f"{t!r} holds sizes known only at run time "
                                      f"({self._params[t].tolist()}) and cannot be a graph input")
            v = self._const_var.get(t)
            if v is None:
                own = t in self._initializers or t not in self._names   # the name is free for it
                v = self.param(self._params[t], t, exact=own and t not in self._param_vars)
                self._names.add(t)
                self._const_var[t] = v
            return v
        raise (node.error(f"input {t!r} is not produced by any earlier node") if node is not None
               else MXNetError(f"ONNX import: {self.where}: tensor {t!r} is undefined"))

    def _var_facts(self, node: Any) -> tuple:
        arr = self._param_vars.get(node.name)
        if arr is not None:
            return arr.shape, arr.dtype
        return self._var_shapes.get(node.name), self._var_dtypes.get(node.name)

    def _infer_node(self, node: Any) -> None:
        """Infer one node's outputs from its inputs' cached facts (a one-node graph, so the
        import stays linear in the graph size). Dims known only at run time are inferred with
        two sets of probe sizes, one pair per named dim: an output dim is static when both runs
        agree, the named dim when it reads that dim's probes, else an unnamed run-time dim."""
        from ....compiler.infer import infer_graph
        from ....ir.graph import Graph, Node
        in_facts = [self._shape_cache.get((id(src), k), (None, None)) for src, k in node.inputs]
        names: dict = {}
        for shp, _ in in_facts:
            for d in shp or ():
                if isinstance(d, Dim) and d.name is not None:
                    names.setdefault(d.name, len(names))
        dynamic = any(isinstance(d, Dim) for shp, _ in in_facts for d in shp or ())
        ins = [(Node(None, f"in{j}"), 0) for j in range(len(in_facts))]
        tmp = Node(node.op, node.name, dict(node.attrs), ins, node.subgraphs)
        n_out = tmp.num_outputs()
        graph = Graph([(tmp, k) for k in range(n_out)])
        dtypes = {f"in{j}": dt for j, (_, dt) in enumerate(in_facts) if dt is not None}

        def run(probe: Callable[[int], int]) -> Optional[tuple]:
            fresh = iter(range(len(names), 10 ** 6))
            shapes = {f"in{j}": tuple(d if isinstance(d, int) else
                                      probe(names[d.name] if d.name is not None else next(fresh))
                                      for d in shp)
                      for j, (shp, _) in enumerate(in_facts) if shp is not None}
            try:
                res = infer_graph(graph, shapes, dtypes)
            except MXNetError:
                return None
            return res.out_shapes.get(id(tmp)) or [], res.out_dtypes.get(id(tmp)) or []

        # large probes first (no size in the model equals them); small ones when a run-time
        # size must stay small (x[:t] of a constant of 32 rows)
        for p1, p2 in ((lambda i: 1009 + 61 * i, lambda i: 2003 + 67 * i),
                       (lambda i: 5 + i, lambda i: 7 + 3 * i)):
            first = run(p1)
            second = run(p2) if dynamic and first is not None else first
            if first is not None and second is not None:
                break
        by_probe = {(p1(i), p2(i)): n for n, i in names.items()}
        for k in range(n_out):
            part, dt = None, None
            if first is not None and second is not None:
                s1 = first[0][k] if k < len(first[0]) else None
                s2 = second[0][k] if k < len(second[0]) else None
                if s1 is not None and s2 is not None and len(s1) == len(s2) and \
                        all(d is not None and d >= 0 for d in tuple(s1) + tuple(s2)):
                    part = tuple(int(a) if a == b else Dim(by_probe.get((int(a), int(b))))
                                 for a, b in zip(s1, s2))
                dts = first[1]
                dt = dts[k] if k < len(dts) else None
            self._shape_cache[(id(node), k)] = (part, np.dtype(dt) if dt else None)

    def _facts(self, t: str) -> tuple:
        if t in self._params:
            a = self._params[t]
            return a.shape, a.dtype
        node, k = self.sym(t)._entries[0]
        return self._entry_facts(node, k)

    def _entry_facts(self, node: Any, k: int) -> tuple:
        if (id(node), k) not in self._shape_cache:
            # the uncached ancestors, inputs first (iterative: graphs can be deep)
            order, stack, seen = [], [(node, False)], set()
            while stack:
                n, done = stack.pop()
                if done:
                    order.append(n)
                    continue
                if id(n) in seen or (id(n), 0) in self._shape_cache:
                    continue
                seen.add(id(n))
                stack.append((n, True))
                stack.extend((src, False) for src, _ in n.inputs)
            for n in order:
                if n.op is None:
                    self._shape_cache[(id(n), 0)] = self._var_facts(n)
                else:
                    self._infer_node(n)
        return self._shape_cache.get((id(node), k), (None, None))

    def shape(self, t: str, node: OnnxNode) -> tuple:
        """The static shape of tensor ``t`` (MXNetError when it is not known at import)."""
        shp = self._facts(t)[0]
        if shp is None or not all(isinstance(d, int) for d in shp):
            raise node.error(f"needs the static shape of {t!r}, which is not known at import (the "
                             f"model has dynamic dimensions); export it with fixed input shapes")
        return tuple(shp)

    def maybe_shape(self, t: str) -> Optional[tuple]:
        """The static shape of ``t``, None unless every dim is known."""
        shp = self._facts(t)[0]
        return None if shp is None or not all(isinstance(d, int) for d in shp) else tuple(shp)

    def partial_shape(self, t: str) -> Optional[tuple]:
        """The shape of ``t`` with None for dims known only at run time (None: rank unknown)."""
        shp = self._facts(t)[0]
        return None if shp is None else tuple(d if isinstance(d, int) else None for d in shp)

    def sym_shape(self, t: str) -> Optional[tuple]:
        """The shape of ``t`` with a ``Dim`` for each dim known only at run time."""
        shp = self._facts(t)[0]
        return None if shp is None else tuple(shp)

    def find_dim(self, d: Any) -> Optional[tuple]:
        """(tensor, axis) of the latest graph tensor (of the last 256) with run-time dim ``d``."""
        if not isinstance(d, Dim) or d.name is None:
            return None
        for t in list(self._nodes)[-256:][::-1]:
            shp = self._facts(t)[0]
            for axis, e in enumerate(shp or ()):
                if isinstance(e, Dim) and e == d:
                    return t, axis
        return None

    def dim_vector(self, d: Any, rank: int, at: int, node: OnnxNode) -> Symbol:
        """Zeros of shape (1, .., d, .., 1) (``d`` at ``at`` of ``rank``), made from a graph tensor
        that has the run-time dim ``d``."""
        found = self.find_dim(d)
        if found is None:
            raise node.error(f"needs a size known only at run time ({d!r}) that no earlier graph "
                             f"tensor carries; export the model with fixed sizes")
        t, axis = found
        y = self.sym(t)
        for a, e in enumerate(self._facts(t)[0] or ()):
            if a != axis:
                y = self.op("slice_axis", [y], f"{node.name}_{d!r}_s{a}", axis=a, begin=0, end=1)
        y = self.op("zeros_like", [y], f"{node.name}_{d!r}_z")
        return self.op("Reshape", [y], f"{node.name}_{d!r}_v", shape=(1,) * at + (-1,) + (1,) * (rank - at - 1))

    def rank(self, t: str, node: OnnxNode) -> int:
        shp = self._facts(t)[0]
        if shp is None:
            raise node.error(f"needs the rank of {t!r}, which is not known at import")
        return len(shp)

    def dtype_of_sym(self, s: Symbol) -> np.dtype:
        """The dtype of a Symbol made during a translation."""
        node, k = s._entries[0]
        dt = self._entry_facts(node, k)[1]
        return np.dtype(dt) if dt is not None else np.dtype(np.float32)

    def dtype(self, t: str) -> np.dtype:
        dt = self._facts(t)[1]
        return np.dtype(dt) if dt is not None else np.dtype(np.float32)

    # -- the translation
    def from_onnx(self, graph: Any, opset_version: int) -> tuple:
        """(sym, arg_params, aux_params) of ``graph`` (MXNet's GraphProto.from_onnx)."""
        from . import _op_translations as tr
        from ....ndarray import array as nd_array
        self.opset_version = int(opset_version)
        self.model_metadata = self.get_graph_metadata(graph)
        nodes = [OnnxNode(p, k, self.where) for k, p in enumerate(graph.node)]
        self._check_operators(nodes, graph.node, tr.CONVERT_MAP)   # before any tensor is read
        for init in graph.initializer:
            if not init.name.strip():
                raise MXNetError(f"ONNX import: {self.where}: an initializer has no name")
            self._params[init.name] = tensor_to_array(init, self.where, self.base)
            self._initializers.add(init.name)
        for v in graph.sparse_initializer:
            raise MXNetError(f"ONNX import: {self.where}: sparse initializer "
                             f"{v.values.name!r} is not supported")
        for i in graph.input:
            if i.name in self._params:
                continue
            if not i.type.HasField("tensor_type"):
                raise MXNetError(f"ONNX import: {self.where}: input {i.name!r} is not a tensor "
                                 f"(sequences, maps and optionals are not supported)")
            shape, elem = _value_info_shape(i)
            dt = np_dtype(elem, f"{self.where}: input {i.name!r}") if elem else np.dtype(np.float32)
            known = shape is not None and all(isinstance(d, int) for d in shape)
            self._names.add(i.name)
            self._nodes[i.name] = _symbol.var(i.name, shape=shape if known else None, dtype=dt)
            self._var_shapes[i.name] = tuple(shape) if shape is not None else None  # None: dynamic
            self._var_dtypes[i.name] = dt
        self._names.update(self._params)
        for n in nodes:
            self._names.add(n.name)
        for n in nodes:
            handler = tr.CONVERT_MAP[n.op_type]
            for t in n.inputs:
                if t and t not in self._nodes and t not in self._params:
                    raise n.error(f"input {t!r} is not produced by any earlier node (the graph is "
                                  f"not in topological order, or truncated)")
            try:
                outs = handler(self, n)
            except DynamicDimError as e:
                raise n.error(f"{e}; hybridnet folds shape arithmetic at import, so export the model "
                              f"with fixed sizes for these dims") from None
            except MXNetError:
                raise
            except (ValueError, TypeError, IndexError, KeyError, AttributeError, ArithmeticError, RuntimeError) as e:
                # inconsistent attributes or shapes that a check above did not name
                raise n.error(f"cannot be imported ({type(e).__name__}: {e}); the node's attributes "
                              f"or input shapes are inconsistent") from None
            if len(outs) < len([o for o in n.outputs if o]):
                raise n.error(f"produces {len(n.outputs)} outputs; hybridnet's import gives only "
                              f"the first {len(outs)}")
            for t, v in zip(n.outputs, outs):
                if not t:
                    continue
                if v is None:
                    raise n.error(f"output {t!r} is not supported by hybridnet's import")
                if not isinstance(v, Symbol):
                    self._params[t] = np.asarray(v)
                    self._nodes.pop(t, None)
                else:
                    self._nodes[t] = v
        outs = []
        for o in graph.output:
            if o.name not in self._nodes and o.name not in self._params:
                raise MXNetError(f"ONNX import: {self.where}: graph output {o.name!r} is not produced "
                                 f"by any node (truncated file?)")
            outs.append(self.sym(o.name))
        if not outs:
            raise MXNetError(f"ONNX import: {self.where}: the graph has no outputs")
        out = _symbol.Group(outs) if len(outs) > 1 else outs[0]
        args, auxs = set(out.list_arguments()), set(out.list_auxiliary_states())
        for name, arr in self._param_vars.items():
            if name in auxs:
                self.aux_dict[name] = nd_array(arr, dtype=arr.dtype)
            elif name in args:
                self.arg_dict[name] = nd_array(arr, dtype=arr.dtype)
        return out, self.arg_dict, self.aux_dict

    @staticmethod
    def _check_operators(nodes: list, protos: Any, convert_map: dict) -> None:
        """Every node's domain and operator is one the import reads; the first that is not is
        named (with how many other nodes are unsupported)."""
        bad = []
        for n, p in zip(nodes, protos):
            if p.domain not in ("", "ai.onnx"):
                bad.append(n.error(f"operator domain {p.domain!r} is not supported (hybridnet reads "
                                   f"the default ONNX domain)"))
            elif n.op_type not in convert_map:
                bad.append(n)
        if not bad:
            return
        first = bad[0]
        if isinstance(first, MXNetError):
            raise first
        others = sorted({n.op_type for n in bad[1:] if isinstance(n, OnnxNode)} - {first.op_type})
        also = f" (also unsupported here: {', '.join(others)})" if others else ""
        raise first.error(f"operator {first.op_type} is not supported by hybridnet's ONNX import{also}; "
                          f"supported: {', '.join(sorted(convert_map))}")

    def get_graph_metadata(self, graph: Any) -> dict:
        """Input and output names and shapes (MXNet's get_graph_metadata: dynamic dims are 0;
        inputs also carry their ONNX element type)."""
        params = {t.name for t in graph.initializer}
        input_data = []
        for gi in graph.input:
            if gi.name in params:
                continue
            shape = tuple(int(d.dim_value) for d in gi.type.tensor_type.shape.dim)
            input_data.append((gi.name, shape, int(gi.type.tensor_type.elem_type)))
        output_data = []
        for go in graph.output:
            shape = tuple(int(d.dim_value) for d in go.type.tensor_type.shape.dim)
            output_data.append((go.name, shape))
        return {"input_tensor_data": input_data, "output_tensor_data": output_data}

    def graph_to_gluon(self, graph: Any, ctx: Any, opset_version: int) -> Any:
        """A gluon SymbolBlock of ``graph`` with its parameters loaded on ``ctx``."""
        from ....gluon.block import SymbolBlock
        sym, arg_params, aux_params = self.from_onnx(graph, opset_version)
        metadata = self.get_graph_metadata(graph)
        data_names = [t[0] for t in metadata["input_tensor_data"]]
        graph_vars = {v.name: v for v in sym._graph().variables()}
        data_inputs = []
        for n in data_names:
            if n in graph_vars:
                data_inputs.append(Symbol([(graph_vars[n], 0)]))
            else:  # an input the outputs do not use
                data_inputs.append(_symbol.var(n))
        net = SymbolBlock(outputs=sym, inputs=data_inputs)
        net_params = net.collect_params()
        for name, arr in list(arg_params.items()) + list(aux_params.items()):
            if name in net_params:
                p = net_params[name]
                p.shape = arr.shape
                p._load_init(arr, ctx=ctx, cast_dtype=True, dtype_source="saved")
        return net
