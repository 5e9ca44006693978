"""MXNet 1.9.1 behaviours its own unit tests rely on (issue 25, the last peer failures)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import hybridnet as mx


# ---- util._NumpyArrayScope ----------------------------------------------------------------------
def test_numpy_array_scope_switches_np_array_per_thread():
    from hybridnet.util import _NumpyArrayScope
    assert not mx.util.is_np_array()
    with _NumpyArrayScope(True) as scope:
        assert scope._is_np_array and mx.util.is_np_array()
        seen = []
        t = threading.Thread(target=lambda: seen.append(mx.util.is_np_array()))
        t.start()
        t.join()
        assert seen == [False]  # another thread keeps its own switch
        with _NumpyArrayScope(False):
            assert not mx.util.is_np_array()
        assert mx.util.is_np_array()
    assert not mx.util.is_np_array()


def test_numpy_array_scope_current_may_be_replaced():
    from hybridnet.util import _NumpyArrayScope
    old = _NumpyArrayScope._current
    try:
        _NumpyArrayScope._current = _NumpyArrayScope(True)  # what MXNet's thread-local test does
        with mx.util.np_array(False):
            assert not mx.util.is_np_array()
        with _NumpyArrayScope(True):
            assert mx.util.is_np_array()
    finally:
        _NumpyArrayScope._current = old
    assert not mx.util.is_np_array()


# ---- runtime --------------------------------------------------------------------------------------
def test_runtime_unknown_feature_raises():
    with pytest.raises(RuntimeError, match="unknown"):
        mx.runtime.Features().is_enabled("this girl is on fire")


# ---- asynchronous errors: raised when a result is read -------------------------------------------
from hybridnet.base import MXNetError  # noqa: E402


def test_value_error_of_an_operator_is_raised_at_the_first_read_only():
    a = mx.nd.random.normal(0, 1, (2, 2))
    b = mx.nd.random.normal(0, -1, (2, 2))  # no error yet
    c = mx.nd.dot(a, b)  # inherits b's error
    assert c.shape == (2, 2)
    with pytest.raises(MXNetError, match="scale must be positive"):
        c.asnumpy()
    c.asnumpy()  # raised once: the next read succeeds
    b.wait_to_read()  # b shared that error
    mx.nd.waitall()


def test_views_copies_and_waitall_share_the_error():
    x, y = mx.nd.random.normal(0, -1, (2, 2)).copyto(mx.cpu())
    with pytest.raises(MXNetError):
        x.asnumpy()
    y.asnumpy()
    x, y = mx.nd.random.normal(0, -1, (2, 2)).copyto(mx.cpu())
    with pytest.raises(MXNetError):
        mx.nd.waitall()
    y.asnumpy()
    mx.nd.waitall()  # a second waitall raises nothing
    z = mx.nd.random.uniform(2, 1, (3,)).astype("float64")[1:]
    with pytest.raises(MXNetError, match="low must be <= high"):
        float(z.sum())


def test_shape_errors_still_raise_at_the_call():
    with pytest.raises(MXNetError):
        mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((2, 3)))
    assert mx.nd.ndarray.pending_errors() == 0


def test_take_raise_mode_eager_and_bound():
    out = mx.nd.take(mx.nd.ones((3, 2)), mx.nd.array([5]), mode="raise")
    assert out.shape == (1, 2)
    with pytest.raises(MXNetError, match="index out of range"):
        out.asnumpy()
    data, idx = mx.sym.Variable("a"), mx.sym.BlockGrad(mx.sym.Variable("indices"))
    exe = mx.sym.take(data, idx, mode="raise").simple_bind(mx.cpu(), a=(3, 2), indices=(2,))
    exe.arg_dict["a"][:] = mx.nd.array(np.arange(6).reshape(3, 2))
    exe.arg_dict["indices"][:] = mx.nd.array([5, 1])
    exe.forward(is_train=True)  # does not raise
    with pytest.raises(MXNetError, match="index out of range"):
        exe.outputs[0].asnumpy()
    exe.arg_dict["indices"][:] = mx.nd.array([2, 1])
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [[4, 5], [2, 3]])
    exe.backward([mx.nd.ones((2, 2))])
    np.testing.assert_array_equal(exe.grad_dict["a"].asnumpy(), [[0, 0], [1, 1], [1, 1]])
    exe.arg_dict["indices"][:] = mx.nd.array([-7, 1])
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 2))])
    with pytest.raises(MXNetError):
        exe.grad_dict["a"].asnumpy()
    mx.nd.waitall()


def test_gluon_block_passes_the_error_on():
    net = mx.gluon.nn.Sequential()
    net.add(mx.gluon.nn.Dense(4, activation="tanh", in_units=3), mx.gluon.nn.Dense(2, in_units=4))
    net.initialize()
    z = net(mx.nd.random.normal(10, -10, (5, 3)))
    assert z.shape == (5, 2)
    with pytest.raises(MXNetError):
        z.wait_to_read()


def test_a_failed_sampler_poisons_later_samplers_until_raised():
    def imperative(read: bool) -> None:
        a = mx.nd.random.normal(0, 1, (2, 2))
        b = mx.nd.random.normal(0, -1, (2, 2))
        c = mx.nd.dot(a, b)
        if read:
            c.asnumpy()
    imperative(False)
    with pytest.raises(MXNetError):
        imperative(True)  # its samplers inherited the first call's error and raised it
    mx.nd.waitall()  # nothing left: MXNet's samplers share one random state
    mx.nd.random.normal(0, 1, (2,)).asnumpy()


def test_np_array_scope_names_at_top_level():
    assert mx.np_array is mx.util.np_array and mx.use_np is mx.util.use_np
    assert mx.use_np_array is mx.util.use_np_array
    with mx.np_array(True):
        assert mx.is_np_array()
    assert not mx.is_np_array()


# ---- integer arrays with gradients -------------------------------------------------------------
def test_integer_variable_gets_topk_gradient_in_its_dtype():
    a = mx.nd.arange(0, 100, dtype=np.int32)
    a.attach_grad()
    ograd = mx.nd.arange(0, 5, dtype=np.int32)
    with mx.autograd.record():
        b = mx.nd.topk(a, k=5, ret_typ="value")
    assert b.dtype == np.int32
    b.backward(ograd)
    g = a.grad.asnumpy()
    assert a.grad.dtype == np.int32
    np.testing.assert_array_equal(g[-5:], [4, 3, 2, 1, 0])
    assert not g[:-5].any()


def test_integer_variable_indexing_and_boolean_mask_gradients_accumulate():
    x = mx.nd.array(np.arange(12).reshape(3, 4), dtype="int64")
    x.attach_grad()
    with mx.autograd.record():
        y = x[1:3, [0, 2]]
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[0, 0, 0, 0], [1, 0, 1, 0], [1, 0, 1, 0]])
    a = mx.nd.array(np.arange(15).reshape(5, 3), dtype="int32")
    g = mx.nd.zeros_like(a)
    mx.autograd.mark_variables([a], [g], grad_reqs="add")
    mask = mx.nd.array([1, 0, 1, 0, 0])
    for _ in range(3):
        with mx.autograd.record():
            b = mx.nd.contrib.boolean_mask(a, mask)
            s = b.sum() + (b * 2).sum()
        s.backward()
    np.testing.assert_array_equal(g.asnumpy(), np.array([9, 0, 9, 0, 0])[:, None].repeat(3, 1))


def test_integer_variable_follows_in_place_writes_and_casts():
    a = mx.nd.array([3, 1, 2], dtype="int32")
    a.attach_grad()
    a[:] = mx.nd.array([1, 5, 0], dtype="int32")  # the gradient path sees the new values
    with mx.autograd.record():
        top = mx.nd.topk(a, k=1, ret_typ="value")
        f = a.astype("float32") * 3
    top.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), [0, 1, 0])
    f.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), [3, 3, 3])


def test_backward_with_a_larger_head_gradient_reads_its_first_elements():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
    with pytest.warns(UserWarning, match="first 3 elements"):
        y.backward(mx.nd.array([[1.0, 2.0], [3.0, 4.0]]))  # MXNet does not check the shape
    np.testing.assert_array_equal(x.grad.asnumpy(), [2, 4, 6])
    with mx.autograd.record():
        y = x * 2
    with pytest.raises(MXNetError, match="head gradient 0 has shape"):
        y.backward(mx.nd.array([1.0, 2.0]))  # too small: nothing to read


# ---- C handles (mxnet.base) ---------------------------------------------------------------------
def test_ndarray_handle_round_trip_and_dlpack_through_lib():
    import ctypes
    from hybridnet.base import _LIB, NDArrayHandle, c_str, check_call
    x = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    h = ctypes.cast(x, NDArrayHandle)  # an NDArray passes as a C handle
    y = mx.nd.NDArray(h, writable=False)
    y[0, 0] = 9.0  # same memory
    assert x.asnumpy()[0, 0] == 9.0
    with pytest.raises(MXNetError, match="handle"):
        mx.nd.NDArray(NDArrayHandle(12345))
    # MXNet 1.x's own from_dlpack, written against the C API (test_dlpack.py)
    capsule = mx.nd.to_dlpack_for_read(x)
    pyobj = ctypes.py_object(capsule)
    assert ctypes.pythonapi.PyCapsule_IsValid(pyobj, c_str("dltensor"))
    ptr = ctypes.c_void_p(ctypes.pythonapi.PyCapsule_GetPointer(pyobj, c_str("dltensor")))
    handle = NDArrayHandle()
    check_call(_LIB.MXNDArrayFromDLPack(ptr, ctypes.byref(handle)))
    ctypes.pythonapi.PyCapsule_SetName(pyobj, c_str("used_dltensor"))
    ctypes.pythonapi.PyCapsule_SetDestructor(pyobj, None)
    z = mx.nd.NDArray(handle=handle)
    np.testing.assert_array_equal(z.asnumpy(), x.asnumpy())
    with pytest.raises(MXNetError, match="no libmxnet"):
        _LIB.MXNDArrayCreate


def test_reshaped_module_keeps_the_monitor_callback():
    import ctypes
    from hybridnet.base import NDArrayHandle
    seen = {}

    def callback(name, arr):
        arr = mx.nd.NDArray(ctypes.cast(arr, NDArrayHandle), writable=False)
        seen[name] = arr.shape

    data = mx.sym.Variable("data", shape=(1, 3, 10, 10))
    sym = mx.sym.Convolution(data, kernel=(1, 1), num_filter=1, name="conv")
    mod = mx.module.Module(symbol=sym, label_names=None)
    mod.bind(for_training=False, data_shapes=[("data", (1, 3, 10, 10))])
    mod.init_params()
    mod._exec_group.execs[0].set_monitor_callback(callback, monitor_all=True)
    batch = next(iter(mx.io.NDArrayIter(data=mx.nd.ones((1, 3, 10, 14)), batch_size=1)))
    mod.forward(batch, is_train=False)  # a new input shape: the module reshapes its executors
    assert seen["conv_output"] == (1, 1, 10, 14) and "conv_weight" in seen


def test_operator_star_import_has_mxnet_names():
    ns: dict = {}
    exec("from hybridnet.operator import *", ns)  # noqa: S102 - MXNet's tests do exactly this
    for name in ("ctypes", "NDArrayHandle", "NDArray", "c_str", "py_str", "CustomOp"):
        assert name in ns


# ---- binding big unrolled graphs ----------------------------------------------------------------
def test_module_bind_infers_shapes_and_dtypes_in_one_pass(monkeypatch):
    import hybridnet.compiler.infer as infer
    import hybridnet.module.executor_group as group
    calls = []
    real = infer.infer_graph

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)
    monkeypatch.setattr(infer, "infer_graph", counting)
    monkeypatch.setattr(group, "infer_graph", counting)
    stack = mx.rnn.SequentialRNNCell()
    for i in range(3):
        stack.add(mx.rnn.LSTMCell(8, prefix=f"l{i}_"))
    out, _ = stack.unroll(4, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    mod = mx.mod.Module(out, label_names=None)
    mod.bind(data_shapes=[("data", (2, 4, 5))], inputs_need_grad=True)
    # one pass for the arrays, one to resolve the begin states' unknown batch size
    assert len(calls) == 2
    mod.init_params()
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones((2, 4, 5))]), is_train=True)
    assert mod.get_outputs()[0].shape == (2, 4, 8)


# ---- clients: GluonNLP's weight drop -------------------------------------------------------------
class _WeightDropParameter(mx.gluon.Parameter):
    """A stand-in for GluonNLP 0.10's WeightDropParameter: a Parameter sharing another one's
    arrays (set through MXNet's private attributes) whose data() applies dropout."""

    def __init__(self, parameter, rate=0.0, mode="training", axes=()):
        p = parameter
        self._deferred_init = p._deferred_init
        super().__init__(name=p.name, grad_req=p.grad_req, shape=p._shape, dtype=p.dtype,
                         lr_mult=p.lr_mult, wd_mult=p.wd_mult, init=p.init,
                         allow_deferred_init=p._allow_deferred_init, differentiable=p._differentiable)
        self._rate, self._mode, self._axes = rate, mode, axes
        self._var = p._var
        self._data = p._data
        self._grad = p._grad
        self._ctx_list = p._ctx_list
        self._ctx_map = p._ctx_map
        self._trainer = p._trainer

    def data(self, ctx=None):
        d = self._check_and_get(self._data, ctx)
        return mx.nd.Dropout(d, self._rate, self._mode, self._axes) if self._rate else d


def _apply_weight_drop(block, local_name, rate):
    for child in block._children.values():
        _apply_weight_drop(child, local_name, rate)
    for name, p in list(block._reg_params.items()):
        if name.endswith(local_name):
            dropped = _WeightDropParameter(p, rate)
            block._reg_params[name] = dropped
            if block._params._params.get(p.name) is p:
                block._params._params[p.name] = dropped


@pytest.mark.parametrize("init_first", [False, True])
def test_weight_drop_parameter_shares_arrays_and_loads(tmp_path, init_first):
    net = mx.gluon.rnn.LSTM(6, num_layers=2, input_size=4)
    if init_first:
        net.initialize()
    _apply_weight_drop(net, "h2h_weight", 0.5)
    if not init_first:
        net.initialize()
    x = mx.nd.ones((3, 2, 4))
    params = net.collect_params()
    dropped = [p for p in params.values() if isinstance(p, _WeightDropParameter)]
    assert len(dropped) == 2
    with mx.autograd.record():
        y = net(x)
    y.backward()
    for p in dropped:
        assert p.grad().shape == p.shape and float(p.grad().abs().sum()) > 0
    np.testing.assert_allclose(net(x).asnumpy(), net(x).asnumpy())  # predict mode: no dropout
    f = str(tmp_path / "lm.params")
    net.save_parameters(f)
    other = mx.gluon.rnn.LSTM(6, num_layers=2, input_size=4)
    _apply_weight_drop(other, "h2h_weight", 0.5)
    other.load_parameters(f)
    np.testing.assert_allclose(other(x).asnumpy(), net(x).asnumpy(), rtol=1e-6)


# ---- clients: GluonNLP's language models ---------------------------------------------------------
class _StandInLM(mx.gluon.HybridBlock):
    """GluonNLP 0.10's StandardRNN in small: begin_state(batch_size=0, func=F.zeros) inside
    hybrid_forward, the 0 standing for the data's batch size."""

    def __init__(self, fill=None, **kw):
        super().__init__(**kw)
        self._fill = fill
        with self.name_scope():
            self.embedding = mx.gluon.nn.Embedding(50, 8)
            self.encoder = mx.gluon.rnn.LSTM(12, num_layers=2, input_size=8)
            self.decoder = mx.gluon.nn.Dense(50, flatten=False, in_units=12)

    def hybrid_forward(self, F, inputs, begin_state=None):
        if begin_state is None:
            func = F.zeros if self._fill is None else (lambda **kw: F.full(val=self._fill, **kw))
            begin_state = self.encoder.begin_state(batch_size=0, func=func)
        encoded, state = self.encoder(self.embedding(inputs), begin_state)
        return self.decoder(encoded), state


@pytest.mark.parametrize("fill", [None, 0.5])
def test_rnn_begin_state_with_batch_zero_takes_the_data_batch_hybridized_and_exported(tmp_path, fill):
    net = _StandInLM(fill)
    net.initialize()
    x = mx.nd.array(np.random.RandomState(0).randint(0, 50, (5, 3)))
    value = 0.0 if fill is None else fill
    want, want_state = net(x, [mx.nd.full((2, 3, 12), value), mx.nd.full((2, 3, 12), value)])
    net.hybridize()
    out, state = net(x)
    assert out.shape == (5, 3, 50) and [s.shape for s in state] == [(2, 3, 12)] * 2
    np.testing.assert_allclose(out.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state[1].asnumpy(), want_state[1].asnumpy(), rtol=1e-5, atol=1e-6)
    prefix = str(tmp_path / "lm")
    net.export(prefix)
    imported = mx.gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    got = imported(mx.nd.array(np.random.RandomState(0).randint(0, 50, (5, 4))))  # another batch size
    assert [g.shape for g in got] == [(5, 4, 50), (2, 4, 12), (2, 4, 12)]


# ---- operators without a gradient ---------------------------------------------------------------
def test_binding_a_gradient_through_an_operator_without_one_raises():
    x, idx = mx.sym.Variable("x"), mx.sym.Variable("idx")
    y = mx.sym.batch_take(x, idx)
    types = {"x": np.float32, "idx": np.int32}
    exe = mx.sym.stop_gradient(y).simple_bind(mx.cpu(), x=(4, 3), idx=(4,), type_dict=types)
    exe.forward()
    exe.backward()  # the gradient stops before batch_take
    with pytest.raises(MXNetError, match="batch_take.*FGradient"):
        y.simple_bind(mx.cpu(), x=(4, 3), idx=(4,), type_dict=types)
    exe = y.simple_bind(mx.cpu(), x=(4, 3), idx=(4,), type_dict=types, grad_req="null")
    assert exe.forward()[0].shape == (4,)


def test_bound_cast_passes_gradients_between_integer_and_float():
    x_np = np.random.RandomState(3).uniform(-10, 10, (4, 5))
    for src, dst in [(np.int32, np.float32), (np.float32, np.int32), (np.int32, np.int32)]:
        x = mx.sym.Variable("x", dtype=src)
        exe = mx.sym.Cast(x, dtype=dst).simple_bind(mx.cpu(), x=(4, 5))
        exe.arg_arrays[0][:] = x_np
        exe.forward(is_train=True)
        exe.backward(mx.nd.array(x_np, dtype=dst))
        assert exe.grad_arrays[0].dtype == src
        np.testing.assert_array_equal(exe.grad_arrays[0].asnumpy(), x_np.astype(dst).astype(src))
    # an integer argument of a bigger graph: gradient through take's data, none to the indices
    a, i = mx.sym.Variable("a", dtype=np.int32), mx.sym.Variable("i", dtype=np.int32)
    exe = (mx.sym.take(a, i) * 2).simple_bind(mx.cpu(), a=(3, 2), i=(2,))
    exe.arg_dict["i"][:] = mx.nd.array([2, 2])
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 2), dtype=np.int32))
    np.testing.assert_array_equal(exe.grad_dict["a"].asnumpy(), [[0, 0], [0, 0], [4, 4]])
    np.testing.assert_array_equal(exe.grad_dict["i"].asnumpy(), [0, 0])


