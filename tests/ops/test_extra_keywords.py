"""Keyword arguments an operator does not declare, as MXNet 1.9.1 treats them."""
import json
import warnings

import numpy as np
import pytest

import hybridnet as mx


def test_attribute_less_op_ignores_extra_keywords_with_one_warning():
    x = mx.nd.array([[1.0, -2.0]])
    with pytest.warns(UserWarning, match="ignored"):
        y = mx.nd.zeros_like(x, dtype="int32", some_flag=1)
    assert y.dtype == np.float32 and y.shape == (1, 2) and y.asnumpy().sum() == 0
    out = mx.nd.broadcast_maximum(mx.nd.array([0.0]), x, axis=1)
    np.testing.assert_array_equal(out.asnumpy(), [[1.0, 0.0]])


def test_misspelt_attribute_still_raises_naming_the_valid_ones():
    with pytest.raises(TypeError, match=r"num_hiden.*num_hidden"):
        mx.nd.FullyConnected(mx.nd.ones((2, 3)), mx.nd.ones((4, 3)), mx.nd.ones((4,)), num_hiden=4)


def test_dunder_keywords_become_node_attributes():
    s = mx.sym.FullyConnected(mx.sym.var("d"), num_hidden=3, __layout__="NC", name="fc")
    assert s.attr("__layout__") == "NC"
    assert json.loads(s.tojson())["nodes"][-1]["attrs"]["__layout__"] == "NC"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = mx.nd.relu(mx.nd.array([-1.0, 2.0]), __layout__="N")  # eager: no effect
    np.testing.assert_array_equal(y.asnumpy(), [0.0, 2.0])


def test_json_attributes_of_attribute_less_op_load_and_round_trip():
    s = mx.sym.ones_like(mx.sym.var("x"), name="o")
    j = json.loads(s.tojson())
    j["nodes"][-1]["attrs"] = {"dtype": "int32"}  # as MXNet writes F.ones_like(x, dtype=...)
    loaded = mx.sym.load_json(json.dumps(j))
    assert json.loads(loaded.tojson())["nodes"][-1]["attrs"] == {"dtype": "int32"}
    out = loaded.eval(x=mx.nd.zeros((2, 2)))[0]
    np.testing.assert_array_equal(out.asnumpy(), np.ones((2, 2), np.float32))
    with pytest.raises(mx.MXNetError, match="no attribute 'num_hiden'"):
        bad = json.loads(mx.sym.FullyConnected(mx.sym.var("d"), num_hidden=2).tojson())
        bad["nodes"][-1]["attrs"]["num_hiden"] = "2"
        mx.sym.load_json(json.dumps(bad))
