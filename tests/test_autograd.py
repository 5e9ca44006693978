"""mx.autograd against MXNet 1.9.1 semantics: recording scopes, grad_req write/add/null,
backward/grad (head gradients, retain_graph, higher order), Function, error messages.
Gradients are checked against analytic values and float64 finite differences."""
import gc
import time

import numpy as np
import pytest

from hybridnet import autograd, nd
from hybridnet.base import MXNetError

from finite_differences import central_differences


def test_scopes_and_flags():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
        with autograd.predict_mode():
            assert autograd.is_recording() and not autograd.is_training()
        assert autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
    with autograd.train_mode():
        assert autograd.is_training() and not autograd.is_recording()
    assert not autograd.is_recording() and not autograd.is_training()
    assert autograd.set_recording(True) is False
    assert autograd.set_recording(False) is True
    assert autograd.set_training(True) is False
    assert autograd.set_training(False) is True


def test_scope_restores_on_exception():
    with pytest.raises(RuntimeError):
        with autograd.record():
            raise RuntimeError("boom")
    assert not autograd.is_recording() and not autograd.is_training()


def test_backward_matches_finite_differences():
    rng = np.random.RandomState(0)
    a = rng.uniform(0.5, 1.5, (2, 3))
    b = rng.uniform(0.5, 1.5, (2, 3))
    x, y = nd.array(a, dtype="float64"), nd.array(b, dtype="float64")
    x.attach_grad()
    y.attach_grad()
    with autograd.record():
        z = nd.exp(x) * y / (x + 2) - nd.sqrt(y) ** 3
    z.backward()
    fx = lambda v: np.exp(v) * b / (v + 2) - np.sqrt(b) ** 3  # noqa: E731
    fy = lambda v: np.exp(a) * v / (a + 2) - np.sqrt(v) ** 3  # noqa: E731
    np.testing.assert_allclose(x.grad.asnumpy(), central_differences(lambda v: fx(v).sum(), a), rtol=1e-6)
    np.testing.assert_allclose(y.grad.asnumpy(), central_differences(lambda v: fy(v).sum(), b), rtol=1e-6)


def test_grad_req_write_add_null():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()  # write
    for k in (2.0, 5.0):
        with autograd.record():
            y = x * k
        y.backward()
        np.testing.assert_array_equal(x.grad.asnumpy(), [k] * 3)  # overwritten
    x.attach_grad("add")
    assert x.grad.asnumpy().sum() == 0
    for _ in range(3):
        with autograd.record():
            y = x * x
        y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), 3 * 2 * np.array([1.0, 2.0, 3.0]))
    z = nd.array([1.0, 2.0])
    z.attach_grad("null")
    w = nd.array([1.0, 1.0])
    w.attach_grad()
    with autograd.record():
        out = z * w
    out.backward()
    np.testing.assert_array_equal(w.grad.asnumpy(), [1, 2])
    assert z.grad is None or z.grad.asnumpy().sum() == 0
    with pytest.raises(ValueError):
        x.attach_grad("sometimes")


def test_buffer_identity_and_unreached_variables():
    x, u = nd.array([1.0, 2.0]), nd.array([3.0])
    x.attach_grad()
    u.attach_grad()
    g = x.grad
    u.grad[:] = 7  # a variable the head does not depend on keeps its buffer
    with autograd.record():
        y = x * 3
    y.backward()
    assert x.grad is g
    np.testing.assert_array_equal(g.asnumpy(), [3, 3])
    np.testing.assert_array_equal(u.grad.asnumpy(), [7])


def test_head_grads_and_multiple_heads():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x * x
        z = x * 10
    y.backward(nd.array([1.0, 0.5]))
    np.testing.assert_array_equal(x.grad.asnumpy(), [2, 2])
    with autograd.record():
        y = x * x
        z = x * 10
    autograd.backward([y, z], [nd.array([1.0, 1.0]), None])
    np.testing.assert_array_equal(x.grad.asnumpy(), [12, 14])
    with autograd.record():
        y = x * x
    with pytest.raises(MXNetError, match="shape"):
        y.backward(nd.ones((1,)))
    with pytest.warns(UserWarning, match="larger than the head"):  # MXNet reads the first 2
        y.backward(nd.ones((3,)))


def test_backward_inside_record_and_train_flag():
    x = nd.array([2.0])
    x.attach_grad()
    with autograd.record():
        y = x * x * x
        y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [12])


def test_nothing_recorded_outside_record():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    y = x * 2 + nd.exp(x)
    assert y.to_torch().grad_fn is None and not y.to_torch().requires_grad
    with pytest.raises(MXNetError, match="record"):
        y.backward()
    with autograd.record():
        with autograd.pause():
            p = x * 2
    assert p.to_torch().grad_fn is None


def test_head_without_variables_errors():
    a = nd.array([1.0])
    with autograd.record():
        b = a * 2
    with pytest.raises(MXNetError, match="not in a computational graph"):
        b.backward()


def test_retain_graph():
    x = nd.array([1.0, 2.0])
    x.attach_grad("add")
    with autograd.record():
        y = x * x
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [4, 8])
    with pytest.raises(MXNetError, match="retain_graph=True"):
        y.backward()


