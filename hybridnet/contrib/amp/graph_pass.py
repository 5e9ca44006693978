"""AMP's graph conversion: a float32 graph in, the same graph with casts out.

Behaviour of MXNet 1.9.1's ``ReducePrecision`` pass (``convert_symbol``), written over our IR.
Nodes are visited in topological order; each output entry is tracked as known float32, known
low precision (float16/bfloat16) or unknown:

* float32 operators (and excluded names): inputs not known float32 get ``amp_cast`` to float32,
  except graph variables, assumed float32 already.
* low-precision operators: inputs get ``amp_cast`` to the target, except auxiliary states,
  inputs the operator keeps in float32 (BatchNorm's parameters for bfloat16) and, with
  ``cast_optional_params``, parameters read only by such slots (marked ``__dtype__`` instead).
* widest-type operators: if every input's type is known, ``amp_cast`` to float32 when any is
  float32 (else to the target); otherwise one ``amp_multicast`` over the inputs.
* conditional float32 operators whose attribute matches: as float32 operators, auxiliary
  states left alone.
* anything else is copied; operators that keep their input's type (MXNet's "either precision"
  list) pass a known type on; an operator on no list whose first input is low precision runs
  in low precision, its parameters marked with that type (as MXNet's type inference makes them).

Parameters (inputs not in ``data_names``) get a ``__dtype__`` attribute: the target's type
flag when marked low precision, else float32's, so the converted graph's types infer from the
data types alone. Outputs not known to be float32 get a final ``amp_cast`` to float32. One cast node per entry
and target is shared by all its consumers; names follow MXNet
(``<node>_<output>_amp_cast_<dtype>``, ``<node>_amp_multicast``).
"""
from __future__ import annotations

from typing import Any, Sequence

from ...base import dtype_flag
from ...ir.graph import Graph, Node
from ...ops import registry as _reg

__all__ = ["reduce_precision"]


def _suffix(entry: tuple) -> str:
    """MXNet's cast-name suffix: '_<output name>' for its CamelCase (legacy) operators, which
    name their outputs, '_<index>' for the others, '' for variables."""
    node, idx = entry
    if node.op is None:
        return ""
    if node.op.name[:1].isupper():
        return "_" + node.op.output_names(node.attrs)[idx]
    return f"_{idx}"


