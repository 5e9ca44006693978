"""Custom Python operators (mx.operator): eager with autograd vs NumPy, hybridized == eager,
Executor, JSON round trip and export/imports of a graph with a Custom node, errors."""
from __future__ import annotations

import json

import numpy as np
import pytest

import hybridnet as mx
from hybridnet.base import MXNetError
from hybridnet.gluon import nn


class _ScaledSquare(mx.operator.CustomOp):
    """y = scale * x**2 (+ x * w when a second argument is given); aux counts forward calls."""

    def __init__(self, scale: float, two: bool):
        super().__init__()
        self.scale, self.two = scale, two

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0]
        y = self.scale * x * x
        if self.two:
            y = y + x * in_data[1]
        self.assign(out_data[0], req[0], y)
        self.assign(out_data[1], req[1], x.sum(axis=1, keepdims=True))
        if aux:
            aux[0][:] += 1

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        x, g, gs = in_data[0], out_grad[0], out_grad[1]
        dx = 2 * self.scale * x * g + gs.broadcast_to(x.shape)
        if self.two:
            dx = dx + in_data[1] * g
            self.assign(in_grad[1], req[1], x * g)
        self.assign(in_grad[0], req[0], dx)


@mx.operator.register("test_scaled_square")
class _ScaledSquareProp(mx.operator.CustomOpProp):
    def __init__(self, scale="1.0", two="False", counter="False"):
        super().__init__(need_top_grad=True)
        assert isinstance(scale, str) and isinstance(two, str)  # MXNet passes strings
        self.scale, self.two, self.counter = float(scale), two == "True", counter == "True"

    def list_arguments(self):
        return ["data", "weight"] if self.two else ["data"]

    def list_outputs(self):
        return ["square", "rowsum"]

    def list_auxiliary_states(self):
        return ["calls"] if self.counter else []

    def infer_shape(self, in_shape):
        ins = [in_shape[0]] * len(self.list_arguments())
        aux = [[1]] if self.counter else []
        return ins, [in_shape[0], [in_shape[0][0], 1]], aux

    def create_operator(self, ctx, shapes, dtypes):
        assert isinstance(ctx, mx.Context)
        return _ScaledSquare(self.scale, self.two)


def _np_forward(x, w=None, scale=1.0):
    y = scale * x * x + (x * w if w is not None else 0)
    return y, x.sum(axis=1, keepdims=True)


def _np_grads(x, w, gy, gs, scale):
    dx = 2 * scale * x * gy + gs + (w * gy if w is not None else 0)
    dw = x * gy if w is not None else None
    return dx, dw


RNG = np.random.RandomState(0)
X = RNG.uniform(-1, 1, (3, 4))
W = RNG.uniform(-1, 1, (3, 4))
GY = RNG.uniform(-1, 1, (3, 4))
GS = RNG.uniform(-1, 1, (3, 1))


def test_eager_forward_backward_vs_numpy() -> None:
    x, w = mx.nd.array(X, dtype="float64"), mx.nd.array(W, dtype="float64")
    x.attach_grad()
    w.attach_grad()
    with mx.autograd.record():
        y, s = mx.nd.Custom(x, w, op_type="test_scaled_square", scale=2.5, two=True)
    mx.autograd.backward([y, s], [mx.nd.array(GY, dtype="float64"), mx.nd.array(GS, dtype="float64")])
    ry, rs = _np_forward(X, W, 2.5)
    dx, dw = _np_grads(X, W, GY, GS, 2.5)
    np.testing.assert_allclose(y.asnumpy(), ry, rtol=1e-12)
    np.testing.assert_allclose(s.asnumpy(), rs, rtol=1e-12)
    np.testing.assert_allclose(x.grad.asnumpy(), dx, rtol=1e-12)
    np.testing.assert_allclose(w.grad.asnumpy(), dw, rtol=1e-12)
    assert y.dtype == np.float64


