"""Control-flow operators (``foreach``, ``while_loop``, ``cond``): eager (nd.contrib) ==
hybridized (F.contrib in a traced graph) == NumPy, in outputs and float64 gradients (finite
differences), plus the errors for bodies that cannot be loops. The registry's sample table
cannot drive these (a sample cannot carry a subgraph), so they are tested here."""
from __future__ import annotations

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, gluon, nd
from hybridnet.base import MXNetError
from hybridnet.symbol.contrib import ControlFlowError

from finite_differences import central_differences


def _np(x):
    return [a.asnumpy() for a in x] if isinstance(x, (list, tuple)) else x.asnumpy()


# ---- foreach: an RNN, hybridized vs its unrolled eager form -------------------------------------
class ForeachRNN(gluon.HybridBlock):
    def __init__(self, hidden=4, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.w = self.params.get("w", shape=(hidden, 3))
            self.u = self.params.get("u", shape=(hidden, hidden))
            self.b = self.params.get("b", shape=(hidden,))

    def hybrid_forward(self, F, x, h0, w, u, b):
        def step(xt, states):
            h = F.tanh(F.broadcast_add(F.dot(xt, w, transpose_b=True) + F.dot(states[0], u), b))
            return h * 2, [h]
        outs, states = F.contrib.foreach(step, x, [h0])
        return outs, states[0]


def _unrolled(x, h0, w, u, b):
    """The same RNN written as a plain Python loop over NDArray operators."""
    h, outs = h0, []
    for t in range(x.shape[0]):
        h = nd.tanh(nd.broadcast_add(nd.dot(x[t], w, transpose_b=True) + nd.dot(h, u), b))
        outs.append(h * 2)
    return nd.stack(*outs), h


def _run_with_grads(fn, arrays, heads):
    arrays = [a.copy() for a in arrays]
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        outs = fn(*arrays)
    autograd.backward(list(outs), heads)
    return [o.asnumpy() for o in outs], [a.grad.asnumpy() for a in arrays]


@pytest.mark.parametrize("hybridize", [False, True])
def test_foreach_rnn_equals_unrolled_eager_float64(hybridize):
    rng = np.random.RandomState(0)
    net = ForeachRNN(prefix="rnn_")
    net.initialize(mx.init.Uniform(0.5))
    net.cast("float64")
    if hybridize:
        net.hybridize()
    x = nd.array(rng.uniform(-1, 1, (6, 2, 3)), dtype="float64")
    h0 = nd.array(rng.uniform(-1, 1, (2, 4)), dtype="float64")
    heads = [nd.array(rng.uniform(-1, 1, (6, 2, 4)), dtype="float64"),
             nd.array(rng.uniform(-1, 1, (2, 4)), dtype="float64")]
    params = [net.w, net.u, net.b]
    xs = [x.copy(), h0.copy()]
    for a in xs:
        a.attach_grad()
    with autograd.record():
        outs = net(*xs)
    autograd.backward(list(outs), heads)
    got = [o.asnumpy() for o in outs]
    got_grads = [a.grad.asnumpy() for a in xs] + [p.grad().asnumpy() for p in params]
    want, want_grads = _run_with_grads(_unrolled, [x, h0] + [p.data() for p in params], heads)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    for g, w in zip(got_grads, want_grads):
        assert np.abs(w).max() > 1e-3  # the gradient is not trivially zero
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    if hybridize:
        assert "_foreach(" in net._cached_op.source and "subgraphs=(" in net._cached_op.source


def test_foreach_hybridized_gradients_match_finite_differences():
    rng = np.random.RandomState(1)
    net = ForeachRNN(hidden=2, prefix="fd_")
    net.initialize(mx.init.Uniform(0.5))
    net.cast("float64")
    net.hybridize()
    x = rng.uniform(-1, 1, (3, 1, 3))
    h0 = rng.uniform(-1, 1, (1, 2))
    heads = [rng.uniform(-1, 1, (3, 1, 2)), rng.uniform(-1, 1, (1, 2))]

    def objective(xv, hv):
        outs = net(nd.array(xv, dtype="float64"), nd.array(hv, dtype="float64"))
        return sum(float((o.asnumpy() * h).sum()) for o, h in zip(outs, heads))

    _, grads = _run_with_grads(lambda a, b: net(a, b), [nd.array(x, dtype="float64"), nd.array(h0, dtype="float64")],
                               [nd.array(h, dtype="float64") for h in heads])
    fd = [central_differences(lambda v: objective(v, h0), x), central_differences(lambda v: objective(x, v), h0)]
    for i in range(2):
        np.testing.assert_allclose(grads[i], fd[i], rtol=1e-6, atol=1e-8)


def test_foreach_multiple_inputs_states_and_free_values():
    """Two sequences, two states, a value computed before the loop read inside it."""
    rng = np.random.RandomState(2)
    a, b = rng.rand(4, 2), rng.rand(4, 2)
    s0, s1, free = rng.rand(2), rng.rand(2), rng.rand(2)

    class Net(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b, s0, s1, free):
            shift = free * 3

            def step(data, states):
                out = data[0] * 2 + data[1] + states[0] + shift
                return [out, out * states[1]], [out, states[1] + 1]
            return F.contrib.foreach(step, [a, b], [s0, s1])

    ref_outs0, ref_outs1, st0, st1 = [], [], s0, s1
    for t in range(4):
        out = a[t] * 2 + b[t] + st0 + free * 3
        ref_outs0.append(out)
        ref_outs1.append(out * st1)
        st0, st1 = out, st1 + 1
    args = [nd.array(v, dtype="float64") for v in (a, b, s0, s1, free)]
    for hybridize in (False, True):
        net = Net()
        if hybridize:
            net.hybridize()
        (o0, o1), (f0, f1) = net(*args)
        np.testing.assert_allclose(o0.asnumpy(), np.stack(ref_outs0), rtol=1e-12)
        np.testing.assert_allclose(o1.asnumpy(), np.stack(ref_outs1), rtol=1e-12)
        np.testing.assert_allclose(f0.asnumpy(), st0, rtol=1e-12)
        np.testing.assert_allclose(f1.asnumpy(), st1, rtol=1e-12)


def test_foreach_nested_hybridized_equals_eager():
    class Net(gluon.HybridBlock):
        def hybrid_forward(self, F, x, s):
            def inner(row, states):
                v = row + states[0]
                return v, [v]

            def outer(mat, states):
                outs, st = F.contrib.foreach(inner, mat, states)
                return F.sum(outs, axis=0), st
            return F.contrib.foreach(outer, x, [s])

    x = nd.array(np.arange(24.0).reshape(2, 3, 4), dtype="float64")
    s = nd.array(np.ones(4), dtype="float64")
    eager = Net()
    hyb = Net()
    hyb.hybridize()
    (eo, (es,)), (ho, (hs,)) = eager(x, s), hyb(x, s)
    np.testing.assert_allclose(ho.asnumpy(), eo.asnumpy())
    np.testing.assert_allclose(hs.asnumpy(), es.asnumpy())
    text = hyb._cached_op.graph.text()
    assert text.count("subgraph 0:") == 2  # the inner loop's graph sits inside the outer one's


def test_foreach_1d_data_steps_are_length_one_arrays():
    """MXNet slices a 1-D sequence into (1,)-shaped steps, eagerly and in graphs."""
    data = nd.array([1.0, 2.0, 3.0])
    for F in (nd, mx.sym):
        if F is nd:
            outs, st = nd.contrib.foreach(lambda d, s: (d * s[0], [s[0] + d]), data, [nd.ones((1,))])
        else:
            o, f = mx.sym.contrib.foreach(lambda d, s: (d * s[0], [s[0] + d]), mx.sym.var("d"), [mx.sym.var("s")])
            outs, st = mx.sym.Group([o] + f).eval(d=data, s=nd.ones((1,)))
            st = [st]
        np.testing.assert_allclose(outs.asnumpy(), [[1.0], [4.0], [12.0]])
        np.testing.assert_allclose(st[0].asnumpy(), [7.0])


def test_foreach_empty_sequence_in_a_graph():
    o, f = mx.sym.contrib.foreach(lambda d, s: (d * 2, [s[0] + d]), mx.sym.var("d"), [mx.sym.var("s")])
    with mx.np_shape(True):  # zero-size arrays exist in NumPy shape semantics only
        outs, st = mx.sym.Group([o] + f).eval(d=nd.zeros((0, 3)), s=nd.ones((3,)))
    assert outs.shape == (0, 3)
    np.testing.assert_allclose(st.asnumpy(), np.ones(3))


# ---- while_loop -----------------------------------------------------------------------------
class WhileNet(gluon.HybridBlock):
    def __init__(self, max_iterations, **kw):
        super().__init__(**kw)
        self.max_iterations = max_iterations
        with self.name_scope():
            self.scale = self.params.get("scale", shape=(3,), init=mx.init.Constant(0.5))

    def hybrid_forward(self, F, x, scale):
        def cond(v, n):
            return F.sum(F.abs(v)) < 20

        def func(v, n):
            nv = F.broadcast_mul(v, scale) + v * 2
            return [nv * 3], [nv, n + 1]
        outs, final = F.contrib.while_loop(cond, func, [x, F.zeros_like(F.sum(x, axis=0, keepdims=True))],
                                           max_iterations=self.max_iterations)
        return outs[0], final[0], final[1]


def _while_reference(x, scale, max_iterations):
    v, n, rows = x, np.zeros((1, x.shape[1])), []
    while len(rows) < max_iterations and np.abs(v).sum() < 20:
        v = v * scale + v * 2
        rows.append(v * 3)
        n = n + 1
    stacked = np.zeros((max_iterations,) + x.shape)
    if rows:
        stacked[:len(rows)] = np.stack(rows)
    return stacked, v, n, len(rows)


@pytest.mark.parametrize("max_iterations", [10, 3])
def test_while_loop_eager_equals_hybridized_equals_numpy(max_iterations):
    x = np.array([[0.1, -0.2, 0.3], [0.05, 0.1, -0.1]])
    ref = _while_reference(x, 0.5, max_iterations)
    assert ref[3] == min(max_iterations, 4)  # four steps reach the limit: max_iterations=10 pads
    for hybridize in (False, True):
        net = WhileNet(max_iterations)
        net.initialize()
        net.cast("float64")
        if hybridize:
            net.hybridize()
        outs, v, n = net(nd.array(x, dtype="float64"))
        assert outs.shape == (max_iterations, 2, 3)
        np.testing.assert_allclose(outs.asnumpy(), ref[0], rtol=1e-12)  # rows past the end: zeros
        np.testing.assert_allclose(v.asnumpy(), ref[1], rtol=1e-12)
        np.testing.assert_allclose(n.asnumpy(), ref[2])


def test_while_loop_gradients_eager_equal_hybridized_and_finite_differences():
    x = np.array([[0.1, -0.2, 0.3], [0.05, 0.1, -0.1]])
    heads_np = [np.random.RandomState(3).uniform(-1, 1, s) for s in [(10, 2, 3), (2, 3)]]
    grads = []
    for hybridize in (False, True):
        net = WhileNet(10)
        net.initialize()
        net.cast("float64")
        if hybridize:
            net.hybridize()
        xa = nd.array(x, dtype="float64")
        xa.attach_grad()
        with autograd.record():
            outs, v, _ = net(xa)
        autograd.backward([outs, v], [nd.array(h, dtype="float64") for h in heads_np])
        grads.append((xa.grad.asnumpy(), net.scale.grad().asnumpy()))

    def objective(xv, sv):
        stacked, v, _, _ = _while_reference(xv, sv, 10)
        return float((stacked * heads_np[0]).sum() + (v * heads_np[1]).sum())

    scale = np.full(3, 0.5)
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-12)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-12)
    np.testing.assert_allclose(grads[1][0], central_differences(lambda v: objective(v, scale), x), rtol=1e-6)
    np.testing.assert_allclose(grads[1][1], central_differences(lambda v: objective(x, v), scale), rtol=1e-6)


