"""Partial shape inference where MXNet reports less than a sentinel run could, and array-creating
nodes whose unknown dimensions are filled in by inference when bound."""
import numpy as np
import pytest

import hybridnet as mx
from hybridnet.base import MXNetError


def _out(sym, **shapes):
    return sym.infer_shape_partial(**shapes)[1][0]


@pytest.mark.parametrize("begin,end,step,expected", [
    ((None, None), (None, 10), (), (0, 10)),
    ((None, None), (None, 10), (None, 2), (0, 5)),
    ((None, 3), (5, 10), (), (0, 7)),        # bounds on the unknown axis still give no size
    ((2, 3), (None, 10), (3, 3), (0, 3)),
])
def test_slice_keeps_unknown_axes_unknown(begin, end, step, expected):
    data = mx.sym.var("data", shape=(0, 20))
    assert _out(mx.sym.slice(data, begin=begin, end=end, step=step)) == expected


def test_slice_axis_partial():
    data = mx.sym.var("data", shape=(10, 0))
    assert _out(mx.sym.slice_axis(data, axis=0, begin=0, end=5)) == (5, 0)
    assert _out(mx.sym.slice_axis(data, axis=1, begin=0, end=5)) == (10, 0)
    with mx.np_shape():
        data = mx.sym.var("data", shape=(-1, 20))
        assert _out(mx.sym.slice(data, begin=(None, 3), end=(None, 10))) == (-1, 7)


def test_slice_of_known_shape_is_exact():
    data = mx.sym.var("data", shape=(8, 20))
    assert _out(mx.sym.slice(data, begin=(None, 3), end=(5, 10))) == (5, 7)


def test_where_says_nothing_until_every_input_is_known():
    cond, x, y = mx.sym.var("cond"), mx.sym.var("x"), mx.sym.var("y")
    w = mx.sym.where(cond, x, y)
    assert _out(w, cond=(0, 2), x=(0, 2), y=(0, 2)) == ()
    assert _out(w, cond=(0,), x=(2, 2), y=(2, 2)) == ()
    assert _out(w, cond=(2,), x=(2, 2), y=(2, 2)) == (2, 2)
    with mx.np_shape(True):
        assert _out(w, cond=(-1, 2), x=(-1, 2), y=(-1, 2)) is None


@pytest.mark.parametrize("shape", [(-1, -1), (0, 0), (3, -1)])
def test_creation_with_unknown_dims_is_sized_by_its_consumer(shape):
    ones = mx.sym.ones(shape=shape)
    out = mx.sym.ones(shape=(2, 3)) + mx.sym.transpose(ones) * 2
    assert out.infer_shape_partial()[1] == [(2, 3)]
    exe = out.bind(mx.cpu(), args={})
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), np.full((2, 3), 3.0))


def test_creation_with_unknown_dims_and_an_argument():
    x = mx.sym.var("x")
    out = x * mx.sym.zeros(shape=(0, 4)) + mx.sym.ones(shape=(-1, 4))
    exe = out.bind(mx.cpu(), args={"x": mx.nd.ones((5, 4))})
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), np.ones((5, 4)))


def test_creation_that_stays_unknown_names_the_node():
    out = mx.sym.ones(shape=(-1, 3), name="lonely") * 2
    with pytest.raises(MXNetError, match="lonely"):
        out.bind(mx.cpu(), args={})
