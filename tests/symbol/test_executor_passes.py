"""What an Executor runs: common subexpressions merged (MXNET_ELIMINATE_COMMON_EXPR),
repeated outputs kept distinct, and the memory plan reported by debug_str."""
import re

import numpy as np
import pytest

import hybridnet as mx


def _bind(sym, grad_req="write", **arrays):
    args = {k: mx.nd.array(v) for k, v in arrays.items()}
    grads = {k: mx.nd.zeros(v.shape) for k, v in arrays.items()}
    return sym.bind(mx.cpu(), args=args, args_grad=grads, grad_req=grad_req)


@pytest.mark.parametrize("build,savings", [
    (lambda a, b: (a + 1) + (a + 2), 0),
    (lambda a, b: (a + b) + (a + b), 1),
    (lambda a, b: (lambda d: mx.sym.Group([a * d, a * d]))(a + 1), 0),   # merged, then one _copy
    (lambda a, b: (lambda d: mx.sym.Group([a * d + b, a * d + b]))(a + 1), 1),
    (lambda a, b: mx.sym.Group([a * (a + 1), a * (a + 1)]), 1),
    (lambda a, b: mx.sym.Dropout(a, p=0.5) + mx.sym.Dropout(a, p=0.5), 0),  # random: never merged
])
def test_common_expressions_are_merged_with_the_same_numbers(monkeypatch, build, savings):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    sym = build(a, b)
    r = np.random.RandomState(0)
    data = {"a": r.rand(3, 4), "b": r.rand(3, 4)}
    data = {k: v for k, v in data.items() if k in sym.list_arguments()}
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "0")
    orig = _bind(sym, **data)
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "1")
    merged = _bind(sym, **data)
    n_orig = len(orig.get_optimized_symbol().get_internals())
    n_merged = len(merged.get_optimized_symbol().get_internals())
    assert n_orig - n_merged == savings
    if "Dropout" in sym.tojson():
        return
    outs = [o.asnumpy() for o in orig.forward(is_train=True)]
    orig.backward([mx.nd.ones(o.shape) for o in outs])
    outs2 = [o.asnumpy() for o in merged.forward(is_train=True)]
    merged.backward([mx.nd.ones(o.shape) for o in outs2])
    for x, y in zip(outs, outs2):
        np.testing.assert_allclose(x, y, rtol=1e-6)
    for x, y in zip(orig.grad_arrays, merged.grad_arrays):
        np.testing.assert_allclose(x.asnumpy(), y.asnumpy(), rtol=1e-6)
    if len(outs2) == 2:  # repeated outputs are distinct arrays
        merged.outputs[0][:] = -1
        assert merged.outputs[1].asnumpy().min() > -1


def _allocated(exe):
    return int(re.search(r"Total (\d+) MB allocated", exe.debug_str()).group(1))


def test_debug_str_reports_the_memory_plan():
    data = mx.sym.var("data")
    for _ in range(10):
        data = data * data
    shape = (4, 256, 256)                                  # 1 MB per float32 array
    train = _allocated(data.simple_bind(mx.cpu(), data=shape))
    infer = _allocated(data.simple_bind(mx.cpu(), data=shape, grad_req="null"))
    blocked = _allocated(mx.sym.stop_gradient(data).simple_bind(mx.cpu(), data=shape))
    assert infer == blocked == 2         # forward only: two buffers ping-pong
    assert train == 10 + 2               # every forward result kept, two gradient buffers
    text = data.simple_bind(mx.cpu(), data=shape).debug_str()
    assert "Op:elemwise_mul, Name=" in text and "def " in text


def test_a_bound_symbol_may_hold_two_variables_of_one_name():
    """MXNet binds every variable named 'a' to the array named 'a'; a hybridized block's graph
    (parameters bound by name too) still refuses two. The executor's passes lint with that
    allowance (they said "pass cse produced an invalid graph")."""
    out = mx.sym.var("a") * 2 + mx.sym.var("a")
    assert out.list_arguments() == ["a", "a"]
    np.testing.assert_array_equal(out.eval(a=mx.nd.array([1.0, 2.0]))[0].asnumpy(), [3.0, 6.0])
    ex = out.simple_bind(mx.cpu(), a=(2,))
    ex.arg_dict["a"][:] = 1.0
    np.testing.assert_array_equal(ex.forward(is_train=False)[0].asnumpy(), [3.0, 3.0])