# ---- Module: ctx groups, optimizer states across kvstore/local, backward monitor -------------------
def test_module_ctx_group_arrays_live_on_the_group_context():
    with mx.AttrScope(ctx_group="dev1"):
        a = mx.sym.Variable("a") * 2
    with mx.AttrScope(ctx_group="dev2"):
        c = a + mx.sym.Variable("b")
    mod = mx.mod.Module(c, context=[mx.cpu(0)], data_names=["a", "b"], label_names=None,
                        group2ctxs={"dev1": mx.cpu(1), "dev2": mx.cpu(2)})
    mod.bind(data_shapes=[["a", (2, 5)], ["b", (2, 5)]], inputs_need_grad=True)
    mod.init_params()
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones((2, 5)), mx.nd.ones((2, 5))]), is_train=True)
    mod.backward([mx.nd.ones((2, 5))])
    ga, gb = mod.get_input_grads()
    assert ga.context == mx.cpu(1) and gb.context == mx.cpu(2)
    assert (ga.asnumpy() == 2).all() and (gb.asnumpy() == 1).all()


def test_module_loads_kvstore_saved_optimizer_states_into_a_local_updater(tmp_path):
    prefix = str(tmp_path / "m")
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc")
    mod = mx.mod.Module(sym, ("data",), label_names=None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (6, 3))])
    mod.init_params()
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones((6, 3))]), is_train=True)
    mod.backward([mx.nd.ones((6, 4))])
    mod.update()
    mod.save_checkpoint(prefix, 0, save_optimizer_states=True)
    mod2 = mx.mod.Module.load(prefix, 0, load_optimizer_states=True, data_names=("data",), label_names=None)
    mod2.bind(data_shapes=[("data", (6, 3))])
    mod2.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    kv_states = mod._kvstore._updater.states
    assert set(mod2._updater.states) == set(kv_states) == {"fc_weight", "fc_bias"}  # as MXNet keeps them
    for k in kv_states:
        np.testing.assert_array_equal(mod2._updater.states[k].asnumpy(), kv_states[k].asnumpy())
    mod2.forward(mx.io.DataBatch(data=[mx.nd.ones((6, 3))]), is_train=True)
    mod2.backward([mx.nd.ones((6, 4))])
    mod2.update()  # the loaded momentum is used, under the local updater's indices
    assert sorted(mod2._updater.states) == [0, 1]
    assert float(mod2._updater.states[0].abs().sum()) > float(kv_states["fc_weight"].abs().sum())


