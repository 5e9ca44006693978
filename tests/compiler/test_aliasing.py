"""Outputs of hybridized blocks and Executors own their memory, as eager results do.

Writing into an output must not change the input, a parameter or another output; the check
costs nothing for ordinary graphs (no output may alias) and copies only outputs that do share.
"""
import numpy as np
import pytest
import torch

from hybridnet import autograd, gluon, nd, sym
from hybridnet.compiler.aliasing import OutputOwnership
from hybridnet.gluon import nn
from hybridnet.ops import registry

# blocks here return only x or only the weight on purpose
pytestmark = pytest.mark.filterwarnings("ignore:.*not used by any computation")


class Returns(gluon.HybridBlock):
    """hybrid_forward is ``fn(F, x, weight)``; the block owns a (2, 3) weight."""

    def __init__(self, fn, **kw):
        super().__init__(**kw)
        self.fn = fn
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(2, 3), init="ones")

    def hybrid_forward(self, F, x, weight):
        return self.fn(F, x, weight)


CASES = {
    "reshape": lambda F, x, w: F.reshape(x, shape=(3, 2)),
    "Flatten": lambda F, x, w: F.Flatten(F.expand_dims(x, axis=2)),
    "expand_dims": lambda F, x, w: F.expand_dims(x, axis=0),
    "transpose": lambda F, x, w: F.transpose(x),
    "slice_axis": lambda F, x, w: F.slice_axis(x, axis=0, begin=0, end=1),
    "identity": lambda F, x, w: F.identity(x),
    "input as-is": lambda F, x, w: x,
    "Cast to its own dtype": lambda F, x, w: F.Cast(x, dtype="float32"),
    "Dropout (predict mode)": lambda F, x, w: F.Dropout(x, p=0.5),
    "the weight": lambda F, x, w: w,
    "reshaped weight": lambda F, x, w: F.reshape(w, shape=(-1,)),
}


def _block(fn):
    b = Returns(fn)
    b.initialize()
    b.hybridize()
    return b


@pytest.mark.parametrize("case", sorted(CASES))
def test_hybridized_output_never_shares_memory_with_input_or_weight(case):
    b = _block(CASES[case])
    x = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    x0, w0 = x.asnumpy().copy(), b.weight.data().asnumpy().copy()
    eager = Returns(CASES[case])
    eager.initialize()
    expected = eager(x).asnumpy()
    for _ in range(2):  # the first call builds, the second takes the fast path
        out = b(x)
        np.testing.assert_array_equal(out.asnumpy(), expected)
        out[:] = -100.0
        np.testing.assert_array_equal(x.asnumpy(), x0)
        np.testing.assert_array_equal(b.weight.data().asnumpy(), w0)


def test_the_same_value_twice_and_a_view_of_another_output_are_separate_arrays():
    b = _block(lambda F, x, w: (F.relu(x), F.relu(x), F.reshape(F.relu(x), shape=(-1,))))
    x = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    for _ in range(2):
        y1, y2, y3 = b(x)
        y1[:] = 7.0
        np.testing.assert_array_equal(y2.asnumpy(), np.maximum(x.asnumpy(), 0))
        np.testing.assert_array_equal(y3.asnumpy(), np.maximum(x.asnumpy(), 0).ravel())
        y2[:] = 8.0
        np.testing.assert_array_equal(y3.asnumpy(), np.maximum(x.asnumpy(), 0).ravel())


def test_gradients_flow_through_copied_outputs():
    b = _block(lambda F, x, w: F.reshape(x, shape=(-1,)))
    x = nd.array(np.ones((2, 3)))
    x.attach_grad()
    with autograd.record():
        y = b(x) * nd.arange(6)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.arange(6).reshape(2, 3))


def test_ordinary_graphs_check_nothing_at_run_time():
    net = nn.HybridSequential()
    net.add(nn.Dense(4, activation="relu"), nn.Dense(2), nn.Flatten())
    net.initialize()
    net.hybridize()
    net(nd.ones((3, 5)))
    # the outputs are made by Dense (fresh memory), Flatten of an intermediate does not reach a
    # variable: no run-time check, no copy
    assert net._cached_op.latest()._own is None
    b = _block(CASES["reshape"])
    b(nd.ones((2, 3)))
    assert b._cached_op.latest()._own is not None


