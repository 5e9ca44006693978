"""-symbol.json + .params from strangers: parameter shapes are checked against the graph at
``SymbolBlock.imports``; hostile attribute text gives MXNetError, never a parser crash."""
from __future__ import annotations

import json

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import gluon
from hybridnet.base import MXNetError
from hybridnet.gluon import nn
from hybridnet.ops.attrs import parse_value


@pytest.fixture
def exported(tmp_path):
    net = nn.HybridSequential(prefix="m_")
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, in_channels=2), nn.BatchNorm(in_channels=4), nn.Flatten(),
                nn.Dense(5, in_units=64))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.ones((1, 2, 6, 6))
    want = net(x).asnumpy()
    net.export(str(tmp_path / "m"), 0)
    return tmp_path, x, want


@pytest.mark.parametrize("name, shape, shown", [
    ("arg:m_dense0_weight", (5, 63), r"has shape \(5, 63\), but the graph declares \(5, 64\)"),  # __shape__
    ("arg:m_dense0_weight", (6, 64), r"has shape \(6, 64\), but the node's attributes need \(5, \?\)"),
    ("arg:m_conv0_weight", (4, 2, 3), r"has shape \(4, 2, 3\), but the node's attributes need \(4, \?, 3, 3\)"),
    ("arg:m_conv0_weight", (4, 2, 5, 5), r"need \(4, \?, 3, 3\)"),
    ("arg:m_dense0_bias", (5, 1), r"has shape \(5, 1\), but the node's attributes need \(5,\)"),
    ("aux:m_batchnorm0_running_var", (7,), r"has shape \(7,\), but the graph declares \(4,\)"),
])
def test_params_that_do_not_fit_the_graph_fail_at_imports(exported, name, shape, shown):
    d, x, _ = exported
    params = mx.nd.load(str(d / "m-0000.params"))
    params[name] = mx.nd.ones(shape)
    mx.nd.save(str(d / "bad.params"), params)
    with pytest.raises(MXNetError, match=r"imports: the parameters in '.*bad\.params' do not fit the graph "
                                         r"in '.*m-symbol\.json': .*" + name.split(":")[1] + ".*" + shown):
        gluon.SymbolBlock.imports(str(d / "m-symbol.json"), ["data"], str(d / "bad.params"))