def test_monitor_sees_backward_node_outputs():
    x = mx.sym.Variable("data")
    x = mx.sym.FullyConnected(x, num_hidden=2, name="fc_0")
    x = mx.sym.Activation(x, act_type="sigmoid", name="act_0")
    x = mx.sym.LinearRegressionOutput(x, name="softmax")
    mon = mx.mon.Monitor(1, stat_func=lambda a: mx.nd.norm(a), pattern=".*", sort=True)
    mod = mx.mod.Module(x, context=[mx.cpu()])
    it = mx.io.NDArrayIter(mx.nd.array([[0.05, 0.1]]), mx.nd.array([[0.01, 0.99]]), batch_size=1)
    mod.bind(it.provide_data, label_shapes=it.provide_label)
    mod.install_monitor(mon)
    mod.init_params()
    mon.tic()
    mod.forward_backward(next(iter(it)))
    names = [k for _, k, _ in mon.toc()]
    assert names == ["act_0_backward_output", "act_0_output", "data", "fc_0_backward_output0",
                     "fc_0_backward_output1", "fc_0_backward_output2", "fc_0_bias", "fc_0_output",
                     "fc_0_weight", "softmax_backward_output0", "softmax_backward_output1",
                     "softmax_label", "softmax_output"]


# ---- kvstore ------------------------------------------------------------------------------------
def test_kvstore_pull_ignores_sparse_outputs_and_row_sparse_pull_refuses_dense():
    kv = mx.kv.create()
    kv.init(3, mx.nd.zeros((4, 4)))
    rsp = (mx.nd.ones((4, 4)) * 2).tostype("row_sparse")
    kv.pull(3, out=rsp)  # ignored, as MXNet does (ignore_sparse=True)
    assert (rsp.asnumpy() == 2).all()
    kv.pull(3, out=rsp, ignore_sparse=False)
    assert (rsp.asnumpy() == 0).all()
    with pytest.raises(MXNetError, match="must be row_sparse"):
        kv.row_sparse_pull(3, out=mx.nd.ones((4, 4)), row_ids=mx.nd.array([1]))
    with pytest.raises(MXNetError):  # int keys in this store: a str key is refused
        kv.pull("a", out=mx.nd.ones((4, 4)))
    with pytest.raises(TypeError):
        kv.push("a", mx.nd.ones((4, 4)))


