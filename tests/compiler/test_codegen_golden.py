"""The generated Python that README shows users (``net._cached_op.source``) stays readable and
does not change by accident: the code generator's exact output for a few small graphs is
compared with committed files in tests/compiler/golden/.

The graphs go straight to ``compile_graph`` (no optimizing passes), so only the code generator
is under test. After a deliberate change to the generated code, rewrite the files with

    HYBRIDNET_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/compiler/test_codegen_golden.py

and review the diff like any other change.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import torch

import hybridnet.ops  # noqa: F401  (registers every operator family)
from hybridnet.compiler.codegen import compile_graph
from hybridnet.ir.graph import Graph, Node
from hybridnet.ir.interpreter import Interpreter
from hybridnet.ops.registry import get as op

GOLDEN = Path(__file__).parent / "golden"
REGEN = os.environ.get("HYBRIDNET_REGEN_GOLDEN") == "1"


def _vars(*names: str) -> list:
    return [Node(None, n) for n in names]


def mlp() -> Graph:
    """Dense(8, relu) -> Dense(3), README's example network."""
    x, w1, b1, w2, b2 = _vars("data", "dense0_weight", "dense0_bias", "dense1_weight", "dense1_bias")
    fc1 = Node(op("FullyConnected"), "dense0_fwd", {"num_hidden": 8}, [(x, 0), (w1, 0), (b1, 0)])
    act = Node(op("Activation"), "dense0_relu_fwd", {"act_type": "relu"}, [(fc1, 0)])
    fc2 = Node(op("FullyConnected"), "dense1_fwd", {"num_hidden": 3}, [(act, 0), (w2, 0), (b2, 0)])
    return Graph([(fc2, 0)])


def conv_bn_relu() -> Graph:
    """Convolution (no bias) -> BatchNorm (train-aware, auxiliary running statistics) -> relu."""
    x, w, gamma, beta, mean, var = _vars("data", "conv0_weight", "bn0_gamma", "bn0_beta",
                                         "bn0_running_mean", "bn0_running_var")
    conv = Node(op("Convolution"), "conv0_fwd",
                {"kernel": (3, 3), "pad": (1, 1), "num_filter": 4, "no_bias": True}, [(x, 0), (w, 0)])
    bn = Node(op("BatchNorm"), "bn0_fwd", {"fix_gamma": False, "eps": 1e-5},
              [(conv, 0), (gamma, 0), (beta, 0), (mean, 0), (var, 0)])
    act = Node(op("Activation"), "relu0_fwd", {"act_type": "relu"}, [(bn, 0)])
    return Graph([(act, 0)])


def multi_output() -> Graph:
    """A three-way split (one node, three outputs), a value used twice and returned, and an
    output that is also an intermediate: the tuple unpacking and the ``del`` lines."""
    x, y = _vars("x", "y")
    s = Node(op("SliceChannel"), "split0", {"num_outputs": 3, "axis": 1}, [(x, 0)])
    a = Node(op("elemwise_add"), "add0", {}, [(s, 0), (y, 0)])
    m = Node(op("elemwise_mul"), "mul0", {}, [(a, 0), (s, 2)])
    t = Node(op("tanh"), "tanh0", {}, [(a, 0)])
    return Graph([(m, 0), (s, 1), (t, 0), (a, 0)])


def foreach_loop() -> Graph:
    """A control-flow node: its body becomes a function of its own, emitted before its user."""
    data, init = _vars("data", "init")
    a, s = _vars("a", "s")
    step = Node(op("elemwise_add"), "step", {}, [(a, 0), (s, 0)])
    twice = Node(op("_mul_scalar"), "twice", {"scalar": 2.0}, [(step, 0)])
    body = Graph([(step, 0), (twice, 0)])
    loop = Node(op("_foreach"), "foreach0",
                {"in_data_locs": [0], "in_state_locs": [1], "remain_locs": [], "num_args": 3,
                 "num_out_data": 1, "num_outputs": 2}, [(data, 0), (init, 0)], [body])
    return Graph([(loop, 0), (loop, 1)])


GRAPHS: dict = {"mlp": mlp, "conv_bn_relu": conv_bn_relu, "multi_output": multi_output,
                "foreach": foreach_loop}

SHAPES = {"data": (2, 3, 4, 4), "conv0_weight": (4, 3, 3, 3), "x": (2, 6), "y": (2, 2), "init": (2,),
          "dense0_weight": (8, 5), "dense0_bias": (8,), "dense1_weight": (3, 8), "dense1_bias": (3,)}


def _shape(graph_name: str, var: str) -> tuple:
    if graph_name == "mlp" and var == "data":
        return (2, 5)
    if graph_name == "foreach" and var == "data":
        return (3, 2)
    return SHAPES.get(var, (4,))


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_generated_source_matches_golden_file(name: str) -> None:
    build: Callable[[], Graph] = GRAPHS[name]
    graph = build()
    graph.lint()
    source = compile_graph(graph).source
    path = GOLDEN / f"{name}.py.txt"
    if REGEN:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(source, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with HYBRIDNET_REGEN_GOLDEN=1 to write it"
    want = path.read_text(encoding="utf-8")
    assert source == want, (f"the generated source for {name!r} changed; if that is intended, "
                            f"rerun with HYBRIDNET_REGEN_GOLDEN=1 and review the diff\n{source}")


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("train", [False, True])
def test_golden_graphs_compute_what_the_interpreter_computes(name: str, train: bool) -> None:
    """The golden source is not only stable but right: it runs and equals the IR interpreter."""
    graph = GRAPHS[name]()
    rng = np.random.RandomState(0)
    arrays = [rng.uniform(0.5, 1.5, _shape(name, v.name)) for v in graph.variables()]
    with torch.no_grad():
        want = Interpreter(graph).run(*[torch.from_numpy(a.copy()) for a in arrays], _train=train)
        got = compile_graph(graph).fn(*[torch.from_numpy(a.copy()) for a in arrays], _train=train)
    assert len(got) == len(want) == len(graph.outputs)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