def test_while_loop_that_never_runs():
    """No step: the final loop variables are the initial ones; a graph's step outputs are
    zeros of the inferred shape, the eager form has none (both as MXNet)."""
    cond = lambda i, s: i < 0  # noqa: E731
    func = lambda i, s: ([i * s], [i + 1, s + i])  # noqa: E731
    init = [nd.array([3.0]), nd.array([1.0])]
    outs, (i, s) = nd.contrib.while_loop(cond, func, init, max_iterations=4)
    assert outs == [] and i.asscalar() == 3 and s.asscalar() == 1
    o, final = mx.sym.contrib.while_loop(cond, func, [mx.sym.var("i"), mx.sym.var("s")], max_iterations=4)
    res = mx.sym.Group(o + final).eval(i=init[0], s=init[1])
    assert res[0].shape == (4, 1) and not res[0].asnumpy().any()
    assert res[1].asscalar() == 3 and res[2].asscalar() == 1
    res[1][:] = 7  # outputs own their memory, as eager results do
    assert init[0].asscalar() == 3


def test_while_loop_free_variable_equal_to_a_loop_variable_keeps_its_value():
    """``func`` reads ``x`` both as loop variable and from outside: the outside one stays."""
    x = mx.sym.var("x")
    _, (final,) = mx.sym.contrib.while_loop(lambda v: F_sum(v) < 100, lambda v: ([], [v + x]), [x],
                                             max_iterations=100)
    res = final.eval(x=nd.array([1.0, 2.0]))[0]
    np.testing.assert_allclose(res.asnumpy(), [34.0, 68.0])  # 1+1+...: 34 * x once the sum passes 100