# ---- Executor.reshape ---------------------------------------------------------------------------
def test_executor_reshape_shares_memory_as_mxnet():
    y = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=4)
    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req="null")
    exe.arg_arrays[0][:] = 1
    exe.arg_arrays[1][:] = mx.nd.ones((4, 4))
    exe.arg_arrays[2][:] = 0
    out0 = exe.outputs[0]
    small = exe.reshape(x=(3, 4))  # the small x is a view of the big one
    small.forward()
    assert (small.outputs[0].asnumpy() == 4).all()
    assert (exe.outputs[0].asnumpy()[:3] == 4).all()  # the outputs share memory too
    exe.forward()
    assert exe.outputs[0] is out0  # outputs are updated in place by forward
    with pytest.raises(MXNetError, match="allow_up_sizing"):
        exe.reshape(x=(6, 4))
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))
    big.arg_arrays[0][:] = 0
    assert (exe.arg_arrays[0].asnumpy() == 1).all() and (big.arg_arrays[1].asnumpy() == 1).all()


def test_partial_setitem_under_record_raises_as_in_mxnet():
    x = mx.nd.zeros((3, 4))
    y = mx.nd.ones((4,))
    y.attach_grad()
    with mx.autograd.record():
        with pytest.raises(MXNetError, match=r"Inplace operations \(\+=, -=, x\[:\]=, etc\) are not supported"):
            x[1] = y
        x[None] = mx.nd.broadcast_to(y.reshape((1, 4)), (3, 4))  # the whole array: allowed
    x[1] = y  # outside record: fine