def test_inputs_by_name_and_kwargs_are_strings() -> None:
    x, w = mx.nd.array(X), mx.nd.array(W)
    y, _ = mx.nd.Custom(weight=w, data=x, op_type="test_scaled_square", two=True)
    np.testing.assert_allclose(y.asnumpy(), _np_forward(X, W)[0], rtol=1e-5)


def test_numeric_gradient_through_executor() -> None:
    data, weight = mx.sym.var("data"), mx.sym.var("weight")
    y = mx.sym.Custom(data, weight, op_type="test_scaled_square", scale=0.5, two=True)
    mx.test_utils.check_numeric_gradient(y[0], [X, W], numeric_eps=1e-6, rtol=1e-4, atol=1e-6,
                                         dtype=np.float64)


def test_executor_forward_backward_and_aux() -> None:
    data = mx.sym.var("data")
    y = mx.sym.Custom(data=data, op_type="test_scaled_square", scale=3, counter=True, name="sq")
    assert y.list_arguments() == ["data"]
    assert y.list_auxiliary_states() == ["sq_calls"]
    assert y.list_outputs() == ["sq_square", "sq_rowsum"]
    arg_shapes, out_shapes, aux_shapes = y.infer_shape(data=(3, 4))
    assert out_shapes == [(3, 4), (3, 1)] and aux_shapes == [(1,)]
    exe = y.simple_bind(mx.cpu(), data=(3, 4), type_dict={"data": np.float64})
    exe.arg_dict["data"][:] = X
    outs = exe.forward(is_train=True)
    exe.backward([mx.nd.array(GY, dtype="float64"), mx.nd.array(GS, dtype="float64")])
    np.testing.assert_allclose(outs[0].asnumpy(), _np_forward(X, scale=3)[0], rtol=1e-12)
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), _np_grads(X, None, GY, GS, 3)[0], rtol=1e-12)
    exe.forward(is_train=False)
    assert exe.aux_dict["sq_calls"].asnumpy()[0] == 2  # forward updated the aux state in place


class _Net(nn.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.dense = nn.Dense(4, in_units=4)

    def hybrid_forward(self, F, x):
        h = self.dense(x)
        y, s = F.Custom(h, x, op_type="test_scaled_square", scale=1.5, two=True)
        return y + s


def _run(net, x):
    x = x.copy()
    x.attach_grad()
    with mx.autograd.record():
        out = net(x)
    out.backward(mx.nd.array(GY))
    return out.asnumpy(), x.grad.asnumpy(), net.dense.weight.grad().asnumpy()


def test_hybridized_equals_eager() -> None:
    net = _Net()
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(X)
    eager = _run(net, x)
    net.hybridize()
    hybrid = _run(net, x)
    for a, b in zip(eager, hybrid):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert np.abs(eager[1]).sum() > 0


def test_json_round_trip_and_attributes() -> None:
    data = mx.sym.var("data")
    y = mx.sym.Custom(data, op_type="test_scaled_square", scale=2, name="c")
    doc = json.loads(y.tojson())
    node = [n for n in doc["nodes"] if n["op"] == "Custom"][0]
    assert node["attrs"] == {"op_type": "test_scaled_square", "scale": "2"}
    y2 = mx.sym.load_json(y.tojson())
    assert y2.tojson() == y.tojson()
    x = mx.nd.array(X)
    a = y.bind(mx.cpu(), {"data": x}).forward()
    b = y2.bind(mx.cpu(), {"data": x}).forward()
    np.testing.assert_allclose(a[0].asnumpy(), b[0].asnumpy())


def test_export_imports(tmp_path) -> None:
    net = _Net()
    net.initialize()
    net.hybridize()
    x = mx.nd.array(X)
    ref = net(x).asnumpy()
    prefix = str(tmp_path / "custom")
    net.export(prefix)
    loaded = nn.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    np.testing.assert_allclose(loaded(x).asnumpy(), ref, rtol=1e-6)
    loaded.hybridize()
    np.testing.assert_allclose(loaded(x).asnumpy(), ref, rtol=1e-6)


class _Identity(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0])