def test_fitting_params_still_import_and_match(exported):
    d, x, want = exported
    block = gluon.SymbolBlock.imports(str(d / "m-symbol.json"), ["data"], str(d / "m-0000.params"))
    np.testing.assert_allclose(block(x).asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_shape_check_without_shape_hints_in_the_json(exported):
    """MXNet's own exports carry no __shape__ on variables: the rule of the operator (num_hidden,
    kernel, num_filter) still catches a weight of the wrong size."""
    d, x, _ = exported
    doc = json.loads((d / "m-symbol.json").read_text())
    for node in doc["nodes"]:
        for key in ("__shape__", "__dtype__", "__init__"):
            node.get("attrs", {}).pop(key, None)
    (d / "plain-symbol.json").write_text(json.dumps(doc))
    params = mx.nd.load(str(d / "m-0000.params"))
    params["arg:m_dense0_weight"] = mx.nd.ones((6, 64))
    params["arg:m_dense0_bias"] = mx.nd.ones((6,))
    mx.nd.save(str(d / "bad.params"), params)
    with pytest.raises(MXNetError, match=r"do not fit the graph.*'m_dense0_weight' \(weight of node "
                                         r"'m_dense0_fwd', operator FullyConnected\) has shape \(6, 64\), "
                                         r"but the node's attributes need \(5, \?\)"):
        gluon.SymbolBlock.imports(str(d / "plain-symbol.json"), ["data"], str(d / "bad.params"))


@pytest.mark.parametrize("text, kind", [
    ("(" * 5000 + ")" * 5000, "shape"), ("[" * 100_000, "shape"), ("9" * 5000, "int"),
    ("9" * 4000, "int"), (str(2 ** 63), "int"), (f"(2, {2 ** 64})", "shape"), ("x" * 200_000, "any"),
    ("{'a': " * 300 + "1" + "}" * 300, "any"), ("(1,)*1000", "shape"), ("__import__('os')", "any"),
    ("1e999999", "shape"), ("\x00", "int"),
])
def test_hostile_attribute_text_is_a_clear_error(text, kind):
    with pytest.raises(MXNetError, match="attribute Op.attr: "):
        parse_value(text, kind, where="Op.attr")


def test_int64_bounds_are_kept():
    assert parse_value(str(2 ** 63 - 1), "int") == 2 ** 63 - 1
    assert parse_value(f"({-2 ** 63}, 3)", "shape") == (-2 ** 63, 3)
    with pytest.raises(MXNetError, match="int64"):
        parse_value(str(-2 ** 63 - 1), "int")


def test_hostile_attribute_in_a_symbol_file(tmp_path):
    doc = {"nodes": [{"op": "null", "name": "data", "inputs": []},
                     {"op": "Reshape", "name": "r", "attrs": {"shape": "(" * 3000 + ")" * 3000},
                      "inputs": [[0, 0, 0]]}],
           "arg_nodes": [0], "node_row_ptr": [0, 1, 2], "heads": [[1, 0, 0]],
           "attrs": {"mxnet_version": ["int", 10901]}}
    (tmp_path / "h-symbol.json").write_text(json.dumps(doc))
    with pytest.raises(MXNetError, match="cannot parse"):
        mx.sym.load(str(tmp_path / "h-symbol.json"))


def test_hostile_shape_hint_on_a_variable(tmp_path):
    """Variable attributes stay strings in the IR; the __shape__ hint is parsed by shape
    inference with the same bounded parser (a deep '[' nesting made the parser run out of
    memory: found by the fuzzer)."""
    doc = {"nodes": [{"op": "null", "name": "data", "attrs": {"__shape__": "[" * 100_000}, "inputs": []},
                     {"op": "relu", "name": "r", "inputs": [[0, 0, 0]]}],
           "arg_nodes": [0], "node_row_ptr": [0, 1, 2], "heads": [[1, 0, 0]],
           "attrs": {"mxnet_version": ["int", 10901]}}
    s = mx.sym.load_json(json.dumps(doc))
    with pytest.raises(MXNetError, match="'data' __shape__"):
        s.infer_shape_partial()


def _slice_channel_doc(num_outputs: int) -> str:
    return json.dumps({"nodes": [{"op": "null", "name": "data", "inputs": []},
                                 {"op": "SliceChannel", "name": "split",
                                  "attrs": {"num_outputs": str(num_outputs)}, "inputs": [[0, 0, 0]]}],
                       "arg_nodes": [0], "node_row_ptr": [0, 1, 1 + num_outputs], "heads": [[1, 0, 0]],
                       "attrs": {"mxnet_version": ["int", 10901]}})


def test_a_node_with_a_million_outputs_is_refused_at_load(tmp_path, monkeypatch):
    # it used to cost a minute and a gigabyte of code generation at the first forward
    import time
    path = tmp_path / "split-symbol.json"
    path.write_text(_slice_channel_doc(1_000_000))
    assert path.stat().st_size < 400
    t0 = time.monotonic()
    with pytest.raises(MXNetError, match=r"node 1 \('split'\): SliceChannel has 1000000 outputs, more than "
                                         r"the 16384 a loaded node may have; .* HYBRIDNET_MAX_NODE_OUTPUTS"):
        gluon.SymbolBlock.imports(str(path), ["data"])
    assert time.monotonic() - t0 < 1.0
    monkeypatch.setenv("HYBRIDNET_MAX_NODE_OUTPUTS", "8")
    with pytest.raises(MXNetError, match="SliceChannel has 9 outputs, more than the 8"):
        mx.sym.load_json(_slice_channel_doc(9))
    assert len(mx.sym.load_json(_slice_channel_doc(8)).get_internals()) >= 1
    monkeypatch.setenv("HYBRIDNET_MAX_NODE_OUTPUTS", "many")
    with pytest.raises(MXNetError, match="HYBRIDNET_MAX_NODE_OUTPUTS='many' is not an integer"):
        mx.sym.load_json(_slice_channel_doc(2))
