"""Operator-specific edge cases of the reduce/shape/index/linalg families that the generic
sample table does not express: error messages, MXNet's legacy shape rules, attribute strings
from JSON, front-end names and methods, and composite gradients."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet.base import MXNetError
from hybridnet.ndarray.ndarray import invoke
from hybridnet.ops import registry
from hybridnet.ops.shape import reshape_shape


def nd(a, dtype="float32"):  # type: ignore[no-untyped-def]
    return mx.nd.array(np.asarray(a), dtype=dtype)


def run(name: str, *inputs, **attrs):  # type: ignore[no-untyped-def]
    return invoke(registry.get(name), list(inputs), attrs)


# ---- Reshape ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dshape, spec, reverse, want", [
    ((2, 3, 4), (4, 0, 2), False, (4, 3, 2)),
    ((2, 3, 4), (-4, -1, 2, -2), False, (1, 2, 3, 4)),
    ((2, 3, 4), (0, -4, 3, -1, -2), False, (2, 3, 1, 4)),
    ((2, 3, 4, 5), (-3, -2), False, (6, 4, 5)),
    ((10, 5, 4), (-1, 0), True, (50, 4)),
    ((10, 5, 4), (0, -1), True, (5, 40)),
    ((2, 3, 4), (-1, 0), False, (8, 3)),
])
def test_reshape_codes(dshape: tuple, spec: tuple, reverse: bool, want: tuple) -> None:
    assert reshape_shape(dshape, spec, reverse) == want
    x = mx.nd.zeros(dshape)
    assert mx.nd.reshape(x, shape=spec, reverse=reverse).shape == want


@pytest.mark.parametrize("spec", [(-1, -1), (5, -1), (7,), (0, 0, 0, 0), (-4, -1, -1, 0), (-5,)])
def test_reshape_errors_name_the_shapes(spec: tuple) -> None:
    with pytest.raises(MXNetError, match=r"Reshape.*\(2, 3, 4\)"):
        mx.nd.reshape(mx.nd.zeros((2, 3, 4)), shape=spec)


def test_reshape_method_and_json_attrs() -> None:
    x = nd(np.arange(24).reshape(2, 3, 4))
    np.testing.assert_array_equal(x.reshape((-1, 0)).asnumpy(), np.arange(24).reshape(8, 3))
    np.testing.assert_array_equal(x.reshape(6, -1).asnumpy(), np.arange(24).reshape(6, 4))
    assert x.reshape(-1, 0, reverse=True).shape == (6, 4)
    op = registry.get("reshape")
    attrs = op.parse_attrs({"shape": "(0, -1)", "reverse": "False"})
    assert attrs == {"shape": (0, -1), "reverse": False}
    assert invoke(op, [x], attrs).shape == (2, 12)


def test_reshape_legacy_target_shape() -> None:
    x = mx.nd.zeros((2, 3, 4))
    assert mx.nd.Reshape(x, target_shape=(0, 4)).shape == (6, 4)
    assert mx.nd.Reshape(x, target_shape=(5, 0), keep_highest=True).shape == (2, 12)


# ---- reductions ------------------------------------------------------------------------------
def test_reduce_all_gives_shape_1_and_exclude() -> None:
    x = nd(np.arange(24).reshape(2, 3, 4))
    assert mx.nd.sum(x).shape == (1,)
    assert mx.nd.sum(x, axis=()).shape == (1,)
    assert mx.nd.sum(x, keepdims=True).shape == (1, 1, 1)
    np.testing.assert_allclose(mx.nd.sum(x, axis=1, exclude=True).asnumpy(), np.arange(24).reshape(2, 3, 4).sum((0, 2)))
    assert x.sum(axis=(0, -1)).shape == (3,)
    assert mx.nd.sum_axis(x, axis=0).shape == (3, 4)


def test_reduce_axis_errors() -> None:
    x = mx.nd.zeros((2, 3))
    with pytest.raises(MXNetError, match="axis 2 is out of range"):
        mx.nd.sum(x, axis=2)
    with pytest.raises(MXNetError, match="duplicate"):
        mx.nd.mean(x, axis=(0, -2))


def test_integer_sum_keeps_dtype() -> None:
    x = nd([[1, 2], [3, 4]], dtype="int32")
    out = mx.nd.sum(x, axis=0)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.asnumpy(), [4, 6])


def test_nansum_gradient_skips_nan() -> None:
    x = nd([1.0, np.nan, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.nansum(x)
    y.backward()
    assert y.asscalar() == 3.0
    np.testing.assert_array_equal(x.grad.asnumpy(), [1.0, 0.0, 1.0])


def test_norm_rejects_other_orders() -> None:
    with pytest.raises(MXNetError, match="ord=3"):
        mx.nd.norm(mx.nd.ones((2, 2)), ord=3)


def test_argmax_dtype_follows_input() -> None:
    x = mx.nd.array(np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 1.0]]), dtype="float64")
    out = mx.nd.argmax(x, axis=1)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.asnumpy(), [1, 0])
    assert mx.nd.argmax(x).shape == (1,) and mx.nd.argmax(x).asscalar() == 3
    assert mx.nd.argmin(x, keepdims=True).shape == (1, 1)
    assert x.argmax_channel().asnumpy().tolist() == [1, 0]


def test_topk_variants() -> None:
    x = nd([[3.0, 1.0, 4.0, 1.5], [9.0, 2.0, 6.0, 5.0]])
    idx = mx.nd.topk(x, k=2)
    assert idx.dtype == np.float32
    np.testing.assert_array_equal(idx.asnumpy(), [[2, 0], [0, 2]])
    vals, idx = mx.nd.topk(x, k=2, ret_typ="both", is_ascend=True, dtype="int64")
    np.testing.assert_array_equal(vals.asnumpy(), [[1.0, 1.5], [2.0, 5.0]])
    assert idx.dtype == np.int64
    mask = x.topk(axis=0, k=1, ret_typ="mask")
    np.testing.assert_array_equal(mask.asnumpy(), [[0, 0, 0, 0], [1, 1, 1, 1]])
    with pytest.raises(MXNetError, match="k=5"):
        mx.nd.topk(x, k=5)


def test_sort_argsort() -> None:
    x = nd([[3.0, 1.0, 2.0]])
    np.testing.assert_array_equal(mx.nd.sort(x, is_ascend=False).asnumpy(), [[3, 2, 1]])
    np.testing.assert_array_equal(x.argsort().asnumpy(), [[1, 2, 0]])


def test_moments_output_names() -> None:
    op = registry.get("moments")
    assert op.output_names({}) == ["mean", "var"]


# ---- slicing ---------------------------------------------------------------------------------
def test_slice_none_entries_from_json() -> None:
    op = registry.get("slice")
    attrs = op.parse_attrs({"begin": "(None, 1)", "end": "(None, None)", "step": "(-1, 2)"})
    x = nd(np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(invoke(op, [x], attrs).asnumpy(), np.arange(12).reshape(3, 4)[::-1, 1::2])
    assert mx.nd.crop(x, begin=(1,), end=(3,)).shape == (2, 4)


@pytest.mark.parametrize("begin, end, msg", [((1,), (1,), "empty"), ((3,), (None,), "out of range"),
                                             ((2,), (1,), "invalid range")])
def test_slice_errors(begin: tuple, end: tuple, msg: str) -> None:
    with pytest.raises(MXNetError, match=msg):
        mx.nd.slice(mx.nd.zeros((3, 4)), begin=begin, end=end)


def test_slice_clips_bounds_past_the_axis() -> None:
    # MXNet 1.9.1's GetIndexRange clips an end past the axis (nd.slice(zeros((3, 4)), (0,), (5,))
    # is (3, 4) on real MXNet); under NumPy shape semantics a begin past it selects nothing
    x = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(mx.nd.slice(nd(x), begin=(0,), end=(5,)).asnumpy(), x)
    np.testing.assert_array_equal(mx.nd.slice(nd(x), begin=(-7, 1), end=(None, 9), step=(1, 2)).asnumpy(),
                                  x[-7:, 1:9:2])
    with mx.util.np_shape(True):
        assert mx.nd.slice(nd(x), begin=(5,), end=(None,)).shape == (0, 4)
        np.testing.assert_array_equal(mx.nd.slice(nd(x), begin=(10,), end=(None,), step=(-2,)).asnumpy(),
                                      x[10::-2])


def test_slice_axis_and_like() -> None:
    x = nd(np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(mx.nd.slice_axis(x, axis=1, begin=-3, end=-1).asnumpy(),
                                  np.arange(12).reshape(3, 4)[:, 1:3])
    with pytest.raises(MXNetError, match="slice_axis"):
        mx.nd.slice_axis(x, axis=0, begin=2, end=1)
    assert mx.nd.slice_like(x, mx.nd.zeros((2, 2)), axes=(1,)).shape == (3, 2)


# ---- split / concat / stack --------------------------------------------------------------------
def test_split_outputs() -> None:
    x = mx.nd.zeros((2, 6))
    parts = mx.nd.split(x, num_outputs=3)
    assert isinstance(parts, list) and [p.shape for p in parts] == [(2, 2)] * 3
    one = mx.nd.split(x, num_outputs=1)
    assert isinstance(one, mx.nd.NDArray) and one.shape == (2, 6)
    with pytest.raises(MXNetError, match="num_outputs=4"):
        mx.nd.split(x, num_outputs=4)
    assert registry.get("split").output_names({"num_outputs": 2}) == ["output0", "output1"]


def test_split_v2_internal() -> None:
    x = nd(np.arange(12).reshape(2, 6))
    a, b, c = mx.nd._internal._split_v2(x, indices=(0, 1, 4), axis=1)
    assert [a.shape, b.shape, c.shape] == [(2, 1), (2, 3), (2, 2)]
    assert len(mx.nd._internal._split_v2(x, indices=(), sections=2, axis=1)) == 2


def test_concat_stack_gradients_split_back() -> None:
    a, b = nd(np.ones((2, 2))), nd(np.ones((2, 3)))
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = mx.nd.concat(a, b, dim=1)
    y.backward(nd(np.arange(10).reshape(2, 5)))
    np.testing.assert_array_equal(b.grad.asnumpy(), np.arange(10).reshape(2, 5)[:, 2:])
    assert mx.nd.stack(a, a, axis=-1).shape == (2, 2, 2)


# ---- broadcasting / casts ------------------------------------------------------------------------
def test_broadcast_rules() -> None:
    x = mx.nd.zeros((2, 1, 1))
    assert mx.nd.broadcast_to(x, shape=(0, 3, 4)).shape == (2, 3, 4)
    assert x.broadcast_to((2, 5, 1)).shape == (2, 5, 1)
    with pytest.raises(MXNetError, match="broadcast_to"):
        mx.nd.broadcast_to(x, shape=(3, 3, 3))
    assert mx.nd.broadcast_axes(x, axis=(1, 2), size=(3, 4)).shape == (2, 3, 4)
    assert mx.nd.broadcast_like(x, mx.nd.zeros((7, 5)), lhs_axes=(1,), rhs_axes=(0,)).shape == (2, 7, 1)


def test_cast_and_amp() -> None:
    x = nd([1.7, -1.7])
    np.testing.assert_array_equal(mx.nd.Cast(x, dtype="int32").asnumpy(), [1, -1])
    assert mx.nd.cast(x, dtype=np.float16).dtype == np.float16
    i = nd([1, 2], dtype="int32")
    assert mx.nd.amp_cast(i, dtype="float16").dtype == np.int32
    h, f = mx.nd.amp_multicast(x.astype("float16"), x, num_outputs=2)
    assert h.dtype == np.float32 and f.dtype == np.float32
    assert registry.get("Cast").parse_attrs({"dtype": "float16"}) == {"dtype": "float16"}


def test_shape_and_size_array() -> None:
    x = mx.nd.zeros((2, 3, 4))
    assert mx.nd.shape_array(x).asnumpy().tolist() == [2, 3, 4]
    assert mx.nd.shape_array(x).dtype == np.int64
    assert mx.nd.size_array(x).asnumpy().tolist() == [24]


# ---- squeeze / expand / transpose ---------------------------------------------------------------
def test_squeeze_rules() -> None:
    assert mx.nd.squeeze(mx.nd.zeros((1, 1))).shape == (1,)
    with pytest.raises(MXNetError, match="size 3, not 1"):
        mx.nd.squeeze(mx.nd.zeros((2, 3)), axis=1)
    assert mx.nd.expand_dims(mx.nd.zeros((2, 3)), axis=-3).shape == (1, 2, 3)
    with pytest.raises(MXNetError, match="expand_dims"):
        mx.nd.expand_dims(mx.nd.zeros((2, 3)), axis=3)
    with pytest.raises(MXNetError, match="transpose"):
        mx.nd.transpose(mx.nd.zeros((2, 3)), axes=(0,))
    assert mx.nd.swapaxes(mx.nd.zeros((2, 3, 4)), dim1=0, dim2=2).shape == (4, 3, 2)
    assert mx.nd.flip(mx.nd.zeros((2, 3)), axis=1).shape == (2, 3)


# ---- depth/space, pad, diag ----------------------------------------------------------------------
def test_depth_to_space_doc_example() -> None:
    x = nd(np.arange(24).reshape(1, 4, 2, 3))
    want = [[[[0, 6, 1, 7, 2, 8], [12, 18, 13, 19, 14, 20], [3, 9, 4, 10, 5, 11], [15, 21, 16, 22, 17, 23]]]]
    y = mx.nd.depth_to_space(x, block_size=2)
    np.testing.assert_array_equal(y.asnumpy(), want)
    np.testing.assert_array_equal(mx.nd.space_to_depth(y, block_size=2).asnumpy(), x.asnumpy())


def test_pad_rejects_batch_padding() -> None:
    with pytest.raises(MXNetError, match="Pad"):
        mx.nd.pad(mx.nd.zeros((1, 1, 2, 2)), mode="constant", pad_width=(1, 1, 0, 0, 0, 0, 0, 0))


def test_diag_vector_and_matrix() -> None:
    v = nd([1.0, 2.0])
    np.testing.assert_array_equal(mx.nd.diag(v, k=1).asnumpy(), np.diag([1.0, 2.0], 1))
    np.testing.assert_array_equal(mx.nd.diag(mx.nd.diag(v)).asnumpy(), [1.0, 2.0])


# ---- Sequence* -----------------------------------------------------------------------------------
def test_sequence_ops_inputs_and_errors() -> None:
    op = registry.get("SequenceMask")
    assert op.active_inputs({}) == ("data",)
    assert op.active_inputs({"use_sequence_length": True}) == ("data", "sequence_length")
    x = nd(np.arange(6).reshape(3, 2))
    with pytest.raises(MXNetError, match="sequence_length"):
        mx.nd.SequenceMask(x, use_sequence_length=True)
    out = mx.nd.SequenceMask(x, nd([1.0, 2.0]), use_sequence_length=True, value=-1)
    np.testing.assert_array_equal(out.asnumpy(), [[0, 1], [-1, 3], [-1, -1]])
    np.testing.assert_array_equal(mx.nd.SequenceLast(x, nd([1.0, 3.0]), use_sequence_length=True).asnumpy(), [0, 5])
    np.testing.assert_array_equal(mx.nd.SequenceReverse(x, nd([2.0, 3.0]), use_sequence_length=True).asnumpy(),
                                  [[2, 5], [0, 3], [4, 1]])


# ---- indexing ----------------------------------------------------------------------------------
def test_take_modes_and_duplicate_gradient() -> None:
    a = nd(np.arange(6).reshape(3, 2))
    np.testing.assert_array_equal(run("take", a, nd([5.0, -1.0])).asnumpy(), [[4, 5], [0, 1]])
    np.testing.assert_array_equal(run("take", a, nd([4.0, -1.0]), mode="wrap").asnumpy(), [[2, 3], [4, 5]])
    bad = run("take", a, nd([3.0]), mode="raise")  # raised when read, as MXNet's engine does
    with pytest.raises(MXNetError, match="raise"):
        bad.asnumpy()
    a.attach_grad()
    with mx.autograd.record():
        y = run("take", a, nd([1.0, 1.0, 0.0]))
    y.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), [[1, 1], [2, 2], [0, 0]])


def test_one_hot_pick_where() -> None:
    oh = mx.nd.one_hot(nd([0.0, 2.0, 7.0]), depth=3)
    np.testing.assert_array_equal(oh.asnumpy(), [[1, 0, 0], [0, 0, 1], [0, 0, 0]])
    x = nd([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_array_equal(mx.nd.pick(x, nd([2.0, -1.0, -2.0]), axis=1, mode="wrap").asnumpy(), [1, 4, 5])
    np.testing.assert_array_equal(mx.nd.choose_element_0index(x, nd([0.0, 1.0, 0.0])).asnumpy(), [1, 4, 5])
    with pytest.raises(MXNetError, match="axis=None"):
        mx.nd.pick(x, nd([0.0]), axis=None)
    w = mx.nd.where(nd([1.0, 0.0, 1.0]), x, -x)
    np.testing.assert_array_equal(w.asnumpy(), [[1, 2], [-3, -4], [5, 6]])
    with pytest.raises(MXNetError, match="condition"):
        mx.nd.where(nd([1.0, 0.0]), x, x)


def test_gather_scatter_roundtrip() -> None:
    data = nd(np.arange(12).reshape(3, 4))
    idx = nd([[0.0, 2.0], [1.0, 3.0]])
    g = mx.nd.gather_nd(data, idx)
    np.testing.assert_array_equal(g.asnumpy(), [1, 11])
    s = mx.nd.scatter_nd(g, idx, shape=(3, 4))
    assert s.asnumpy()[0, 1] == 1 and s.asnumpy()[2, 3] == 11 and s.asnumpy().sum() == 12


def test_ravel_unravel_roundtrip() -> None:
    idx = nd([[3.0, 6.0], [4.0, 5.0]])
    flat = mx.nd.ravel_multi_index(idx, shape=(7, 6))
    np.testing.assert_array_equal(flat.asnumpy(), [22, 41])
    np.testing.assert_array_equal(mx.nd.unravel_index(flat, shape=(7, 6)).asnumpy(), idx.asnumpy())


# ---- linalg ------------------------------------------------------------------------------------
def test_dot_shapes_and_errors() -> None:
    assert mx.nd.dot(mx.nd.zeros((2, 3, 4)), mx.nd.zeros((4, 5, 6))).shape == (2, 3, 5, 6)
    assert mx.nd.dot(mx.nd.zeros((4, 3)), mx.nd.zeros((5, 4)), transpose_a=True, transpose_b=True).shape == (3, 5)
    assert mx.nd.dot(mx.nd.zeros(3), mx.nd.zeros(3)).shape == (1,)
    with pytest.raises(MXNetError, match=r"dot: shape mismatch.*\(2, 3\)"):
        mx.nd.dot(mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3)))
    with pytest.raises(MXNetError, match="batch_dot"):
        mx.nd.batch_dot(mx.nd.zeros((2, 3, 4)), mx.nd.zeros((3, 4, 5)))


def test_potrf_gradient_through_spd_parametrisation() -> None:
    """d/dX sum(potrf(X X^T + 3I) * H) vs finite differences (potrf reads only its triangle)."""
    rng = np.random.RandomState(0)
    X0, H = rng.uniform(-1, 1, (3, 3)), rng.standard_normal((3, 3))

    def f(X: np.ndarray) -> float:
        t = torch.from_numpy(X)
        A = t @ t.T + 3 * torch.eye(3, dtype=torch.float64)
        return float((registry.get("_linalg_potrf").kernel(A) * torch.from_numpy(H)).sum())

    x = mx.nd.array(X0, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        L = mx.nd.linalg.potrf(mx.nd.linalg.syrk(x) + mx.nd.array(3 * np.eye(3), dtype="float64"))
    L.backward(mx.nd.array(H, dtype="float64"))
    num = np.zeros_like(X0)
    for i in np.ndindex(3, 3):
        e = np.zeros_like(X0)
        e[i] = 1e-6
        num[i] = (f(X0 + e) - f(X0 - e)) / 2e-6
    np.testing.assert_allclose(x.grad.asnumpy(), num, rtol=1e-5, atol=1e-7)


def test_det_shapes_and_hidden_outputs() -> None:
    a = mx.nd.array(np.eye(3) * 2)
    assert mx.nd.linalg.det(a).shape == (1,)
    assert mx.nd.linalg.det(mx.nd.array(np.stack([np.eye(2)] * 4))).shape == (4,)
    sign, logdet = mx.nd.linalg.slogdet(a)
    assert sign.asscalar() == 1.0 and abs(logdet.asscalar() - 3 * np.log(2)) < 1e-6
    assert registry.get("_linalg_det").total_outputs({}) == 3
    assert registry.get("_linalg_slogdet").output_names({}) == ["sign", "logdet"]


def test_gemm_axis_and_extract_make_trian() -> None:
    A, B = np.random.rand(3, 2, 4), np.random.rand(4, 2, 5)
    out = mx.nd.linalg.gemm2(mx.nd.array(A), mx.nd.array(B), axis=0).asnumpy()
    np.testing.assert_allclose(out[:, 1, :], A[:, 1, :] @ B[:, 1, :], rtol=1e-5)
    m = nd(np.arange(1, 10).reshape(3, 3))
    np.testing.assert_array_equal(mx.nd.linalg.extracttrian(m).asnumpy(), [1, 4, 5, 7, 8, 9])
    np.testing.assert_array_equal(mx.nd.linalg.extracttrian(m, lower=False).asnumpy(), [1, 2, 3, 5, 6, 9])
    np.testing.assert_array_equal(mx.nd.linalg.extracttrian(m, offset=-1).asnumpy(), [4, 7, 8])
    np.testing.assert_array_equal(mx.nd.linalg.maketrian(nd([1.0, 2.0, 3.0]), offset=1).asnumpy(),
                                  [[0, 1, 2], [0, 0, 3], [0, 0, 0]])


def test_frontend_names_exist() -> None:
    for name in ("flip", "reverse", "crop", "swapaxes", "SwapAxis", "sum_axis", "max_axis", "min_axis",
                 "broadcast_axes", "split", "SliceChannel", "concat", "Concat", "flatten", "Flatten",
                 "cast", "Cast", "pad", "Pad", "reshape", "Reshape", "choose_element_0index", "khatri_rao"):
        assert callable(getattr(mx.nd, name)), name
    for name in ("gemm", "gemm2", "potrf", "potri", "trmm", "trsm", "syrk", "sumlogdiag", "inverse", "det",
                 "slogdet", "extractdiag", "makediag", "extracttrian", "maketrian"):
        assert callable(getattr(mx.nd.linalg, name)), name
    for name in ("index_array", "index_copy", "boolean_mask"):
        assert callable(getattr(mx.nd.contrib, name)), name


def test_gather_nd_out_of_bounds_is_index_error_and_mxnet_error() -> None:
    data = mx.nd.array([[0, 1, 2], [3, 4, 5]])
    for bad in ([[0, 1, 0], [0, 1, 3]], [[0, 1, 0], [0, 1, -5]]):
        with pytest.raises(IndexError, match="out of bounds"):
            mx.nd.gather_nd(data, mx.nd.array(bad))
        with pytest.raises(MXNetError):
            mx.nd.gather_nd(data, mx.nd.array(bad))
    np.testing.assert_array_equal(mx.nd.gather_nd(data, mx.nd.array([[0, 1, -1], [0, 1, -2]])).asnumpy(),
                                  [0, 4, 4])
