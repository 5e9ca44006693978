"""autograd.get_symbol of a hybridized block's output (MXNet's CachedOp::Forward): the call is
recorded operator by operator where its graph has at most ``inline_limit`` operators and
``static_alloc`` is off, else as one ``_CachedOp`` node that runs the graph."""
from __future__ import annotations

import json

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, gluon


def _mlp(units=(10, 10, 10)):
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        for u in units:
            net.add(gluon.nn.Dense(u, activation="relu"))
    net.initialize(mx.init.Xavier())
    return net


def _ops(symbol):
    return [n["op"] for n in json.loads(symbol.tojson())["nodes"] if n["op"] != "null"]


def test_inline_limit_decides_between_operators_and_one_cached_op_node():
    """MXNet's test_inline: three Dense layers inline give two more nodes than one _CachedOp."""
    net = _mlp()
    x = mx.nd.zeros((1, 10))
    lengths = []
    for limit in (6, 0):
        net.hybridize(inline_limit=limit)
        with autograd.record():
            y = net(x)
        lengths.append(len(json.loads(autograd.get_symbol(y).tojson())["nodes"]))
        y.backward()
    # 3 FullyConnected + 3 Activation inline; one _CachedOp otherwise; 7 variables each time
    assert lengths == [13, 8]


@pytest.mark.parametrize("flags", [{"inline_limit": 100}, {}, {"static_alloc": True, "inline_limit": 100}])
def test_recorded_symbol_computes_the_call_and_its_gradients(flags):
    net = _mlp((4, 3))
    net.hybridize(**flags)
    x = mx.nd.array(np.random.RandomState(0).rand(2, 5))
    with autograd.record():
        y = net(x)
    y.backward()
    symbol = autograd.get_symbol(y)
    inline = flags.get("inline_limit") == 100 and not flags.get("static_alloc")
    assert ("_CachedOp" in _ops(symbol)) != inline
    params = list(net.collect_params().values())
    args = dict(zip(symbol.list_arguments(), [x] + [p.data() for p in params]))
    loaded = mx.sym.load_json(symbol.tojson())  # the JSON round trip keeps the subgraph
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    exe = loaded.bind(mx.cpu(), args=args, args_grad=grads)
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), y.asnumpy(), rtol=1e-6)
    exe.backward(mx.nd.ones(y.shape))
    for name, p in zip(symbol.list_arguments()[1:], params):
        np.testing.assert_allclose(grads[name].asnumpy(), p.grad().asnumpy(), rtol=1e-5, atol=1e-7)


def test_history_follows_the_inputs_history_and_nested_inputs():
    class Pair(gluon.HybridBlock):
        def hybrid_forward(self, F, xs):
            a, b = xs
            return F.broadcast_mul(a, b) + F.exp(a)

    net = Pair()
    net.hybridize(inline_limit=0)
    a, b = mx.nd.ones((2, 2)), mx.nd.ones((2, 2)) * 2
    a.attach_grad()
    with autograd.record():
        h = mx.nd.sin(a)  # recorded eagerly, upstream of the block
        y = net([h, b])  # nested input: the general call path
    ops = _ops(autograd.get_symbol(y))
    assert ops == ["sin", "_CachedOp"]