def F_sum(v):
    return mx.sym.sum(v)


# ---- cond -------------------------------------------------------------------------------------
class CondNet(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.w = self.params.get("w", shape=(2, 3), init=mx.init.Uniform(1.0))

    def hybrid_forward(self, F, x, w):
        return F.contrib.cond(F.sum(x) > 0, lambda: [x * w, F.sin(x)], lambda: [x - w, F.cos(x) * w])


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_eager_equals_hybridized_equals_numpy(sign):
    rng = np.random.RandomState(4)
    x = sign * rng.uniform(0.1, 1, (2, 3))
    results = []
    for hybridize in (False, True):
        net = CondNet(prefix="c_")
        net.initialize()
        net.cast("float64")
        net.w.set_data(nd.array(np.arange(6.0).reshape(2, 3) / 6, dtype="float64"))
        if hybridize:
            net.hybridize()
        xa = nd.array(x, dtype="float64")
        xa.attach_grad()
        with autograd.record():
            a, b = net(xa)
        autograd.backward([a, b])
        results.append((a.asnumpy(), b.asnumpy(), xa.grad.asnumpy(), net.w.grad().asnumpy()))
    w = np.arange(6.0).reshape(2, 3) / 6
    if sign > 0:
        want = (x * w, np.sin(x), w + np.cos(x), x)
    else:
        want = (x - w, np.cos(x) * w, 1 - np.sin(x) * w, -1 + np.cos(x))
    for got in results:
        for g, wv in zip(got, want):
            np.testing.assert_allclose(g, wv, rtol=1e-12, atol=1e-14)


# ---- clear errors -----------------------------------------------------------------------------
def test_body_with_wrong_structure_is_named():
    with pytest.raises(ValueError, match="must return a pair"):
        nd.contrib.foreach(lambda d, s: d, nd.ones((2, 3)), [nd.ones(3)])
    with pytest.raises(ValueError, match="must return a pair"):
        mx.sym.contrib.foreach(lambda d, s: d, mx.sym.var("d"), [mx.sym.var("s")])
    with pytest.raises(ControlFlowError, match="same .nested. list structure"):
        mx.sym.contrib.foreach(lambda d, s: (d, s[0] + d), mx.sym.var("d"), [mx.sym.var("s")])
    with pytest.raises(ValueError, match="number of loop_vars"):
        mx.sym.contrib.while_loop(lambda a, b: a < 1, lambda a, b: ([], [a]), [mx.sym.var("a"), mx.sym.var("b")],
                                  max_iterations=3)
    with pytest.raises(ValueError, match="Number of outputs differs"):
        mx.sym.contrib.cond(mx.sym.var("p"), lambda: [mx.sym.var("a")], lambda: [mx.sym.var("a")] * 2)
    with pytest.raises(ValueError, match="max_iterations should be specified"):
        nd.contrib.while_loop(lambda a: a < 1, lambda a: ([], [a]), [nd.ones(1)])


def test_unused_state_is_an_assertion_as_in_mxnet():
    with pytest.raises(AssertionError, match="state 0 is not used"):
        mx.sym.contrib.foreach(lambda d, s: (d, [d * 2]), mx.sym.var("d"), [mx.sym.var("s")])
    with pytest.raises(MXNetError, match="state"):
        mx.sym.contrib.foreach(lambda d, s: (d, [d * 2]), mx.sym.var("d"), [mx.sym.var("s")])


def test_state_changing_shape_is_named_eager_and_hybridized():
    step = lambda d, s: (d, [mx.nd.concat(s[0], d, dim=0) if isinstance(d, nd.NDArray)  # noqa: E731
                              else mx.sym.concat(s[0], d, dim=0)])
    with pytest.raises(MXNetError, match="state 0 changes from shape"):
        nd.contrib.foreach(step, nd.ones((3, 2)), [nd.ones(2)])
    o, f = mx.sym.contrib.foreach(step, mx.sym.var("d"), [mx.sym.var("s")])
    with pytest.raises(MXNetError, match="loop state 0 comes in with shape"):
        f[0].infer_shape(d=(3, 2), s=(2,))
    with pytest.raises(MXNetError, match="state 0 changes from shape"):
        f[0].eval(d=nd.ones((3, 2)), s=nd.ones(2))


def test_non_scalar_condition_is_named():
    with pytest.raises(MXNetError, match="must be a scalar"):
        nd.contrib.while_loop(lambda a: a < 5, lambda a: ([], [a + 1]), [nd.ones(2)], max_iterations=3)
    with pytest.raises(MXNetError, match="pred must be a scalar"):
        nd.contrib.cond(nd.ones(2), lambda: nd.ones(1), lambda: nd.zeros(1))
    _, (f,) = mx.sym.contrib.while_loop(lambda a: a < 5, lambda a: ([], [a + 1]), [mx.sym.var("a")],
                                        max_iterations=3)
    with pytest.raises(MXNetError, match="must be a scalar"):
        f.infer_shape(a=(2,))
    with pytest.raises(MXNetError, match="must be a scalar"):
        f.eval(a=nd.ones(2))
    out = mx.sym.contrib.cond(mx.sym.var("p"), lambda: mx.sym.var("a") * 2, lambda: mx.sym.var("a"))
    with pytest.raises(MXNetError, match="the condition must be a scalar"):
        out.eval(p=nd.ones(3), a=nd.ones(1))


def test_operators_need_their_subgraphs():
    with pytest.raises(MXNetError, match="use mx.nd.contrib.foreach"):
        nd._internal._foreach(nd.ones((2, 2)), num_outputs=1, num_out_data=1, in_state_locs=[],
                              in_data_locs=[0], remain_locs=[])
    with pytest.raises(MXNetError, match="mx.sym.contrib.while_loop"):
        mx.sym._internal._while_loop(mx.sym.var("a"), num_outputs=1, num_out_data=0, max_iterations=2,
                                     cond_input_locs=[0], func_input_locs=[0], func_var_locs=[0])