@mx.operator.register("test_any_kwargs")
class _AnyKwargsProp(mx.operator.CustomOpProp):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def create_operator(self, ctx, shapes, dtypes):
        return _Identity()


def test_hostile_attribute_names_never_become_code() -> None:
    """Open attribute names may come from a file: they travel as data, not source text."""
    hostile = "x=__import__('os').system('echo pwned'),y"
    y = mx.sym.Custom(mx.sym.var("data"), op_type="test_any_kwargs", safe=2)
    doc = json.loads(y.tojson())
    node = [n for n in doc["nodes"] if n["op"] == "Custom"][0]
    node["attrs"][hostile] = "1"
    y2 = mx.sym.load_json(json.dumps(doc))
    assert y2.attr_dict()[node["name"]][hostile] == "1"
    exe = y2.bind(mx.cpu(), {"data": mx.nd.array(X)})
    assert "__import__" not in exe.source and "safe" not in exe.source
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), X.astype(np.float32))


def test_prop_rejecting_a_keyword_is_a_clear_error() -> None:
    with pytest.raises(MXNetError, match="unexpected keyword"):
        mx.sym.Custom(mx.sym.var("data"), op_type="test_scaled_square", bogus=1)


def test_unknown_op_type_names_registered_ones() -> None:
    with pytest.raises(MXNetError, match="test_scaled_square"):
        mx.nd.Custom(mx.nd.array(X), op_type="no_such_custom_op")
    with pytest.raises(MXNetError, match="op_type is required"):
        mx.nd.Custom(mx.nd.array(X))


def test_errors_in_user_code_are_mxnet_errors() -> None:
    class Broken(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise ValueError("boom")

    @mx.operator.register("test_broken")
    class BrokenProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Broken()

    with pytest.raises(MXNetError, match="boom"):
        mx.nd.Custom(mx.nd.array(X), op_type="test_broken")


def test_assign_req() -> None:
    op = mx.operator.CustomOp()
    dst = mx.nd.ones((2,))
    op.assign(dst, "null", mx.nd.array([5, 5]))
    assert dst.asnumpy().tolist() == [1, 1]
    op.assign(dst, "add", mx.nd.array([2, 3]))
    assert dst.asnumpy().tolist() == [3, 4]
    op.assign(dst, "write", mx.nd.array([7, 8]))
    assert dst.asnumpy().tolist() == [7, 8]
    op.assign(dst, "inplace", np.array([1, 2]))
    assert dst.asnumpy().tolist() == [1, 2]


def test_no_input_op_and_default_prop() -> None:
    class Ones(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], np.ones(out_data[0].shape))

    @mx.operator.register("test_ones")
    class OnesProp(mx.operator.CustomOpProp):
        def __init__(self, n):
            super().__init__()
            self.n = int(n)

        def list_arguments(self):
            return []

        def infer_shape(self, in_shape):
            return [], [(self.n, 2)], []

        def create_operator(self, ctx, shapes, dtypes):
            return Ones()

    out = mx.nd.Custom(n=3, op_type="test_ones")
    assert out.shape == (3, 2) and out.dtype == np.float32
    assert out.asnumpy().sum() == 6


def test_legacy_numpy_op_runs_in_an_executor() -> None:
    class Double(mx.operator.NumpyOp):
        def forward(self, in_data, out_data):
            out_data[0][:] = 2 * in_data[0]

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = 2 * out_grad[0]

    y = Double().get_symbol(mx.sym.var("X"), name="double")
    x, dx = mx.nd.array(X), mx.nd.zeros(X.shape)
    exe = y.bind(mx.cpu(), args=[x], args_grad={"X": dx})
    out = exe.forward(is_train=True)[0]
    exe.backward(mx.nd.array(GY))
    np.testing.assert_allclose(out.asnumpy(), 2 * X, rtol=1e-6)
    np.testing.assert_allclose(dx.asnumpy(), 2 * GY, rtol=1e-6)
    ident = mx.operator.NDArrayOp()(mx.sym.var("X"))
    np.testing.assert_allclose(ident.eval(X=x)[0].asnumpy(), X, rtol=1e-6)
