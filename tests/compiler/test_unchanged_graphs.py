"""A graph nothing rewrites is walked, not rebuilt: each pass that finds nothing to do returns
the very graph it was given, the pipelines then neither lint it again nor compile a second
(in-place) function for it, and a loaded file's graph is the one a SymbolBlock compiles.

This is what keeps the first call of a 100,000-node graph within MXNet's time (issue 24): each
lint, rebuild or compile of such a graph costs seconds. The tests count the work, never time it.
"""
from __future__ import annotations

import gc
import json

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import nd, sym
from hybridnet.compiler import codegen, passes, pipeline
from hybridnet.compiler.passes.cse import cse
from hybridnet.compiler.passes.fuse import fuse_softmax_ce
from hybridnet.compiler.passes.inference import compute_in_place, fold_batchnorm, remove_inference_identities
from hybridnet.compiler.passes.layout import channels_last_convolutions
from hybridnet.compiler.pipeline import PassContext, Target
from hybridnet.gluon import SymbolBlock, nn
from hybridnet.ir.graph import Graph, collector_paused


def _chain(n: int = 12) -> Graph:
    """Activations and residual additions on distinct inputs: no pass has anything to do."""
    x = sym.var("data")
    h, prev = x, x
    for i in range(n):
        if i % 4 == 3:
            h, prev = h + prev, h
        else:
            h, prev = sym.Activation(h, act_type=("relu", "sigmoid", "tanh")[i % 3], name=f"a{i}"), h
    return h._graph()


def _count_lints(monkeypatch) -> list:
    calls: list = []
    original = Graph._lint

    def counting(self, *args, **kwargs):
        calls.append(self)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(Graph, "_lint", counting)
    return calls


def _count_compiles(monkeypatch) -> list:
    """Every generated function compiled (codegen's ``compile`` of the source it made)."""
    calls: list = []

    def counting(src, filename, mode, *args, **kwargs):
        calls.append(filename)
        return compile(src, filename, mode, *args, **kwargs)
    monkeypatch.setattr(codegen, "compile", counting, raising=False)
    return calls


@pytest.mark.parametrize("run", [
    cse, fuse_softmax_ce, compute_in_place, remove_inference_identities, channels_last_convolutions,
    lambda g: fold_batchnorm(g, None), passes.distinct_outputs,
], ids=["cse", "fuse_softmax_ce", "compute_in_place", "remove_inference_identities",
        "channels_last_convolutions", "fold_batchnorm", "distinct_outputs"])
def test_a_pass_that_changes_nothing_returns_the_same_graph(run):
    g = _chain()
    assert run(g) is g


def test_a_pass_that_changes_something_returns_a_new_graph_and_leaves_its_input_alone():
    x = sym.var("x")
    twice = sym.relu(x, name="r1") + sym.relu(x, name="r2")  # one common subexpression
    g = twice._graph()
    before = g.text()
    merged = cse(g)
    assert merged is not g and g.text() == before
    assert len(merged.nodes) == len(g.nodes) - 1
    kept = remove_inference_identities(sym.BlockGrad(x)._graph())
    assert [n.opname for n in kept.nodes] == ["null"]


def test_the_pipelines_do_not_lint_an_unchanged_graph_again(monkeypatch):
    g = _chain()
    g.lint()
    lints = _count_lints(monkeypatch)
    assert pipeline.training_graph(g) is g
    assert pipeline.predict_graph(g, Target.IN_PLACE) is g
    assert pipeline.predict_graph(g, Target.PLAN, PassContext(param_dtypes={})) is g
    assert lints == []


def test_a_lint_is_remembered_and_the_stricter_one_still_runs(monkeypatch):
    g = _chain()
    lints = _count_lints(monkeypatch)
    g.lint(unique_variable_names=False)
    g.lint(unique_variable_names=False)
    assert len(lints) == 1
    g.lint()  # the stricter rule has not been checked yet
    g.lint()
    g.lint(unique_variable_names=False)
    assert len(lints) == 2


