"""Storage types through bound Symbols (MXNet's FInferStorageType, compiler/storage.py) and the
sparse operators MXNet's tests use: which outputs and gradients stay row_sparse/csr."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import hybridnet as mx
from hybridnet.base import MXNetError
from hybridnet.test_utils import assert_almost_equal, rand_ndarray

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from real_mxnet import MXNET_PYTHON, SKIP_REASON  # noqa: E402


def _rsp(a):
    return mx.nd.array(a).tostype("row_sparse")


def test_executor_outputs_keep_sparse_storage():
    lhs, rhs = mx.sym.Variable("lhs", stype="row_sparse"), mx.sym.Variable("rhs", stype="row_sparse")
    a = np.array([[1.0, 0, 0], [0, 0, 0], [0, 2.0, 3.0]], dtype=np.float32)
    b = np.array([[0.0, 0, 0], [4.0, 0, 0], [1.0, 0, 0]], dtype=np.float32)
    exe = mx.sym.elemwise_add(lhs, rhs).bind(mx.cpu(), {"lhs": _rsp(a), "rhs": _rsp(b)})
    out = exe.forward()[0]
    assert out.stype == "row_sparse"
    assert_almost_equal(out.asnumpy(), a + b)
    # a dense operand makes elemwise_add dense; unary f(0)=0 operators keep the storage
    exe = mx.sym.elemwise_add(lhs, rhs).bind(mx.cpu(), {"lhs": _rsp(a), "rhs": mx.nd.array(b)})
    assert exe.forward()[0].stype == "default"
    exe = mx.sym.sqrt(mx.sym.abs(lhs)).bind(mx.cpu(), {"lhs": _rsp(a)})
    assert exe.forward()[0].stype == "row_sparse"
    assert_almost_equal(exe.outputs[0].asnumpy(), np.sqrt(a))
    # training forward (dense compute under autograd) gives the same storage and values
    exe = mx.sym.relu(lhs).bind(mx.cpu(), {"lhs": _rsp(a)}, args_grad={"lhs": mx.nd.zeros((3, 3))})
    assert exe.forward(is_train=True)[0].stype == "row_sparse"
    exe.backward([mx.nd.ones((3, 3))])
    assert_almost_equal(exe.grad_dict["lhs"].asnumpy(), (a > 0).astype(np.float32))


def test_cast_storage_to_csr_in_a_graph():
    x = mx.sym.Variable("x")
    a = np.array([[0.0, 1.0], [2.0, 0.0]], dtype=np.float32)
    exe = mx.sym.cast_storage(x, stype="csr").bind(mx.cpu(), {"x": mx.nd.array(a)},
                                                   args_grad={"x": mx.nd.zeros((2, 2))})
    out = exe.forward(is_train=True)[0]
    assert out.stype == "csr"
    assert_almost_equal(out.asnumpy(), a)
    exe.backward([mx.nd.ones((2, 2))])
    assert_almost_equal(exe.grad_dict["x"].asnumpy(), np.ones((2, 2)))
    # a sparse variable cast to dense, then used by a dense operator
    y = mx.sym.Variable("y", stype="csr")
    exe = (mx.sym.cast_storage(y, stype="default") * 2).bind(mx.cpu(), {"y": mx.nd.array(a).tostype("csr")})
    assert exe.forward()[0].stype == "default"
    assert_almost_equal(exe.outputs[0].asnumpy(), 2 * a)


def test_simple_bind_allocates_declared_and_inferred_storage():
    data = mx.sym.Variable("data")
    w = mx.sym.Variable("w", stype="row_sparse")
    emb = mx.sym.Embedding(data, w, input_dim=10, output_dim=3, sparse_grad=True)
    exe = emb.simple_bind(mx.cpu(), grad_req={"data": "null", "w": "write"}, data=(4,))
    assert exe.arg_dict["w"].stype == "row_sparse"
    assert exe.grad_dict["w"].stype == "row_sparse"
    exe.arg_dict["data"][:] = np.array([1, 3, 3, 7])
    exe.arg_dict["w"][:] = rand_ndarray((10, 3), "row_sparse", density=1)
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((4, 3))])
    g = exe.grad_dict["w"]
    assert g.stype == "row_sparse"
    assert sorted(g.indices.asnumpy().tolist()) == [1, 3, 7]
    assert_almost_equal(g.asnumpy()[3], np.full(3, 2.0))
    # dot(csr, w): w's gradient dot(csr.T, head) is row_sparse; stype_dict overrides a Variable
    x = mx.sym.Variable("x", stype="csr")
    v = mx.sym.Variable("v")
    exe = mx.sym.dot(x, v).simple_bind(mx.cpu(), x=(4, 6), v=(6, 2), stype_dict={"v": "row_sparse"})
    assert (exe.arg_dict["x"].stype, exe.arg_dict["v"].stype, exe.grad_dict["v"].stype) == \
        ("csr", "row_sparse", "row_sparse")


def test_batchnorm_refuses_fix_gamma_with_sparse_inputs():
    data = mx.sym.Variable("data", stype="row_sparse")
    args = [_rsp(np.ones((2, 3))), _rsp(np.ones(3)), _rsp(np.ones(3))]
    aux = [_rsp(np.zeros(3)), _rsp(np.ones(3))]
    with pytest.raises(MXNetError, match="fix_gamma"):
        mx.sym.BatchNorm(data, fix_gamma=True).bind(mx.cpu(), args, aux_states=aux)
    exe = mx.sym.BatchNorm(data, fix_gamma=False).bind(mx.cpu(), args, aux_states=aux)
    assert exe.forward()[0].stype == "default"


def test_square_sum_scatter_and_quadratic():
    a = np.array([[1.0, 2.0], [0, 0], [3.0, 0]], dtype=np.float32)
    r = mx.nd._internal._square_sum(_rsp(a), axis=1, keepdims=True)
    assert r.stype == "row_sparse" and r.indices.asnumpy().tolist() == [0, 2]
    assert_almost_equal(r.asnumpy(), (a * a).sum(1, keepdims=True))
    assert mx.nd._internal._square_sum(_rsp(a), axis=0).stype == "default"
    # a graph: square_sum's gradient of a row_sparse input is row_sparse
    x = mx.sym.Variable("x", stype="row_sparse")
    exe = mx.sym._internal._square_sum(x, axis=1, keepdims=True).simple_bind(mx.cpu(), x=(3, 2))
    assert exe.grad_dict["x"].stype == "row_sparse"
    # scatter division computes only where lhs stores rows
    lhs = mx.sym.Variable("lhs", stype="row_sparse")
    rhs = mx.sym.Variable("rhs", stype="row_sparse")
    b = np.array([[2.0, 2.0], [5.0, 5.0], [0, 0]], dtype=np.float32)
    exe = mx.sym._internal._scatter_elemwise_div(lhs, rhs).bind(mx.cpu(), {"lhs": _rsp(a), "rhs": _rsp(b)})
    out = exe.forward()[0]
    assert out.stype == "row_sparse" and out.indices.asnumpy().tolist() == [0, 2]
    assert_almost_equal(out.asnumpy()[0], a[0] / b[0])
    s = mx.nd._internal._scatter_plus_scalar(_rsp(a), scalar=1.0)
    assert s.stype == "row_sparse" and s.indices.asnumpy().tolist() == [0, 2]
    c = mx.nd.array(a).tostype("csr")
    assert mx.nd.contrib.quadratic(c, a=1.0, b=2.0).stype == "csr"
    assert mx.nd.contrib.quadratic(c, a=1.0, b=2.0, c=1.0).stype == "default"


def test_sparse_fully_connected_and_sparse_embedding_deterministic():
    data = rand_ndarray((5, 10), "csr", density=0.5)
    weight = rand_ndarray((8, 10), "row_sparse", density=1)
    bias = rand_ndarray((8, 1), "row_sparse", density=1)
    out = mx.nd.sparse.FullyConnected(data, weight, bias, num_hidden=8)
    want = data.asnumpy() @ weight.asnumpy().T + bias.asnumpy().reshape(-1)
    assert out.stype == "default"
    assert_almost_equal(out.asnumpy(), want, rtol=1e-5, atol=1e-5)
    d = mx.sym.Variable("data")
    w = mx.sym.Variable("w", stype="row_sparse")
    emb = mx.sym.contrib.SparseEmbedding(d, w, input_dim=6, output_dim=2, deterministic=True)
    exe = emb.simple_bind(mx.cpu(), grad_req={"data": "null", "w": "write"}, data=(3,))
    assert exe.grad_dict["w"].stype == "row_sparse"


_REAL_SCRIPT = r"""
import json, numpy as np, mxnet as mx
def rsp(a): return mx.nd.array(a).tostype('row_sparse')
def csr(a): return mx.nd.array(a).tostype('csr')
a = np.array([[1.0, 0, 2.0], [0, 0, 0], [0, 3.0, 0]], dtype=np.float32)
res = {}
l, r = mx.sym.Variable('l'), mx.sym.Variable('r')
cases = {
  'add_rsp_rsp': (mx.sym.elemwise_add(l, r), {'l': rsp(a), 'r': rsp(a)}),
  'add_rsp_dns': (mx.sym.elemwise_add(l, r), {'l': rsp(a), 'r': mx.nd.array(a)}),
  'mul_rsp_dns': (mx.sym.elemwise_mul(l, r), {'l': rsp(a), 'r': mx.nd.array(a)}),
  'mul_csr_csr': (mx.sym.elemwise_mul(l, r), {'l': csr(a), 'r': csr(a)}),
  'sqrt_csr': (mx.sym.sqrt(l), {'l': csr(a)}),
  'exp_rsp': (mx.sym.exp(l), {'l': rsp(a)}),
  'dot_csr_dns': (mx.sym.dot(l, r), {'l': csr(a), 'r': mx.nd.array(a)}),
  'dotT_csr_dns': (mx.sym.dot(l, r, transpose_a=True), {'l': csr(a), 'r': mx.nd.array(a)}),
  'cast_csr': (mx.sym.cast_storage(l, stype='csr'), {'l': mx.nd.array(a)}),
  'max_rsp_rsp': (mx.sym._internal._maximum(l, r), {'l': rsp(a), 'r': rsp(a)}),
  'sqsum_rsp': (mx.sym._internal._square_sum(l, axis=1, keepdims=True), {'l': rsp(a)}),
}
for k, (s, args) in cases.items():
    exe = s.bind(mx.cpu(), {n: args[n] for n in s.list_arguments()})
    res[k] = exe.forward()[0].stype
x = mx.sym.Variable('x', stype='csr'); w = mx.sym.Variable('w', stype='row_sparse')
exe = mx.sym.dot(x, w).simple_bind(mx.cpu(), x=(3, 3), w=(3, 2))
res['grad_dot_csr_rsp'] = exe.grad_dict['w'].stype
d = mx.sym.Variable('d')
exe = mx.sym.Embedding(d, w, input_dim=3, output_dim=2, sparse_grad=True).simple_bind(mx.cpu(), d=(2,))
res['grad_embedding'] = exe.grad_dict['w'].stype
print(json.dumps(res))
"""


@pytest.mark.skipif(MXNET_PYTHON is None, reason=SKIP_REASON)
def test_storage_types_match_real_mxnet():
    real = json.loads(subprocess.run([MXNET_PYTHON, "-c", _REAL_SCRIPT], capture_output=True, text=True,
                                     timeout=300, check=True).stdout.strip().splitlines()[-1])
    ns: dict = {"mx": mx, "np": np, "json": json}
    exec(compile(_REAL_SCRIPT.replace("import json, numpy as np, mxnet as mx", "")
                 .replace("print(json.dumps(res))", ""), "<real script>", "exec"), ns)
    ours = ns["res"]
    assert ours == real