def test_output_ownership_analysis():
    x, w = sym.var("x"), sym.var("w")
    fc = sym.FullyConnected(x, w, num_hidden=2, no_bias=True)
    cases = [
        (fc, ()),
        (sym.reshape(fc, shape=(-1,)), ()),
        (sym.reshape(x, shape=(-1,)), ((0, (0,), ()),)),
        (sym.Group([fc, sym.reshape(fc, shape=(-1,))]), ((1, (), (0,)),)),
        (sym.Group([sym.transpose(w), sym.relu(x)]), ((0, (1,), ()),)),
    ]
    for out, checks in cases:
        g = out._graph()
        inputs = [v for name in ("x", "w") for v in g.variables() if v.name == name]
        assert OutputOwnership(g, inputs).checks == checks, out.list_outputs()


def test_executor_outputs_own_their_memory():
    a = sym.var("a")
    x = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    for out in (sym.reshape(a, shape=(3, 2)), sym.identity(a), sym.Group([sym.relu(a), sym.relu(a)])):
        exe = out.bind(args={"a": x.copy()})
        outs = exe.forward()
        outs[0][:] = -1.0
        np.testing.assert_array_equal(exe.arg_dict["a"].asnumpy(), x.asnumpy())
        if len(outs) == 2:
            np.testing.assert_array_equal(outs[1].asnumpy(), x.asnumpy())
    # training through a copied output still writes the argument's gradient
    grad = nd.zeros((2, 3))
    exe = sym.reshape(a, shape=(-1,)).bind(args={"a": x.copy()}, args_grad={"a": grad})
    exe.forward(is_train=True)
    exe.backward(nd.arange(6))
    np.testing.assert_array_equal(grad.asnumpy(), np.arange(6).reshape(2, 3))


def test_eager_operators_return_new_memory_and_views_come_only_from_methods():
    """MXNet 1.x: operators (nd.reshape, nd.transpose...) write new arrays; the reshape method,
    basic slicing of a contiguous block and detach() share memory."""
    x = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    for y in (nd.reshape(x, shape=(3, 2)), nd.transpose(x), nd.expand_dims(x, axis=0),
              nd.Flatten(x), nd.identity(x), nd.Cast(x, dtype="float32"), nd.Dropout(x)):
        y[:] = -1.0
        assert x.asnumpy().min() == 0.0
    for view in (x.reshape((3, 2)), x[1], x[0:1], x.detach()):
        view[:] = 5.0
        assert x.asnumpy().max() == 5.0
        x[:] = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))


def _aliases(op, with_grad):
    """Whether any of ``op``'s samples returns an input or memory of one."""
    from ops.harness import prepare_inputs  # tests/ is on sys.path (tests/ops is a package)
    for s in op.samples():
        ins = [None if a is None else torch.from_numpy(np.ascontiguousarray(a))
               for a in prepare_inputs(s, np.float32)]
        if with_grad:
            ins = [t.clone().requires_grad_(True) if t is not None and t.is_floating_point() else t
                   for t in ins]
        attrs = dict(s.attrs)
        if op.train_aware:
            attrs["is_train"] = bool(s.train)
        try:
            with torch.set_grad_enabled(with_grad):
                res = op.kernel(*ins, **attrs)
        except Exception:  # samples meant for other dtypes: not this test's business
            continue
        outs = [res] if isinstance(res, torch.Tensor) else [r for r in res if isinstance(r, torch.Tensor)]
        ptrs = {t.untyped_storage().data_ptr() for t in ins if t is not None and t.numel()}
        for o in outs:
            if any(o is t for t in ins if t is not None) or \
                    (o.numel() and o.untyped_storage().data_ptr() in ptrs):
                return True
    return False


def test_returns_view_covers_every_operator_that_returns_input_memory():
    missing = [op.name for op in registry.all_ops()
               if op.samples is not None and not op.returns_view
               and (_aliases(op, False) or _aliases(op, True))]
    assert not missing, f"declare returns_view=True where these operators are registered: {missing}"