def test_grad_function_and_higher_order():
    x = nd.array([1.0, 2.0, 3.0], dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = x ** 3
    dx = autograd.grad(y, x)
    assert isinstance(dx, list) and len(dx) == 1  # MXNet returns a list
    np.testing.assert_allclose(dx[0].asnumpy(), 3 * x.asnumpy() ** 2)
    assert x.grad.asnumpy().sum() == 0  # grad() leaves buffers alone
    with autograd.record():
        y = x ** 3
        d1 = autograd.grad(y, [x], create_graph=True)[0]
    d1.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * x.asnumpy())  # d2y/dx2
    with autograd.record():
        y = nd.sin(x)
        d1 = autograd.grad(y, [x], create_graph=True, retain_graph=True)[0]
        d2 = autograd.grad(d1, [x], create_graph=True)[0]
    d2.backward()
    np.testing.assert_allclose(d2.asnumpy(), -np.sin(x.asnumpy()), rtol=1e-12)
    np.testing.assert_allclose(x.grad.asnumpy(), -np.cos(x.asnumpy()), rtol=1e-12)


def test_grad_unused_variable_is_zero():
    x, u = nd.array([1.0]), nd.array([5.0, 6.0])
    x.attach_grad()
    u.attach_grad()
    with autograd.record():
        y = x * 2
    gx, gu = autograd.grad(y, [x, u])
    assert gx.asnumpy().tolist() == [2] and gu.asnumpy().tolist() == [0, 0]


def test_mark_variables():
    x = nd.array([1.0, 2.0])
    g = nd.zeros((2,))
    autograd.mark_variables(x, g)
    with autograd.record():
        y = x * x
    y.backward()
    assert x.grad is g
    np.testing.assert_array_equal(g.asnumpy(), [2, 4])
    a, b = nd.array([1.0]), nd.array([2.0])
    ga, gb = nd.zeros((1,)), nd.ones((1,))
    autograd.mark_variables([a, b], [ga, gb], ["write", "add"])
    with autograd.record():
        z = a * b
    z.backward()
    assert ga.asnumpy().tolist() == [2] and gb.asnumpy().tolist() == [2]
    with pytest.raises(MXNetError):
        autograd.mark_variables([a], [nd.zeros((3,))])


def test_gradients_flow_through_indexing():
    a = np.arange(12, dtype=np.float64).reshape(3, 4) / 10
    x = nd.array(a, dtype="float64")
    x.attach_grad()
    with autograd.record():
        col = x[:, 0:1].T.reshape(-1)  # copy (T) then view (reshape)
        y = x[1] * 2 + col.sum()  # (4,)
        z = y * y + x[[0, 2], 1:3].sum() + x[nd.array(a > 1.05, dtype="bool")].sum()
    z.backward()
    y_np = a[1] * 2 + a[:, 0].sum()
    want = np.zeros_like(a)
    want[1] += 2 * 2 * y_np
    want[:, 0] += (2 * y_np).sum()
    want[[0, 2], 1:3] += 4  # a (1,) term broadcast over the 4 elements of z
    want[a > 1.05] += 4
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-12)


def test_setitem_under_record_is_refused_as_in_mxnet_but_whole_copies_flow():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        buf = nd.zeros((2, 3))
        with pytest.raises(MXNetError, match="Inplace operations"):
            buf[0] = x * 2  # MXNet: in-place writes are not supported when recording
        with pytest.raises(MXNetError, match="Inplace operations"):
            buf[1, 1:] = x[0:2] * x[0:2]
        whole = nd.zeros((3,))
        whole[:] = x * 2  # a whole-array copy is recorded (MXNet's copyto)
        out = whole * 1.0
    out.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [2, 2, 2])
    with autograd.record():
        with pytest.raises(MXNetError, match="in place"):
            x[0] = 5
        with pytest.raises(MXNetError, match="in place"):
            x += 1


def test_inplace_after_use_is_reported():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x * 1.0
        z = y * y  # saves y for backward
        y += 1
    with pytest.raises(MXNetError, match="in place"):
        z.backward()


class Sigmoid(autograd.Function):
    def forward(self, x):
        y = 1 / (1 + nd.exp(-x))
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        (y,) = self.saved_tensors
        return dy * y * (1 - y)


class MulTwo(autograd.Function):
    """Two inputs, two outputs, deliberately wrong backward scale to prove it is used."""

    def forward(self, a, b):
        return a * b, a + b

    def backward(self, d_prod, d_sum):
        a, b = self._inputs
        return (d_prod * b + d_sum) * 10, d_prod * a + d_sum

    def __call__(self, a, b):
        self._inputs = (a.detach(), b.detach())
        return super().__call__(a, b)