def reduce_precision(graph: Graph, target: str, lp_ops: Sequence[str], fp32_ops: Sequence[str],
                     conditional: Sequence[tuple], widest_ops: Sequence[str],
                     excluded: Sequence[str], data_names: Sequence[str],
                     cast_optional_params: bool) -> list:
    """Output entries of ``graph`` with AMP casts inserted (see the module docstring)."""
    amp_cast, amp_multicast = _reg.get("amp_cast"), _reg.get("amp_multicast")
    lp_set, fp32_set, widest_set = set(lp_ops), set(fp32_ops), set(widest_ops)
    excluded_set, data_set = set(excluded), set(data_names)
    cond = {}
    for name, key, values in conditional:
        cond.setdefault(name, []).append((key, [str(v) for v in values]))
    from .amp import list_lp16_fp32_ops, list_lp16_use_fp32_params
    neutral = set(list_lp16_fp32_ops(target)) | set(cond)
    keep_fp32 = list_lp16_use_fp32_params(target) or {}

    users: dict = {}
    for node in graph.nodes:
        for slot, (src, _) in enumerate(node.inputs):
            users.setdefault(id(src), []).append((node, slot))

    def lp_slot(node: Node, slot: int) -> bool:
        """True if ``node`` reads input ``slot`` in low precision without a cast."""
        if node.op is None or node.name in excluded_set or node.op.name not in lp_set:
            return False
        return slot not in node.aux_slots() and not _keeps_fp32(node, slot)

    def _keeps_fp32(node: Node, slot: int) -> bool:
        names = keep_fp32.get(node.op.name)
        return bool(names) and slot < len(names) and bool(names[slot])

    new_of: dict = {}
    fp32_map: dict = {}   # (id(node), idx) -> new entry known float32
    lp_map: dict = {}     # (id(node), idx) -> new entry known low precision

    def mirror(entry: tuple) -> tuple:
        return (new_of[id(entry[0])], entry[1])

    def cast(entry: tuple, dtype: str) -> tuple:
        table = fp32_map if dtype == "float32" else lp_map
        key = (id(entry[0]), entry[1])
        if key not in table:
            name = f"{entry[0].name}{_suffix(entry)}_amp_cast_{dtype}"
            table[key] = (Node(amp_cast, name, {"dtype": dtype}, [mirror(entry)]), 0)
        return table[key]

    def mark_outputs(node: Node, new: Node, table: dict) -> None:
        for k in range(node.num_outputs()):
            table[(id(node), k)] = (new, k)

    for node in graph.nodes:
        if node.op is None:
            attrs = dict(node.attrs)
            readers = users.get(id(node), [])
            lp_only = (cast_optional_params and node.name not in data_set and readers
                       and all(lp_slot(n, s) for n, s in readers))
            if lp_only:
                attrs["__dtype__"] = str(dtype_flag(target))
            elif node.name not in data_set:  # parameters stay float32 (typed, as MXNet marks them)
                attrs.setdefault("__dtype__", "0")
            new = Node(None, node.name, attrs)
            new_of[id(node)] = new
            if lp_only:
                lp_map[(id(node), 0)] = (new, 0)
            continue
        opname = node.op.name
        aux = set(node.aux_slots())
        inputs: list = []
        if opname in fp32_set or node.name in excluded_set:
            for e in node.inputs:
                key = (id(e[0]), e[1])
                inputs.append(fp32_map[key] if key in fp32_map else
                              mirror(e) if e[0].op is None else cast(e, "float32"))
            table = fp32_map
        elif opname in lp_set:
            for slot, e in enumerate(node.inputs):
                key = (id(e[0]), e[1])
                if key in lp_map:
                    inputs.append(lp_map[key])
                elif slot in aux or _keeps_fp32(node, slot):
                    inputs.append(mirror(e))
                else:
                    inputs.append(cast(e, target))
            table = lp_map
        elif opname in widest_set:
            keys = [(id(e[0]), e[1]) for e in node.inputs]
            if all(k in lp_map or k in fp32_map for k in keys):
                dtype = "float32" if any(k in fp32_map for k in keys) else target
                known = fp32_map if dtype == "float32" else lp_map
                inputs = [known[k] if k in known else cast(e, dtype) for k, e in zip(keys, node.inputs)]
                table = known
            else:
                first = node.inputs[0]
                multi = Node(amp_multicast, f"{first[0].name}{_suffix(first)}_amp_multicast",
                             {"num_outputs": len(node.inputs)}, [mirror(e) for e in node.inputs])
                inputs = [(multi, k) for k in range(len(node.inputs))]
                table = None
        elif opname in cond and _condition_holds(node, cond[opname]):
            for slot, e in enumerate(node.inputs):
                key = (id(e[0]), e[1])
                inputs.append(fp32_map[key] if key in fp32_map else
                              mirror(e) if slot in aux else cast(e, "float32"))
            table = fp32_map
        else:
            inputs = [mirror(e) for e in node.inputs]
            table = None
            first = (id(node.inputs[0][0]), node.inputs[0][1]) if node.inputs else None
            if first is not None and opname in neutral:
                table = lp_map if first in lp_map else fp32_map if first in fp32_map else None
            elif first in lp_map and opname != "amp_cast":
                # an operator on no list reading low-precision data runs in low precision: its
                # parameters take that type (MXNet infers them so; convert_model casts them)
                table = lp_map
                for slot, (src, _) in enumerate(node.inputs):
                    if src.op is None and src.name not in data_set and slot not in aux:
                        new_of[id(src)].attrs["__dtype__"] = str(dtype_flag(target))
            elif opname == "amp_cast":
                table = fp32_map if node.attrs.get("dtype") == "float32" else \
                    lp_map if node.attrs.get("dtype") == target else None
        new = Node(node.op, node.name, node.attrs, inputs)
        new_of[id(node)] = new
        if table is not None:
            mark_outputs(node, new, table)

    outputs = []
    for e in graph.outputs:
        key = (id(e[0]), e[1])
        outputs.append(fp32_map[key] if key in fp32_map else cast(e, "float32"))
    return outputs


def _condition_holds(node: Node, rules: list) -> bool:
    for key, values in rules:
        if key in node.attrs and _attr_text(node.attrs[key]) in values:
            return True
    return False


def _attr_text(value: Any) -> str:
    from ...ops.attrs import format_value
    return value if isinstance(value, str) else format_value(value)
