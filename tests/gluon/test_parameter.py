"""gluon.Parameter / ParameterDict behaviour MXNet 1.9.1 code relies on: storage-type checks,
integer parameters, dtype casting on load, shared parameters saved once."""
import numpy as np
import pytest

import hybridnet as mx
from hybridnet import gluon, nd
from hybridnet.base import MXNetError


def test_invalid_storage_types_are_value_and_assertion_errors():
    for kwargs in ({"stype": "invalid"}, {"grad_stype": "invalid"}):
        with pytest.raises(ValueError, match="invalid"):
            gluon.Parameter("weight", shape=(2, 2), **kwargs)
        with pytest.raises(AssertionError):  # MXNet checks these with assert
            gluon.Parameter("weight", shape=(2, 2), **kwargs)


def test_sparse_and_dense_accessors_refuse_the_other_storage():
    sparse = gluon.Parameter("w", shape=(4, 2), stype="row_sparse", grad_stype="row_sparse")
    sparse.initialize(init="xavier")
    with pytest.raises(RuntimeError, match="row_sparse_data"):
        sparse.data()
    with pytest.raises(RuntimeError, match="row_sparse_data"):
        sparse.list_data()
    with pytest.raises(RuntimeError, match="no Trainer"):
        sparse.list_row_sparse_data(nd.arange(0, 4))
    gluon.Trainer([sparse], "sgd")
    assert len(sparse.list_row_sparse_data(nd.arange(0, 4))) == 1
    assert sparse._reduce().shape == (4, 2)  # saving still works
    dense = gluon.Parameter("d", shape=(4, 2))
    dense.initialize()
    with pytest.raises(RuntimeError, match="data\\(\\) instead"):
        dense.row_sparse_data(nd.arange(0, 4))
    with pytest.raises(RuntimeError, match="data\\(\\) instead"):
        dense.list_row_sparse_data(nd.arange(0, 4))


def test_integer_parameters_get_gradient_buffers_and_cast_on_load(tmp_path):
    params0 = gluon.ParameterDict("net_")
    params0.get("w0", shape=(3, 3), dtype="float32")
    params0.get("w1", shape=(3, 3), dtype="int8")
    params0.initialize(init="ones")
    assert params0["net_w1"].data().dtype == np.int8
    assert params0["net_w1"].grad().dtype == np.int8 and params0["net_w1"].grad().sum().asscalar() == 0
    fname = str(tmp_path / "p.params")
    params0.save(fname)
    params1 = gluon.ParameterDict("net_")
    params1.get("w0", shape=(3, 3), dtype="float16")
    params1.get("w1", shape=(3, 3), dtype="float64")
    params1.load(fname, cast_dtype=True, dtype_source="current")
    assert params1["net_w0"].data().dtype == np.float16
    assert params1["net_w1"].data().dtype == np.float64
    params1.load(fname, cast_dtype=True, dtype_source="saved")
    assert params1["net_w0"].data().dtype == np.float32
    assert params1["net_w1"].data().dtype == np.int8
    np.testing.assert_array_equal(params1["net_w1"].data().asnumpy(), np.ones((3, 3)))


class _B(gluon.Block):
    def __init__(self, params=None):
        super().__init__(params=params)
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(3, 3))


class _C(gluon.Block):
    def __init__(self, b1, b2):
        super().__init__()
        self.b1 = b1
        self.b2 = b2


def _shared_pair():
    b1 = _B()
    return _C(b1, _B(b1.collect_params()))


def test_shared_parameter_saved_once_loads_into_every_alias(tmp_path):
    c = _shared_pair()
    c.initialize(init="normal")
    fname = str(tmp_path / "dedup.params")
    c.save_parameters(fname, deduplicate=True)
    assert list(nd.load(fname)) == ["b1.weight"]
    fresh = _shared_pair()
    fresh.load_parameters(fname)
    np.testing.assert_array_equal(fresh.b2.weight.data().asnumpy(), c.b1.weight.data().asnumpy())
    lonely = _C(_B(), _B())  # not shared: b2.weight is really missing
    with pytest.raises(MXNetError, match="b2.weight"):
        lonely.load_parameters(fname)


def test_shared_parameters_with_equal_initializers():
    class Net(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.param = self.params.get("param", shape=(1,), init=mx.init.Constant(-10.0))

    a = Net()
    b = Net(params=a.collect_params())
    c = Net()
    assert a.param is b.param and a.param is not c.param
    assert a.param.init == c.param.init