def test_function_custom_backward():
    a = np.array([-1.0, 0.0, 2.0])
    x = nd.array(a, dtype="float64")
    x.attach_grad()
    with autograd.record():
        m = Sigmoid()(x)
    m.backward()
    s = 1 / (1 + np.exp(-a))
    np.testing.assert_allclose(m.asnumpy(), s)
    np.testing.assert_allclose(x.grad.asnumpy(), s * (1 - s))
    p, q = nd.array([2.0]), nd.array([3.0])
    p.attach_grad()
    q.attach_grad()
    with autograd.record():
        prod, tot = MulTwo()(p, q)
        out = prod + tot
    out.backward()
    assert p.grad.asnumpy().tolist() == [(3 + 1) * 10] and q.grad.asnumpy().tolist() == [2 + 1]


def test_function_outside_record_and_single_use():
    f = Sigmoid()
    y = f(nd.array([0.0]))
    assert y.asnumpy().tolist() == [0.5] and y.to_torch().grad_fn is None
    with pytest.raises(MXNetError, match="once"):
        f(nd.array([0.0]))

    class Bad(autograd.Function):
        def forward(self, x):
            return x * 2

        def backward(self, dy):
            return dy, dy

    x = nd.array([1.0])
    x.attach_grad()
    with autograd.record():
        y = Bad()(x)
    with pytest.raises(MXNetError, match="exactly as many"):
        y.backward()


def test_freed_variables_and_many_variables():
    keep = []
    for i in range(1000):
        v = nd.array([float(i)])
        v.attach_grad()
        if i % 2:
            keep.append(v)
    gc.collect()
    assert len(autograd.live_variables()) >= len(keep)
    with autograd.record():
        s = keep[0] * 1.0
        for v in keep[1:]:
            s = s + v * 2.0
    t0 = time.perf_counter()
    s.backward()
    elapsed = time.perf_counter() - t0
    assert keep[0].grad.asnumpy().tolist() == [1.0]
    assert all(v.grad.asnumpy().tolist() == [2.0] for v in keep[1:])
    assert elapsed < 2.0
    del keep, s, v
    gc.collect()
    assert len(autograd.live_variables()) < 10


def test_get_symbol_rebuilds_the_recorded_computation():
    x, z = nd.array([1.5, -2.0]), nd.array([0.5, 3.0])
    x.attach_grad()
    z.attach_grad()
    with autograd.record():
        y = nd.exp(x * x) + 2 * z - 1
    s = autograd.get_symbol(y)
    args = s.list_arguments()
    assert len(args) == 2
    xv, zv = np.array([0.3, 0.7], np.float32), np.array([-1.0, 2.0], np.float32)
    bound = dict(zip(args, [nd.array(xv), nd.array(zv)]))
    out = s.eval(**bound)[0].asnumpy()
    np.testing.assert_allclose(out, np.exp(xv * xv) + 2 * zv - 1, rtol=1e-6)
    # an array never recorded is a variable on its own; a re-attached one starts afresh
    assert autograd.get_symbol(nd.array([1.0])).list_arguments() != []
    x.attach_grad()
    assert len(autograd.get_symbol(x).list_arguments()) == 1
    with pytest.raises(TypeError):
        autograd.get_symbol(np.ones(2))


def test_backward_twice_without_retain_graph_fails():
    x = nd.ones((2, 2))
    x.attach_grad()
    with autograd.record():
        y = x + 1
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.ones((2, 2)))
    with pytest.raises(MXNetError, match="retain_graph=True"):
        y.backward()


def test_attach_grad_on_int_array_gives_an_int_gradient():
    # MXNet differentiates integer arrays (tests/test_mxnet_peer_semantics.py has more)
    x = nd.array([1, 2], dtype="int32")
    x.attach_grad()
    with autograd.record():
        y = x * 3
    y.backward()
    assert x.grad.dtype == np.int32
    np.testing.assert_array_equal(x.grad.asnumpy(), [3, 3])


def test_higher_order_grad_of_constant_derivative_is_zero():
    x = nd.array([0.5, -1.5, 2.0])
    x.attach_grad()
    for fn in (lambda v: nd.radians(v), lambda v: nd.abs(v), lambda v: v * 3 + 1):
        with autograd.record():
            y = fn(x)
            g1 = autograd.grad(y, x, head_grads=nd.ones_like(x), create_graph=True, retain_graph=True)[0]
            g2 = autograd.grad(g1, x, head_grads=nd.ones_like(x), create_graph=True, retain_graph=True)[0]
        np.testing.assert_array_equal(g2.asnumpy(), np.zeros(3))
        g1.backward()
        np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros(3))
    with autograd.record():
        y = nd.abs(x)
    np.testing.assert_array_equal(autograd.grad(y, x)[0].asnumpy(), np.sign(x.asnumpy()))


def test_backward_runs_torch_engine_directly():
    """autograd_engine calls torch's engine below torch.autograd.backward/grad (their argument
    checks import sympy on first use); a torch without that private entry point would fall back
    to the public functions silently, so the pinned torch must have it."""
    from hybridnet import autograd_engine
    assert autograd_engine._ENGINE_RUN is not None
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x * x
    y.backward(nd.array([1.0, 0.5]))  # a head gradient: checked against the head's shape
    assert x.grad.asnumpy().tolist() == [2.0, 2.0]
    with autograd.record():
        y = x * x
    with pytest.raises(MXNetError, match="shape"):
        y.backward(nd.ones((1,)))  # smaller than the head (a larger one is read from its start)
