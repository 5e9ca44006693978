"""Every registered operator has an ONNX lowering or a reasoned place in NOT_EXPORTABLE, and the
lowering table is keyed by the registry's OpDefs."""
from __future__ import annotations

import pytest

from hybridnet.formats import onnx as fo
from hybridnet.ops import registry


def test_every_operator_is_lowered_or_listed_with_a_reason():
    undecided = sorted(op.name for op in registry.all_ops()
                       if fo.lowering_for(op) is None and op.name not in fo.NOT_EXPORTABLE)
    assert not undecided, (f"operators with neither an ONNX rule (formats/onnx.py) nor an entry in "
                           f"formats/_onnx_unsupported.py: {undecided}")


def test_not_exportable_list_is_current():
    for name, reason in fo.NOT_EXPORTABLE.items():
        op = registry.find(name)
        assert op is not None, f"{name} is listed as not exportable but is not a registered operator"
        assert op.name == name, f"{name} is an alias; list the canonical name {op.name}"
        assert fo.lowering_for(op) is None, f"{name} has an ONNX rule now; remove it from the list"
        assert len(reason) > 20


def test_rule_table_is_keyed_by_opdef():
    assert fo.RULES and all(registry.get(op.name) is op for op in fo.RULES)
    assert fo.lowering_for(registry.get("Concat")) is fo.lowering_for(registry.get("concat"))
    with pytest.raises(ValueError, match="canonical"):
        fo.rule("concat")(lambda ctx: [])          # an alias: the table takes canonical names
    with pytest.raises(ValueError, match="twice"):
        fo.rule("Concat")(lambda ctx: [])
    with pytest.raises(Exception, match="unknown operator"):
        fo.rule("NoSuchOperator")(lambda ctx: [])


def test_export_error_gives_the_reason():
    from hybridnet.ir.graph import Graph, Node
    op = registry.get("sgd_update")
    w, g = Node(None, "w"), Node(None, "g")
    graph = Graph([(Node(op, "upd", {"lr": 0.1}, [(w, 0), (g, 0)]), 0)])
    with pytest.raises(fo.OnnxUnsupported, match="training-only optimizer update"):
        fo.graph_to_onnx(graph, {}, [("w", (2,), "float32"), ("g", (2,), "float32")], None)