def test_partial_setitem_under_record_raises_for_integer_targets_too():
    x = mx.nd.zeros((3, 4), dtype="int32")
    y = mx.nd.ones((4,))
    y.attach_grad()
    with mx.autograd.record():
        with pytest.raises(MXNetError, match="Inplace operations"):
            x[0] = y  # the value carries a gradient, though the cast to int32 would lose it
        with pytest.raises(MXNetError, match="Inplace operations.*int32: the cast would drop the gradient"):
            x[:] = mx.nd.broadcast_to(y.reshape((1, 4)), (3, 4))  # the whole array, too


def test_hybridized_block_calls_an_overridden_parameter_data():
    net = mx.gluon.rnn.LSTM(6, num_layers=1, input_size=4)
    _apply_weight_drop(net, "h2h_weight", 0.9)
    net.initialize()
    net.hybridize()
    x = mx.nd.ones((3, 2, 4))
    np.testing.assert_allclose(net(x).asnumpy(), net(x).asnumpy())  # predict: no dropout
    with mx.autograd.record():  # training: the weight is dropped, differently each call
        a = net(x)
        b = net(x)
    assert not np.allclose(a.asnumpy(), b.asnumpy())
    a.backward()
    w = [p for p in net.collect_params().values() if isinstance(p, _WeightDropParameter)][0]
    assert float(w.grad().abs().sum()) > 0