def test_a_changed_graph_is_linted_once_per_stage_that_changed_it(monkeypatch):
    x = sym.var("x")
    g = (sym.relu(x, name="r1") + sym.relu(x, name="r2"))._graph()
    g.lint()
    lints = _count_lints(monkeypatch)
    out = pipeline.training_graph(g)  # cse merges; fuse_softmax_ce finds nothing
    assert out is not g and lints == [out]


def test_a_block_whose_in_place_stages_change_nothing_compiles_one_function(monkeypatch):
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="relu"), nn.Dense(3, activation="tanh"))
    net.initialize()
    net.hybridize()
    x = nd.array(np.random.RandomState(0).rand(2, 5))
    compiles = _count_compiles(monkeypatch)
    first = net(x).asnumpy()
    second = net(x).asnumpy()
    assert len(compiles) == 1  # the default function; no in-place copy of it
    np.testing.assert_array_equal(first, second)


def test_a_block_whose_in_place_stages_change_the_graph_still_gets_the_in_place_function(monkeypatch):
    net = nn.HybridSequential()
    net.add(nn.Conv2D(32, 3), nn.BatchNorm(), nn.Activation("relu"))
    net.initialize()
    net.hybridize()
    x = nd.array(np.random.RandomState(0).rand(1, 3, 8, 8))
    compiles = _count_compiles(monkeypatch)
    net(x).wait_to_read()
    assert len(compiles) == 2  # the default function and the in-place one


def _chain_json(n: int) -> str:
    nodes = [{"op": "null", "name": "data", "inputs": []}]
    for i in range(n):
        if i % 4 == 3:
            nodes.append({"op": "elemwise_add", "name": f"add{i}", "inputs": [[i, 0, 0], [max(i - 2, 0), 0, 0]]})
        else:
            nodes.append({"op": "Activation", "name": f"act{i}", "attrs": {"act_type": ("relu", "sigmoid", "tanh")[i % 3]},
                          "inputs": [[i, 0, 0]]})
    return json.dumps({"nodes": nodes, "arg_nodes": [0], "node_row_ptr": list(range(n + 2)),
                       "heads": [[n, 0, 0]], "attrs": {"mxnet_version": ["int", 10901]}})


def test_a_loaded_file_is_walked_and_linted_once_up_to_its_first_forward(monkeypatch):
    text = _chain_json(40)
    lints = _count_lints(monkeypatch)
    compiles = _count_compiles(monkeypatch)
    s = sym.load_json(text)
    assert len(lints) == 1
    assert s._graph() is s._graph()  # the loaded graph, kept
    blk = SymbolBlock(s, [sym.var("data")])
    blk.hybridize()
    x = nd.array(np.linspace(-1, 1, 6).reshape(2, 3))
    y = blk(x).asnumpy()
    assert len(lints) == 1 and len(compiles) == 1
    want = sym.load_json(text).eval(data=x)[0].asnumpy()
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_a_symbol_made_from_a_loaded_one_gets_its_own_graph():
    s = sym.load_json(_chain_json(8))
    loaded = s._graph()
    grouped = sym.Group([s, s])
    assert grouped._graph() is not loaded and len(grouped._graph().outputs) == 2
    copied = s.__copy__()
    assert copied._graph().text() == loaded.text()
    composed = s(data=sym.var("z"))
    assert composed.list_arguments() == ["z"] and s.list_arguments() == ["data"]


def test_loading_restores_the_collector_as_it_found_it():
    text = _chain_json(8)
    assert gc.isenabled()
    sym.load_json(text)
    assert gc.isenabled()
    gc.disable()
    try:
        sym.load_json(text)
        assert not gc.isenabled()  # the caller's choice stands
    finally:
        gc.enable()
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner use does not restart it early
    assert gc.isenabled()
    with pytest.raises(mx.base.MXNetError):
        sym.load_json("{")
    assert gc.isenabled()
