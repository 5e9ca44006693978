"""Control-flow graphs in MXNet's ``-symbol.json``: real MXNet 1.9.1's exports (made by
tests/fixtures/control_flow/make_fixtures.py) load, compute MXNet's outputs and gradients, and
write back byte for byte; ours are written as MXNet writes them; malformed subgraphs in a file
are refused with an error naming the node."""
from __future__ import annotations

import copy
import json
import os

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, nd
from hybridnet.base import MXNetError

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "control_flow")
CASES = ["rnn", "while", "cond_then", "cond_else"]


def _load(name):
    f = np.load(os.path.join(FIXTURES, f"{name}.npz"))
    n_in = len([k for k in f.files if k.startswith("in")])
    names = ["data"] if n_in == 1 else [f"data{i}" for i in range(n_in)]
    return f, names


@pytest.mark.parametrize("name", CASES)
def test_mxnet_json_round_trips_byte_for_byte(name):
    with open(os.path.join(FIXTURES, f"{name}-symbol.json")) as fh:
        text = fh.read()
    sym = mx.sym.load_json(text)
    assert sym.tojson() == text
    assert "subgraph 0:" in sym.debug_str()


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("name", CASES)
def test_mxnet_export_computes_mxnet_outputs_and_gradients(name, hybridize):
    f, names = _load(name)
    net = mx.gluon.SymbolBlock.imports(os.path.join(FIXTURES, f"{name}-symbol.json"), names,
                                       os.path.join(FIXTURES, f"{name}-0000.params"))
    if hybridize:
        net.hybridize()
    xs = [nd.array(f[f"in{i}"]) for i in range(len(names))]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        outs = net(*xs)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    # the while fixture's last output counts steps: no gradient flows through it
    diff = outs[:2] if name == "while" else outs
    autograd.backward(diff, [nd.array(f[f"head{i}"]) for i in range(len(diff))])
    for i, o in enumerate(outs):
        want, got = f[f"out{i}"], o.asnumpy()
        if name == "while" and i == 0:
            steps = int(f["out2"][0, 0])  # MXNet leaves the rows past the last step uninitialized
            assert 0 < steps < want.shape[0]
            assert not got[steps:].any()  # ours are zeros
            want, got = want[:steps], got[:steps]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for i, x in enumerate(xs):
        np.testing.assert_allclose(x.grad.asnumpy(), f[f"grad_in{i}"], rtol=1e-5, atol=1e-6)
    for p in net.collect_params().values():
        want = f[f"grad_{p.name}"]
        assert np.abs(want).max() > 1e-3
        np.testing.assert_allclose(p.grad().asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_our_foreach_graph_is_written_as_mxnet_writes_it():
    """The same graph built here and by MXNet 1.9.1 (its text is the expected string)."""
    with mx.name.NameManager():  # node names count from 0, as in a fresh MXNet process
        a = mx.sym.var("a")
        s = mx.sym.split(a, num_outputs=2)
        out = mx.sym.contrib.foreach(lambda d, st: (d * 2, [st[0] + d]), s[1], [a])[0]
    doc = json.loads(out.tojson())
    node = doc["nodes"][2]
    assert node["op"] == "_foreach" and node["name"] == "_foreach0"
    assert node["attrs"] == {"in_data_locs": "[0]", "in_state_locs": "[1]", "num_args": "3",
                             "num_out_data": "1", "num_outputs": "2", "remain_locs": "[]"}
    assert node["inputs"] == [[1, 1, 0], [0, 0, 0]]
    sub = node["subgraphs"][0]
    assert [n["name"] for n in sub["nodes"]] == ["split0-1", "_mulscalar0", "a-0", "_plus0"]
    assert sub["arg_nodes"] == [0, 2] and sub["heads"] == [[1, 0, 0], [3, 0, 0]]
    assert set(sub) == {"nodes", "arg_nodes", "node_row_ptr", "heads"}


# ---- malformed subgraphs in a file ------------------------------------------------------------
def _rnn_doc():
    with open(os.path.join(FIXTURES, "rnn-symbol.json")) as fh:
        return json.load(fh)


def _foreach(doc):
    return next(n for n in doc["nodes"] if n["op"] == "_foreach")


def _edit(fn):
    def make():
        doc = _rnn_doc()
        fn(doc)
        return json.dumps(doc)
    return make


BAD = [
    (_edit(lambda d: _foreach(d).pop("subgraphs")), r"_foreach0'\): operator '_foreach' needs 1 subgraph"),
    (_edit(lambda d: _foreach(d).__setitem__("subgraphs", [{}, {}])), r"needs 1 subgraph\(s\), the node has 2"),
    (_edit(lambda d: _foreach(d).__setitem__("subgraphs", [[1]])), r"subgraph 0: a graph must be an object"),
    (_edit(lambda d: _foreach(d)["subgraphs"][0].pop("heads")), r"subgraph 0: required top-level key 'heads'"),
    (_edit(lambda d: _foreach(d)["attrs"].__setitem__("remain_locs", "[1, 3, 7]")), r"\[0, 2, 1, 3, 7\] must name each of the body's 5 inputs once"),
    (_edit(lambda d: _foreach(d)["attrs"].__setitem__("in_data_locs", "[1]")), r"must name each of the body's 5 inputs"),
    (_edit(lambda d: _foreach(d)["attrs"].__setitem__("num_outputs", "3")), r"num_outputs=3.*do not fit"),
    (_edit(lambda d: _foreach(d)["attrs"].__setitem__("num_args", "4")), r"num_args is 4 but the node has 5 inputs and 1 subgraph"),
    (_edit(lambda d: _foreach(d)["attrs"].pop("remain_locs")), r"required attribute 'remain_locs'"),
    (_edit(lambda d: _foreach(d)["subgraphs"][0]["nodes"][2].__setitem__("op", "nope")),
     r"subgraph 0: node 2 \('rnn_dot0'\): failed loading op 'nope'"),
    (_edit(lambda d: _foreach(d)["subgraphs"][0]["nodes"][3].__setitem__("name", "data0-0")),
     r"subgraph 0: node 3 \('data0-0'\): duplicate variable name"),
    (_edit(lambda d: d["nodes"][0].__setitem__("subgraphs", [{"nodes": [], "arg_nodes": [], "heads": []}])),
     r"node 0 \('data0'\): subgraphs given, but operator 'null' takes none"),
]


@pytest.mark.parametrize("make,pattern", BAD, ids=[str(i) for i in range(len(BAD))])
def test_malformed_subgraphs_are_refused_naming_the_node(make, pattern):
    with pytest.raises(MXNetError, match=pattern):
        mx.sym.load_json(make())


def test_nesting_depth_is_bounded():
    doc = _rnn_doc()
    node = _foreach(doc)
    for _ in range(40):  # a _foreach whose body is a _foreach whose body is ... (a hostile file)
        inner = copy.deepcopy(node)
        node["subgraphs"] = [{"nodes": [{"op": "null", "name": f"x{i}", "inputs": []} for i in range(4)] + [inner],
                              "arg_nodes": [0, 1, 2, 3], "heads": [[4, 0, 0], [4, 1, 0]]}]
        inner["inputs"] = [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]]
        node = inner
    with pytest.raises(MXNetError, match="nested more than 16 deep"):
        mx.sym.load_json(json.dumps(doc))


def test_hostile_names_inside_subgraphs_never_become_code(tmp_path):
    """Node names inside a subgraph reach the generated source only as sanitized identifiers
    and ascii() comments (see tests/compiler/test_codegen_untrusted.py)."""
    marker = tmp_path / "marker"
    payload = f"x\nopen({str(marker)!r}, 'w').write('pwned')\n#"
    doc = _rnn_doc()
    sub = _foreach(doc)["subgraphs"][0]
    for n in sub["nodes"]:
        n["name"] = payload + n["name"]
    sym = mx.sym.load_json(json.dumps(doc))
    f, _ = _load("rnn")
    args = {"data0": nd.array(f["in0"]), "data1": nd.array(f["in1"])}
    args.update({k: nd.array(f[f"param_{k}"]) for k in ("rnn_w", "rnn_u", "rnn_b")})
    out = sym.eval(**args)
    np.testing.assert_allclose(out[0].asnumpy(), f["out0"], rtol=1e-5, atol=1e-6)
    assert not marker.exists()