def test_integer_mod_passes_no_gradient_and_integer_heads_truncate():
    """MXNet's mod gradient is 0 for integer operands (mod_grad's generic template), and a
    gradient reaching an integer array is kept in its dtype (a float head gradient below 1 on an
    integer output is 0), bound executors and eager calls alike."""
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    c = mx.sym.broadcast_mod(mx.sym.cast(a, dtype="int32"), mx.sym.cast(b, dtype="int32"))
    x = np.array([[5.0, 7.0], [9.0, 4.0]], np.float32)
    y = np.array([[2.0, 3.0], [4.0, 3.0]], np.float32)
    ga, gb = mx.nd.ones((2, 2)), mx.nd.ones((2, 2))
    exe = c.bind(mx.cpu(), args={"a": mx.nd.array(x), "b": mx.nd.array(y)}, args_grad=[ga, gb])
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 2)) * 3])
    assert not ga.asnumpy().any() and not gb.asnumpy().any()
    # integer arithmetic that has a gradient: a head below 1 truncates to 0, 2.7 to 2
    d = mx.sym.cast(a, dtype="int32") * 3
    gd = mx.nd.zeros((2, 2))
    exe = d.bind(mx.cpu(), args={"a": mx.nd.array(x)}, args_grad=[gd])
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(np.full((2, 2), 0.9))])
    assert not gd.asnumpy().any()
    exe.backward([mx.nd.array(np.full((2, 2), 2.7))])
    np.testing.assert_array_equal(gd.asnumpy(), np.full((2, 2), 6.0))
    # eager: an int32 variable through mod gets zeros, through multiply its gradient
    xi = mx.nd.array(x, dtype="int32")
    xi.attach_grad()
    with mx.autograd.record():
        z = (xi % 3) + xi * 2
    z.backward()
    np.testing.assert_array_equal(xi.grad.asnumpy(), np.full((2, 2), 2))


