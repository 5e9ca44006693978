"""mx.viz: print_summary prints exactly what real MXNet 1.9.1 prints (committed fixture);
plot_network builds the graph with graphviz when installed and names the pip command when not."""
import contextlib
import io
import os
import sys
import warnings

import numpy as np
import pytest

import hybridnet as mx

HERE = os.path.join(os.path.dirname(__file__), "viz_fixtures")
sys.path.insert(0, HERE)
from make_print_summary import SYMBOL_CODE  # noqa: E402

sys.path.remove(HERE)


def test_print_summary_matches_mxnet():
    out = io.StringIO()
    # a fresh name scope: auto-generated names (concat0, reshape0) as in the fixture's process
    with contextlib.redirect_stdout(out), mx.name.NameManager():
        exec(SYMBOL_CODE, {"mx": mx})
    with open(os.path.join(HERE, "print_summary_mxnet.txt")) as f:
        expected = f.read()
    assert out.getvalue() == expected


def test_print_summary_rejects_non_symbols():
    with pytest.raises(TypeError, match="Symbol"):
        mx.viz.print_summary(mx.nd.ones((2,)))
    assert mx.visualization is mx.viz


def _net():
    net = mx.sym.Variable("data")
    net = mx.sym.Convolution(net, num_filter=4, kernel=(3, 3), stride=(2, 2), name="conv")
    net = mx.sym.Activation(net, act_type="relu", name="act")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(net, name="out")


def test_plot_network_without_graphviz(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz -> ImportError
    with pytest.raises(ImportError, match="pip install graphviz"):
        mx.viz.plot_network(_net())


def test_plot_network_with_graphviz():
    pytest.importorskip("graphviz")
    dot = mx.viz.plot_network(_net(), shape={"data": (2, 3, 9, 9)}, dtype={"data": np.float32},
                              node_attrs={"fixedsize": "false"})
    src = dot.source
    assert 'label="Convolution\n3x3/2x2, 4"' in src
    assert 'label="Activation\nrelu"' in src and 'label="FullyConnected\n10"' in src
    assert "conv_weight" not in src  # weights hidden by default
    assert 'act -> conv [label="4x4x4(float32)"' in src
    assert "fixedsize=false" in src
    shown = mx.viz.plot_network(_net(), hide_weights=False).source
    assert "conv_weight" in shown

    dup = mx.sym.FullyConnected(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc"),
                                num_hidden=2, name="fc")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.viz.plot_network(dup)
    assert any("multiple variables with the same name" in str(w.message) and "fc" in str(w.message)
               for w in caught)
