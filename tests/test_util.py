"""mxnet.util / mxnet.base names real code imports: per-thread switches and small helpers."""
import threading

import pytest

import hybridnet as mx
from hybridnet import base, util


def test_np_shape_scope_decorator_and_thread_local():
    assert not mx.is_np_shape()
    with mx.np_shape(True):
        assert mx.is_np_shape()
        seen = []
        t = threading.Thread(target=lambda: seen.append(mx.is_np_shape()))
        t.start()
        t.join()
        assert seen == [False]  # MXNet keeps the switch per thread
    assert not mx.is_np_shape()

    @mx.use_np_shape
    def f():
        return mx.is_np_shape()
    assert f() is True and not mx.is_np_shape()
    assert util.set_np_shape(True) is False
    assert util.set_np_shape(False) is True


def test_np_array_switch_per_thread_and_decorators():
    """npx.set_np / use_np switch MXNet's per-thread NumPy semantics (shape and array)."""
    assert util.is_np_array() is False
    try:
        util.set_np()
        assert util.is_np_array() and util.is_np_shape() and not util.is_np_default_dtype()
        seen = []
        t = threading.Thread(target=lambda: seen.append((util.is_np_array(), util.is_np_shape())))
        t.start()
        t.join()
        assert seen == [(False, False)]
        with pytest.raises(ValueError, match="shape semantics"):
            util.set_np(shape=False, array=True)
    finally:
        util.reset_np()
    assert not util.is_np_array() and not util.is_np_shape()

    @util.use_np
    def g():
        return util.is_np_array(), util.is_np_shape()
    assert g() == (True, True) and not util.is_np_array()

    @util.use_np
    class Holder:
        def read(self):
            return util.is_np_array()
    assert Holder().read() is True and util.is_np_array() is False


def test_base_helpers():
    assert base.py_str(b"caf\xc3\xa9") == "café" and base.py_str("x") == "x"
    assert base._as_list(3) == [3] and base._as_list((1, 2)) == [1, 2]
    err = base.NotImplementedForSymbol(test_base_helpers, "+", 1)
    assert isinstance(err, mx.MXNetError)
    assert "test_base_helpers" in str(err) and "only available in NDArray" in str(err)
    assert base.mx_real_t().dtype.name == "float32"


def test_ndarray_internals():
    from hybridnet.ndarray import ndarray as ndm
    assert ndm.py_slice is slice
    assert ndm._STORAGE_TYPE_STR_TO_ID["row_sparse"] == 1
    assert ndm._STORAGE_TYPE_ID_TO_STR[2] == "csr"


def test_zero_and_scalar_shapes_need_np_shape():
    """MXNet's legacy semantics: 0 is an unknown dimension, () an unknown shape."""
    for shape in [(), (0, 1, 3, 0), 0]:
        with pytest.raises(mx.MXNetError, match="np_shape"):
            mx.nd.zeros(shape)
        with pytest.raises(mx.MXNetError, match="np_shape"):
            mx.nd.ones(shape)
    with mx.np_shape(True):
        assert mx.nd.ones(()).shape == () and mx.nd.ones(()).asscalar() == 1
        assert mx.nd.zeros((0, 1, 0, 4)).shape == (0, 1, 0, 4)