def test_samplers_recorded_after_integer_variables_exist_draw_once():
    """Integer variables make recorded operators run again on float64 twins; a sampler must not
    (a second run draws other numbers): multinomial's log-probabilities stay those of its samples."""
    x = mx.nd.array([1, 2], dtype="int32")
    x.attach_grad()
    mx.random.seed(8)
    probs = mx.nd.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], dtype="float64")
    probs.attach_grad()
    with mx.autograd.record():
        s, logp = mx.nd.random.multinomial(probs, shape=5, get_prob=True)
    np.testing.assert_allclose(logp.asnumpy(), np.log(np.take_along_axis(probs.asnumpy(), s.asnumpy(), 1)))


@pytest.mark.parametrize("hybridize", [False, True])
def test_integer_mod_inside_a_block_passes_zero_gradient(hybridize):
    """MXNet's per-operator integer rules hold inside a hybridized block (the graph's integer
    operators run with twins of their own): mod of integer operands sends zeros back, the
    product beside it its gradient."""
    class ModTimes(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return F.np.mod(a, b) + a * b

    mx.npx.set_np()
    try:
        a = mx.np.array([[5, 7], [9, 4]], dtype="int32")
        b = mx.np.array([[2, 3], [4, 3]], dtype="int32")
        a.attach_grad()
        b.attach_grad()
        net = ModTimes()
        if hybridize:
            net.hybridize()
        with mx.autograd.record():
            y = net(a, b)
        y.backward()
        np.testing.assert_array_equal(y.asnumpy(), [[11, 22], [37, 13]])
        np.testing.assert_array_equal(a.grad.asnumpy(), [[2, 3], [4, 3]])  # d(a*b)/da; mod adds 0
        np.testing.assert_array_equal(b.grad.asnumpy(), [[5, 7], [9, 4]])
        with mx.autograd.record():
            z = net(a, b) - a * b  # only the mod is left: an integer head with zero gradient
        z.backward()
        assert not a.grad.asnumpy().any() and not b.grad.asnumpy().any()
    finally:
        mx.npx.reset_np()
