"""ONNX import (mx.contrib.onnx, MXNet 1.9.1's onnx2mx): what hybridnet exports and what
torch.onnx.export writes import back into registry operators and reproduce onnxruntime's outputs
(and the original block's); import_to_gluon gives a SymbolBlock that hybridizes; hostile files
raise MXNetError. onnx and onnxruntime are optional: these tests skip cleanly without them.
"""
import os
import sys

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import gluon, nd
from hybridnet import onnx as mxonnx
from hybridnet.base import MXNetError
from hybridnet.contrib import onnx as onnx_mxnet
from hybridnet.gluon import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fixture_paths import MXNET as FIXTURES  # noqa: E402
from fixture_paths import load_case  # noqa: E402

CASES = sorted(os.listdir(FIXTURES)) if os.path.isdir(FIXTURES) else []
RTOL, ATOL = 1e-4, 1e-5
MAX_DIFF: dict = {}   # model -> largest |import - onnxruntime| (printed with -s)


@pytest.fixture(scope="module")
def rt():
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    return onnx, ort


def _ort(rt, path, feeds):
    so = rt[1].SessionOptions()
    so.log_severity_level = 3
    sess = rt[1].InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _outs(y):
    return [o.asnumpy() for o in (y if isinstance(y, (list, tuple)) else [y])]


def _import_and_compare(rt, path, feeds, tag, rtol=RTOL, atol=ATOL, hybridize=True):
    """import_to_gluon vs onnxruntime (eager and hybridized), import_model by bind; returns the
    imported outputs."""
    ref = _ort(rt, path, feeds)
    net = onnx_mxnet.import_to_gluon(path, mx.cpu())
    xs = [nd.array(v, dtype=v.dtype) for v in feeds.values()]
    eager = _outs(net(*xs))
    assert len(eager) == len(ref)
    worst = 0.0
    for a, r in zip(eager, ref):
        assert a.shape == r.shape and a.dtype == r.dtype, (tag, a.shape, r.shape, a.dtype, r.dtype)
        np.testing.assert_allclose(a, r, rtol=rtol, atol=atol, err_msg=tag)
        worst = max(worst, float(np.abs(a.astype(np.float64) - r).max()) if a.size else 0.0)
    MAX_DIFF[tag] = worst
    if hybridize:
        net.hybridize()
        for _ in range(2):
            for a, h in zip(eager, _outs(net(*xs))):
                np.testing.assert_array_equal(a, h)
    sym, arg, aux = onnx_mxnet.import_model(path)
    args = {k: nd.array(v, dtype=v.dtype) for k, v in feeds.items() if k in sym.list_arguments()}
    args.update(arg)
    ex = sym.bind(mx.cpu(), args, aux_states=aux)
    for a, b in zip(eager, _outs(ex.forward())):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
    return eager


def _randomize_bn(net, seed=0):
    r = np.random.RandomState(seed)
    for name, p in net.collect_params().items():
        if name.endswith("running_mean") or name.endswith("beta"):
            p.set_data(nd.array(r.uniform(-0.5, 0.5, p.shape)))
        elif name.endswith("running_var") or name.endswith("gamma"):
            p.set_data(nd.array(r.uniform(0.5, 1.5, p.shape)))


# ---- (a) what hybridnet exports imports back ---------------------------------------------------
@pytest.mark.parametrize("model", ["resnet18_v1", "mobilenet0_25"])
def test_model_zoo_round_trip(rt, tmp_path, model):
    from hybridnet.gluon.model_zoo import vision
    mx.random.seed(0)
    net = getattr(vision, model)(classes=10)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = np.random.RandomState(1).uniform(-1, 1, (2, 3, 32, 32)).astype(np.float32)
    net(nd.array(x))
    _randomize_bn(net)
    want = net(nd.array(x)).asnumpy()
    path = mxonnx.export_model(net, None, onnx_file_path=str(tmp_path / f"{model}.onnx"))
    got = _import_and_compare(rt, path, {"data": x}, model)
    np.testing.assert_allclose(got[0], want, rtol=RTOL, atol=ATOL)
    # BatchNorm's moving statistics are auxiliary states, as MXNet's import gives them
    _, arg, aux = onnx_mxnet.import_model(path)
    assert aux and all("running" in k for k in aux) and not any("running" in k for k in arg)


class _Mixed(gluon.HybridBlock):
    """Ops the exporter lowers to Gather/Slice/Concat/Split/Where/reductions/LayerNorm..."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.emb = nn.Embedding(20, 8)
            self.ln = nn.LayerNorm()
            self.fc = nn.Dense(6, flatten=False)
            self.conv = nn.Conv1D(4, 3, padding=1)

    def hybrid_forward(self, F, tok, x):
        e = self.ln(self.emb(tok))                        # (2, 5, 8)
        a, b = F.split(e, num_outputs=2, axis=2)
        y = F.concat(F.relu(a), F.sigmoid(b), dim=1)      # (2, 10, 4)
        y = F.slice_axis(y, axis=1, begin=1, end=9)
        z = self.fc(F.transpose(y, axes=(0, 2, 1)))       # (2, 4, 6)
        w = F.where(z > 0, z, F.exp(z) - 1)
        c = self.conv(x)                                  # (2, 4, 7)
        s = F.softmax(F.batch_dot(w, F.slice_axis(c, axis=2, begin=0, end=6), transpose_b=True), axis=-1)
        return F.sum(s * 2, axis=1), F.max(c, axis=(1, 2), keepdims=True), F.argmax(z, axis=2)


def test_mixed_block_round_trip(rt, tmp_path):
    mx.random.seed(0)
    net = _Mixed()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    r = np.random.RandomState(2)
    tok = r.randint(0, 20, (2, 5)).astype(np.float32)
    x = r.uniform(-1, 1, (2, 3, 7)).astype(np.float32)
    want = _outs(net(nd.array(tok), nd.array(x)))
    path = mxonnx.export_model(net, None, onnx_file_path=str(tmp_path / "mixed.onnx"))
    got = _import_and_compare(rt, path, {"data0": tok, "data1": x}, "mixed_block")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("which", ["mobilenet0_25", "mixed"])
def test_dynamic_batch_round_trip(rt, tmp_path, which):
    """export_model(dynamic=True) leaves the batch dim dynamic: the import keeps it so (ranks and
    static dims are inferred with probe sizes), and one SymbolBlock serves batch 2 and 3."""
    from hybridnet.gluon.model_zoo import vision
    mx.random.seed(0)
    r = np.random.RandomState(4)
    if which == "mixed":
        net = _Mixed()
        xs = [r.randint(0, 20, (3, 5)).astype(np.float32), r.uniform(-1, 1, (3, 3, 7)).astype(np.float32)]
    else:
        net = vision.mobilenet0_25(classes=10)
        xs = [r.uniform(-1, 1, (3, 3, 32, 32)).astype(np.float32)]
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(*[nd.array(x[:2]) for x in xs])
    path = mxonnx.export_model(net, None, onnx_file_path=str(tmp_path / "dyn.onnx"), dynamic=True)
    names = [t[0] for t in onnx_mxnet.get_model_metadata(path)["input_tensor_data"]]
    assert all(t[1][0] == 0 for t in onnx_mxnet.get_model_metadata(path)["input_tensor_data"])
    for b in (2, 3):
        feeds = {n: x[:b] for n, x in zip(names, xs)}
        got = _import_and_compare(rt, path, feeds, f"{which} dynamic batch {b}")
        for g, w in zip(got, _outs(net(*[nd.array(x[:b]) for x in xs]))):
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


@pytest.mark.skipif(not CASES, reason="shared/fixtures/mxnet not found")
@pytest.mark.parametrize("name", CASES)
def test_mxnet_fixtures_round_trip(rt, tmp_path, name):
    d, case, xs, ys = load_case(name)
    sym_file, params_file = os.path.join(d, "model-symbol.json"), os.path.join(d, "model-0000.params")
    path = mxonnx.export_model(sym_file, params_file, [x.shape for x in xs], [x.dtype for x in xs],
                               str(tmp_path / f"{name}.onnx"))
    meta = onnx_mxnet.get_model_metadata(path)
    feeds = {n: x for (n, _, _), x in zip(meta["input_tensor_data"], xs)}
    got = _import_and_compare(rt, path, feeds, f"fixture {name}")
    tol = case.get("suggested_tolerance", {})
    for g, y in zip(got, ys):   # and against real MXNet's outputs
        np.testing.assert_allclose(g, y, rtol=tol.get("rtol", RTOL), atol=tol.get("atol", ATOL))


def _registry_sample_models():
    """One exported single-operator model per lowered registry operator (first sample)."""
    from hybridnet.formats import onnx as fo
    from hybridnet.ir.graph import Graph, Node
    from hybridnet.ops import registry
    out = []
    for op in registry.all_ops():
        if fo.lowering_for(op) is None or op.samples is None:
            continue
        for smp in op.samples():
            if smp.train:
                continue
            ins = [np.asarray(a) for a in smp.inputs]
            ins = [a.astype(np.float32) if a.dtype == np.float64 else a for a in ins]
            vs = [Node(None, f"in{i}") for i in range(len(ins))]
            node = Node(op, "node", dict(smp.attrs), [(v, 0) for v in vs])
            g = Graph([(node, k) for k in range(node.num_outputs())])
            try:
                model = mxonnx.graph_to_model(g, {}, {f"in{i}": a.shape for i, a in enumerate(ins)},
                                              {f"in{i}": a.dtype for i, a in enumerate(ins)})
            except MXNetError:
                continue
            out.append((op.name, model, ins))
            break
    return out


def test_every_exported_operator_imports(rt):
    """Each operator hybridnet's exporter lowers (one registry sample each) imports back and
    equals onnxruntime on the exported model, dtypes included."""
    so = rt[1].SessionOptions()
    so.log_severity_level = 3
    models = _registry_sample_models()
    assert len(models) > 150
    seen = set()
    for name, model, ins in models:
        data = model.SerializeToString()
        sess = rt[1].InferenceSession(data, so, providers=["CPUExecutionProvider"])
        feeds = {i.name: ins[int(i.name[2:])] for i in sess.get_inputs()}
        ref = sess.run(None, feeds)
        sym, arg, aux = onnx_mxnet.import_model(data)
        arrays = {k: nd.array(v, dtype=v.dtype) for k, v in feeds.items()}
        ex = sym.bind(mx.cpu(), {**{k: v for k, v in arrays.items() if k in sym.list_arguments()}, **arg},
                      aux_states={**{k: v for k, v in arrays.items() if k in sym.list_auxiliary_states()}, **aux})
        got = _outs(ex.forward())
        assert len(got) == len(ref), name
        for a, r in zip(got, ref):
            assert a.shape == r.shape and a.dtype == r.dtype, (name, a.shape, r.shape, a.dtype, r.dtype)
            np.testing.assert_allclose(a.astype(np.float64), r.astype(np.float64), rtol=RTOL, atol=ATOL,
                                       err_msg=name)
        seen.update(n.op_type for n in model.graph.node)
    assert len(seen) >= 80, sorted(seen)


# ---- single operators: variants of what exporters write, vs onnxruntime --------------------------
_R = np.random.RandomState(5)


def _f32(*s):
    return _R.standard_normal(s).astype(np.float32)


def _i64(*v):
    return np.asarray(v, dtype=np.int64)


# (label, op, inputs: [(name, array, is_const)], attrs, opset, n_out)
def _single_op_cases():
    x4 = _f32(2, 4, 5, 6)
    return [
        ("softmax_v11_axis1", "Softmax", [("x", _f32(2, 3, 4), 0)], {"axis": 1}, 11, 1),
        ("logsoftmax_v11", "LogSoftmax", [("x", _f32(2, 3, 4), 0)], {}, 11, 1),
        ("squeeze_v11", "Squeeze", [("x", _f32(2, 1, 3, 1), 0)], {"axes": [1, -1]}, 11, 1),
        ("unsqueeze_v11", "Unsqueeze", [("x", _f32(2, 3), 0)], {"axes": [0, 3]}, 11, 1),
        ("slice_neg_step", "Slice", [("x", _f32(4, 6), 0), ("s", _i64(-1, 5), 1), ("e", _i64(-2 ** 63, 0), 1),
                                     ("a", _i64(0, 1), 1), ("st", _i64(-1, -2), 1)], {}, 13, 1),
        ("slice_v9", "Slice", [("x", _f32(4, 6), 0)], {"starts": [1], "ends": [100], "axes": [1]}, 9, 1),
        ("split_uneven", "Split", [("x", _f32(2, 7), 0), ("sp", _i64(3, 4), 1)], {"axis": 1}, 13, 2),
        ("split_num_outputs", "Split", [("x", _f32(2, 7), 0)], {"axis": 1, "num_outputs": 3}, 18, 3),
        ("pad_reflect", "Pad", [("x", _f32(2, 3, 5), 0), ("p", _i64(0, 1, 2, 0, 2, 1), 1)], {"mode": "reflect"}, 13, 1),
        ("pad_edge_v9", "Pad", [("x", _f32(2, 3), 0)], {"mode": "edge", "pads": [1, 0, 0, 2]}, 9, 1),
        ("gemm_transA_alpha", "Gemm", [("a", _f32(3, 2), 0), ("b", _f32(3, 4), 0), ("c", _f32(4), 1)],
         {"transA": 1, "alpha": 0.5, "beta": 2.0}, 13, 1),
        ("gemm_const_b", "Gemm", [("a", _f32(2, 3), 0), ("b", _f32(3, 4), 1), ("c", _f32(1, 4), 1)],
         {"alpha": 1.5, "beta": 0.5}, 13, 1),
        ("gelu_tanh", "Gelu", [("x", _f32(3, 4), 0)], {"approximate": "tanh"}, 20, 1),
        ("gelu", "Gelu", [("x", _f32(3, 4), 0)], {}, 20, 1),
        ("celu", "Celu", [("x", _f32(3, 4), 0)], {"alpha": 0.7}, 13, 1),
        ("selu_custom", "Selu", [("x", _f32(3, 4), 0)], {"alpha": 1.2, "gamma": 0.9}, 13, 1),
        ("hardswish", "HardSwish", [("x", _f32(3, 4) * 4, 0)], {}, 14, 1),
        ("clip_v7", "Clip", [("x", _f32(3, 4), 0)], {"min": -0.5, "max": 0.3}, 7, 1),
        ("clip_min_only", "Clip", [("x", _f32(3, 4), 0), ("lo", np.float32(-0.2), 1)], {}, 13, 1),
        ("prelu_channel", "PRelu", [("x", x4, 0), ("s", _f32(4, 1, 1), 1)], {}, 13, 1),
        ("upsample_v9", "Upsample", [("x", _f32(1, 2, 3, 4), 0), ("sc", np.float32([1, 1, 2, 2]), 1)], {"mode": "nearest"}, 9, 1),
        ("resize_nearest", "Resize", [("x", _f32(1, 2, 3, 4), 0), ("roi", np.zeros(0, np.float32), 1),
                                      ("sc", np.float32([1, 1, 2, 2]), 1)],
         {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, 13, 1),
        ("resize_nearest_half_pixel_x3", "Resize", [("x", _f32(1, 2, 3, 4), 0), ("roi", np.zeros(0, np.float32), 1),
                                                    ("sc", np.float32([1, 1, 3, 3]), 1)], {"mode": "nearest"}, 13, 1),
        ("resize_nearest_asym_round_x2", "Resize", [("x", _f32(1, 2, 3, 4), 0), ("roi", np.zeros(0, np.float32), 1),
                                                    ("sc", np.float32([1, 1, 2, 2]), 1)],
         {"mode": "nearest", "coordinate_transformation_mode": "asymmetric"}, 13, 1),
        ("resize_linear_half_pixel", "Resize", [("x", _f32(1, 2, 3, 4), 0), ("roi", np.zeros(0, np.float32), 1),
                                                ("sc", np.zeros(0, np.float32), 1), ("sz", _i64(1, 2, 5, 9), 1)],
         {"mode": "linear"}, 13, 1),
        ("resize_linear_align", "Resize", [("x", _f32(1, 2, 3, 4), 0), ("roi", np.zeros(0, np.float32), 1),
                                           ("sc", np.float32([1, 1, 2, 2]), 1)],
         {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, 13, 1),
        ("reduce_logsumexp", "ReduceLogSumExp", [("x", _f32(2, 3, 4), 0)], {"axes": [1], "keepdims": 0}, 13, 1),
        ("reduce_sumsquare_all", "ReduceSumSquare", [("x", _f32(2, 3), 0)], {}, 13, 1),
        ("reduce_logsum", "ReduceLogSum", [("x", np.abs(_f32(2, 3)) + 0.1, 0)], {"axes": [0]}, 13, 1),
        ("reduce_mean_v18", "ReduceMean", [("x", _f32(2, 3, 4), 0), ("ax", _i64(-1), 1)], {"keepdims": 0}, 18, 1),
        ("conv_asym_pads", "Conv", [("x", _f32(1, 2, 6, 6), 0), ("w", _f32(3, 2, 3, 3), 1)],
         {"pads": [0, 1, 2, 1], "strides": [2, 1]}, 13, 1),
        ("conv_same_upper", "Conv", [("x", _f32(1, 2, 7, 7), 0), ("w", _f32(4, 2, 2, 2), 1), ("b", _f32(4), 1)],
         {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, 13, 1),
        ("conv1d_dilated", "Conv", [("x", _f32(2, 3, 9), 0), ("w", _f32(4, 3, 3), 1)], {"dilations": [2]}, 13, 1),
        ("convtranspose_output_shape", "ConvTranspose", [("x", _f32(1, 2, 3, 3), 0), ("w", _f32(2, 3, 3, 3), 1)],
         {"strides": [2, 2], "output_shape": [6, 6]}, 13, 1),
        ("convtranspose_same_upper", "ConvTranspose", [("x", _f32(1, 2, 3, 3), 0), ("w", _f32(2, 3, 2, 2), 1)],
         {"strides": [2, 2], "auto_pad": "SAME_UPPER"}, 13, 1),
        ("convtranspose_asym", "ConvTranspose", [("x", _f32(1, 2, 3, 3), 0), ("w", _f32(2, 3, 3, 3), 1)],
         {"strides": [2, 2], "pads": [0, 1, 1, 0]}, 13, 1),
        ("maxpool_asym", "MaxPool", [("x", _f32(1, 2, 5, 5), 0)], {"kernel_shape": [2, 2], "pads": [0, 0, 1, 1]}, 13, 1),
        ("avgpool_same_include", "AveragePool", [("x", _f32(1, 2, 5, 5), 0)],
         {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "count_include_pad": 1}, 13, 1),
        ("lppool", "LpPool", [("x", _f32(1, 2, 4, 4), 0)], {"kernel_shape": [2, 2], "strides": [2, 2]}, 13, 1),
        ("depth_to_space_crd", "DepthToSpace", [("x", _f32(1, 8, 2, 3), 0)], {"blocksize": 2, "mode": "CRD"}, 13, 1),
        ("cumsum", "CumSum", [("x", _f32(3, 4), 0), ("ax", _i64(1), 1)], {}, 13, 1),
        ("einsum", "Einsum", [("a", _f32(2, 3, 4), 0), ("b", _f32(2, 4, 5), 0)], {"equation": "bij,bjk->bik"}, 13, 1),
        ("topk", "TopK", [("x", _f32(3, 6), 0), ("k", _i64(2), 1)], {"axis": 1, "largest": 0}, 13, 2),
        ("mod_int", "Mod", [("a", _i64(7, -7, 5), 0), ("b", _i64(3, 3, -2), 0)], {}, 13, 1),
        ("expand_rank", "Expand", [("x", _f32(3, 1), 0), ("s", _i64(2, 1, 4), 1)], {}, 13, 1),
        ("tile", "Tile", [("x", _f32(2, 3), 0), ("r", _i64(2, 1), 1)], {}, 13, 1),
        ("trilu_upper", "Trilu", [("x", _f32(4, 5), 0), ("k", _i64(1), 1)], {}, 14, 1),
        ("trilu_lower", "Trilu", [("x", _f32(2, 4, 5), 0)], {"upper": 0}, 14, 1),
        ("isinf_pos", "IsInf", [("x", np.float32([1, np.inf, -np.inf, np.nan]), 0)], {"detect_negative": 0}, 13, 1),
        ("isnan", "IsNaN", [("x", np.float32([1, np.inf, -np.inf, np.nan]), 0)], {}, 13, 1),
        ("onehot_axis0", "OneHot", [("i", _i64(0, 2, -1), 0), ("d", _i64(4), 1), ("v", np.float32([0.5, 2]), 1)],
         {"axis": 0}, 13, 1),
        ("hardmax", "Hardmax", [("x", _f32(3, 5), 0)], {}, 13, 1),
        ("groupnorm18", "GroupNormalization", [("x", x4, 0), ("s", _f32(2), 1), ("b", _f32(2), 1)],
         {"num_groups": 2}, 18, 1),
        ("groupnorm21", "GroupNormalization", [("x", x4, 0), ("s", _f32(4), 1), ("b", _f32(4), 1)],
         {"num_groups": 2}, 21, 1),
        ("lpnorm", "LpNormalization", [("x", _f32(3, 4), 0)], {"axis": 1}, 13, 1),
        ("mvn", "MeanVarianceNormalization", [("x", x4, 0)], {}, 13, 1),
        ("mish", "Mish", [("x", _f32(3, 4), 0)], {}, 18, 1),
        ("shrink", "Shrink", [("x", _f32(3, 4), 0)], {"lambd": 0.3, "bias": 0.1}, 13, 1),
        ("thresholded_relu", "ThresholdedRelu", [("x", _f32(3, 4), 0)], {"alpha": 0.2}, 13, 1),
        ("scatter_elements", "ScatterElements", [("x", _f32(3, 4), 0), ("i", _i64(1, 0, 2, -1).reshape(2, 2), 1),
                                                  ("u", _f32(2, 2), 0)], {"axis": 1}, 13, 1),
        ("scatter_elements_add", "ScatterElements", [("x", _f32(3, 4), 0), ("i", _i64(1, 0, 2, 1).reshape(2, 2), 0),
                                                      ("u", _f32(2, 2), 0)], {"axis": 0, "reduction": "add"}, 16, 1),
        ("gather_elements_neg", "GatherElements", [("x", _f32(3, 4), 0), ("i", _i64(-1, 0, 2, 1, 1, 0).reshape(3, 2), 0)],
         {"axis": 1}, 13, 1),
        ("gather_nd", "GatherND", [("x", _f32(3, 4, 2), 0), ("i", _i64(0, 1, 2, 3).reshape(2, 2), 1)], {}, 13, 1),
        ("gather_scalar", "Gather", [("x", _f32(3, 4), 0), ("i", np.int64(-1), 1)], {"axis": 1}, 13, 1),
        ("gather_neg", "Gather", [("x", _f32(5, 3), 1), ("i", _i64(-1, 0, 3).reshape(3, 1), 0)], {}, 13, 1),
        ("argmax_nokeep", "ArgMax", [("x", _f32(3, 4), 0)], {"axis": 1, "keepdims": 0}, 13, 1),
        ("flatten_axis2", "Flatten", [("x", _f32(2, 3, 4, 5), 0)], {"axis": 2}, 13, 1),
        ("where_bcast", "Where", [("c", np.array([True, False, True]), 0), ("a", _f32(2, 3), 0), ("b", np.float32(0.5), 1)], {}, 13, 1),
        ("and_or", "Xor", [("a", np.array([True, False, True, False]), 0), ("b", np.array([True, True, False, False]), 0)], {}, 13, 1),
        ("div_scalar_const", "Div", [("a", np.float32(2.0), 1), ("x", _f32(2, 3), 0)], {}, 13, 1),
        ("pow_const", "Pow", [("x", np.abs(_f32(2, 3)), 0), ("p", np.float32([2.0]), 1)], {}, 13, 1),
        ("mean_variadic", "Mean", [("a", _f32(2, 3), 0), ("b", _f32(3), 0), ("c", _f32(2, 1), 0)], {}, 13, 1),
        ("max_variadic", "Max", [("a", _f32(2, 3), 0), ("b", _f32(3), 0), ("c", _f32(2, 1), 0)], {}, 13, 1),
        ("cast_bool", "Cast", [("x", np.float32([0, 1.5, -2]), 0)], {"to": 9}, 13, 1),
        ("layernorm_axis1", "LayerNormalization", [("x", _f32(2, 3, 4), 0), ("s", _f32(3, 4), 1), ("b", _f32(3, 4), 1)],
         {"axis": 1}, 17, 1),
        ("instancenorm", "InstanceNormalization", [("x", x4, 0), ("s", _f32(4), 1), ("b", _f32(4), 1)], {}, 13, 1),
        ("lrn", "LRN", [("x", x4, 0)], {"size": 3, "alpha": 0.01, "bias": 2.0}, 13, 1),
        ("global_lp", "GlobalLpPool", [("x", x4, 0)], {}, 13, 1),
        ("softplus_softsign", "Softplus", [("x", _f32(3, 4), 0)], {}, 13, 1),
        ("elu", "Elu", [("x", _f32(3, 4), 0)], {"alpha": 0.5}, 13, 1),
        ("quantize_u8", "QuantizeLinear", [("x", _f32(3, 4) * 3, 0), ("s", np.float32(0.02), 1),
                                            ("z", np.uint8(128), 1)], {}, 13, 1),
        ("quantize_i8_axis", "QuantizeLinear", [("x", _f32(2, 3, 4), 0), ("s", np.float32([0.01, 0.02, 0.05]), 1),
                                                ("z", np.int8([0, -3, 4]), 1)], {"axis": 1}, 13, 1),
        ("dequantize_axis", "DequantizeLinear", [("x", np.arange(24, dtype=np.uint8).reshape(2, 3, 4) * 9, 0),
                                                 ("s", np.float32([0.1, 0.2, 0.3]), 1), ("z", np.uint8([1, 2, 3]), 1)],
         {"axis": 1}, 13, 1),
        ("dequantize_int32_noz", "DequantizeLinear", [("x", _i64(5, -7, 300).astype(np.int32), 0),
                                                      ("s", np.float32(0.5), 1)], {}, 13, 1),
        ("matmul_integer", "MatMulInteger", [("a", _R.randint(0, 256, (2, 3, 5)).astype(np.uint8), 0),
                                             ("b", _R.randint(-128, 128, (5, 4)).astype(np.int8), 1),
                                             ("az", np.uint8(7), 1), ("bz", np.int8([1, -2, 0, 3]), 1)], {}, 13, 1),
        ("qlinear_matmul", "QLinearMatMul", [("a", _R.randint(0, 256, (3, 5)).astype(np.uint8), 0),
                                             ("as", np.float32(0.02), 1), ("az", np.uint8(120), 1),
                                             ("b", _R.randint(0, 256, (5, 4)).astype(np.uint8), 1),
                                             ("bs", np.float32(0.03), 1), ("bz", np.uint8(100), 1),
                                             ("ys", np.float32(0.05), 1), ("yz", np.uint8(128), 1)], {}, 13, 1),
        ("conv_integer", "ConvInteger", [("x", _R.randint(0, 256, (1, 2, 5, 5)).astype(np.uint8), 0),
                                         ("w", _R.randint(0, 256, (3, 2, 3, 3)).astype(np.uint8), 1),
                                         ("xz", np.uint8(128), 1)], {"pads": [1, 1, 1, 1]}, 13, 1),
        ("qlinear_conv", "QLinearConv", [("x", _R.randint(0, 256, (1, 2, 6, 6)).astype(np.uint8), 0),
                                         ("xs", np.float32(0.02), 1), ("xz", np.uint8(128), 1),
                                         ("w", _R.randint(-127, 128, (4, 2, 3, 3)).astype(np.int8), 1),
                                         ("ws", np.float32([0.01, 0.02, 0.015, 0.03]), 1),
                                         ("wz", np.int8([0, 0, 0, 0]), 1), ("ys", np.float32(0.2), 1),
                                         ("yz", np.uint8(100), 1), ("b", _R.randint(-500, 500, 4).astype(np.int32), 1)],
         {"strides": [2, 2], "pads": [1, 1, 1, 1]}, 13, 1),
        ("dynamic_quantize", "DynamicQuantizeLinear", [("x", _f32(3, 4), 0)], {}, 13, 3),
        # dims left dynamic (None in the graph input): only the dims the translation needs are static
        ("dyn_layernorm_axis1", "LayerNormalization", [("x", _f32(2, 3, 4), 0), ("s", _f32(3, 4), 1),
                                                       ("b", _f32(3, 4), 1)], {"axis": 1}, 17, 1, (0,)),
        ("dyn_softmax_v11", "Softmax", [("x", _f32(2, 3, 4), 0)], {"axis": 1}, 11, 1, (0,)),
        ("dyn_flatten_axis2", "Flatten", [("x", _f32(2, 3, 4, 5), 0)], {"axis": 2}, 13, 1, (0, 1)),
        ("dyn_expand", "Expand", [("x", _f32(2, 1, 4), 0), ("s", _i64(3, 1), 1)], {}, 13, 1, (0,)),
        ("dyn_slice", "Slice", [("x", _f32(4, 6), 0), ("s", _i64(1, -3), 1), ("e", _i64(2 ** 62, -1), 1)],
         {}, 13, 1, (0,)),
        ("dyn_resize", "Resize", [("x", _f32(2, 2, 3, 4), 0), ("roi", np.zeros(0, np.float32), 1),
                                  ("sc", np.float32([1, 1, 2, 2]), 1)],
         {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, 13, 1, (0,)),
        ("dyn_conv_same", "Conv", [("x", _f32(2, 2, 7, 7), 0), ("w", _f32(4, 2, 3, 3), 1)],
         {"auto_pad": "SAME_LOWER", "strides": [2, 2]}, 13, 1, (0,)),
    ]


_SINGLE = _single_op_cases()


@pytest.mark.parametrize("case", _SINGLE, ids=[c[0] for c in _SINGLE])
def test_single_operator_models(rt, case):
    """One-node models (opset variants, attribute forms, operators no exporter above writes)
    import and equal onnxruntime, dtypes included."""
    from onnx import helper, numpy_helper
    label, op, ins, attrs, opset, nout = case[:6]
    dyn = case[6] if len(case) > 6 else ()    # dims of the first input left dynamic
    feeds = {n: np.asarray(a) for n, a, c in ins if not c}
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a, c in ins if c]
    vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                         [None if k == 0 and d in dyn else s for d, s in enumerate(a.shape)])
           for k, (n, a) in enumerate(feeds.items())]
    outs = [f"y{k}" for k in range(nout)]
    graph = helper.make_graph([helper.make_node(op, [n for n, _, _ in ins], outs, name=label, **attrs)],
                              label, vis, [rt[0].ValueInfoProto(name=o) for o in outs], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    data = model.SerializeToString()
    so = rt[1].SessionOptions()
    so.log_severity_level = 3
    ref = rt[1].InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    net = onnx_mxnet.import_to_gluon(data, mx.cpu())
    got = _outs(net(*[nd.array(a, dtype=a.dtype) for a in feeds.values()]))
    assert len(got) == len(ref)
    for a, r in zip(got, ref):
        assert a.shape == r.shape and a.dtype == r.dtype, (a.shape, r.shape, a.dtype, r.dtype)
        np.testing.assert_allclose(a.astype(np.float64), r.astype(np.float64), rtol=RTOL, atol=ATOL)


# ---- (b) torch.onnx.export --------------------------------------------------------------------
def _torch_export(tmp_path, module, args, name, **kw):
    torch = pytest.importorskip("torch")
    import warnings
    module.eval()
    path = str(tmp_path / f"{name}.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(module, args, path, dynamo=False, **kw)
        except TypeError:  # a torch without the dynamo switch
            torch.onnx.export(module, args, path, **kw)
    return path


def _torch_conv_net():
    import torch

    class ConvNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.c2 = torch.nn.Conv2d(8, 8, 3, stride=2, groups=2)
            self.up = torch.nn.ConvTranspose2d(8, 4, 2, stride=2)
            self.fc = torch.nn.Linear(4, 10)

        def forward(self, x):
            x = torch.relu(self.bn(self.c1(x)))
            x = torch.nn.functional.max_pool2d(x, 2, ceil_mode=True)
            x = torch.nn.functional.leaky_relu(self.c2(x), 0.1)
            x = torch.nn.functional.avg_pool2d(self.up(x), 2)
            x = torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
            return torch.log_softmax(self.fc(x), -1)

    torch.manual_seed(0)
    net = ConvNet()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 1.5)
    return net


def _torch_rnn_net():
    import torch

    class Recurrent(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(6, 5, num_layers=2, batch_first=True, bidirectional=True)
            self.gru = torch.nn.GRU(10, 4)

        def forward(self, x):
            y, (h, c) = self.lstm(x)
            z, hz = self.gru(y)
            return z, h, c, hz

    torch.manual_seed(0)
    return Recurrent()


def _torch_encoder():
    import math

    import torch

    class Encoder(torch.nn.Module):
        """A transformer encoder layer written out (token embedding, positions, masked MHA,
        LayerNorm, GELU MLP): MatMul, Softmax, Where, Gather, Reshape/Transpose/Slice, Erf..."""

        def __init__(self, d=16, h=4, vocab=20):
            super().__init__()
            self.h = h
            self.emb = torch.nn.Embedding(vocab, d)
            self.pos = torch.nn.Parameter(torch.randn(32, d) * 0.1)
            self.qkv = torch.nn.Linear(d, 3 * d)
            self.o = torch.nn.Linear(d, d)
            self.n1, self.n2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
            self.f1, self.f2 = torch.nn.Linear(d, 2 * d), torch.nn.Linear(2 * d, d)

        def forward(self, tok):
            b, t = tok.shape
            x = self.emb(tok) + self.pos[:t]
            q, k, v = self.qkv(x).chunk(3, -1)
            q, k, v = (u.reshape(b, t, self.h, -1).transpose(1, 2) for u in (q, k, v))
            a = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
            a = torch.where((tok == 0)[:, None, None, :], torch.full_like(a, -1e4), a).softmax(-1)
            y = (a @ v).transpose(1, 2).reshape(b, t, -1)
            x = self.n1(x + self.o(y))
            x = self.n2(x + self.f2(torch.nn.functional.gelu(self.f1(x))))
            return x.mean(1)

    torch.manual_seed(0)
    return Encoder()


def test_torch_conv_net(rt, tmp_path):
    torch = pytest.importorskip("torch")
    net = _torch_conv_net()
    x = torch.randn(2, 3, 16, 16)
    path = _torch_export(tmp_path, net, (x,), "conv", input_names=["x"], opset_version=17)
    got = _import_and_compare(rt, path, {"x": x.numpy()}, "torch conv net")
    with torch.no_grad():
        np.testing.assert_allclose(got[0], net(x).numpy(), rtol=RTOL, atol=ATOL)


def test_torch_lstm_gru(rt, tmp_path):
    torch = pytest.importorskip("torch")
    net = _torch_rnn_net()
    x = torch.randn(2, 7, 6)
    path = _torch_export(tmp_path, net, (x,), "rnn", input_names=["x"], opset_version=14)
    model = rt[0].load(path)
    assert {"LSTM", "GRU"} <= {n.op_type for n in model.graph.node}
    got = _import_and_compare(rt, path, {"x": x.numpy()}, "torch LSTM+GRU")
    with torch.no_grad():
        for g, w in zip(got, net(x)):
            np.testing.assert_allclose(g, w.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("opset", [13, 17])
def test_torch_transformer_encoder(rt, tmp_path, opset):
    torch = pytest.importorskip("torch")
    net = _torch_encoder()
    tok = torch.randint(1, 20, (2, 5))
    tok[0, 3:] = 0
    path = _torch_export(tmp_path, net, (tok,), f"enc{opset}", input_names=["tok"], opset_version=opset,
                         do_constant_folding=opset == 13)
    kinds = {n.op_type for n in rt[0].load(path).graph.node}
    assert {"MatMul", "Softmax", "Where", "Gather", "Erf"} <= kinds
    assert ("LayerNormalization" in kinds) == (opset >= 17)
    got = _import_and_compare(rt, path, {"tok": tok.numpy()}, f"torch encoder opset {opset}")
    with torch.no_grad():
        np.testing.assert_allclose(got[0], net(tok).numpy(), rtol=RTOL, atol=1e-5)


def _torch_more_layers():
    import torch
    F = torch.nn.functional

    class Vision(torch.nn.Module):
        """MobileNetV3 pieces (Hardswish, squeeze-excite with Hardsigmoid, depthwise conv), norms,
        resizes, transposed conv, reflect padding, PixelShuffle, SiLU."""

        def __init__(self):
            super().__init__()
            self.c, self.bn = torch.nn.Conv2d(3, 16, 3, 2, 1), torch.nn.BatchNorm2d(16)
            self.dw = torch.nn.Conv2d(16, 16, 3, 1, 1, groups=16)
            self.se1, self.se2 = torch.nn.Conv2d(16, 4, 1), torch.nn.Conv2d(4, 16, 1)
            self.gn, self.inorm = torch.nn.GroupNorm(4, 16), torch.nn.InstanceNorm2d(16, affine=True)
            self.up, self.ps = torch.nn.ConvTranspose2d(16, 8, 4, 2, 1), torch.nn.PixelShuffle(2)

        def forward(self, x):
            x = self.dw(F.hardswish(self.bn(self.c(x))))
            x = x * F.hardsigmoid(self.se2(F.relu(self.se1(F.adaptive_avg_pool2d(x, 1)))))
            x = self.inorm(self.gn(x))
            y = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
            z = F.interpolate(x, scale_factor=2, mode="nearest")
            return (torch.cat([y, z, self.up(x).repeat(1, 2, 1, 1)], 1).mean((2, 3)),
                    F.pad(x, (1, 2, 0, 1), mode="reflect"), self.ps(x), F.silu(x).amax(1))

    class Sequence(torch.nn.Module):
        """nn.MultiheadAttention, bidirectional GRU, tanh RNN, topk, cumsum, argmax, masked_fill,
        tanh-approximated GELU, log_softmax."""

        def __init__(self):
            super().__init__()
            self.m = torch.nn.MultiheadAttention(16, 4, batch_first=True)
            self.e = torch.nn.Embedding(30, 16)
            self.g = torch.nn.GRU(16, 8, bidirectional=True, batch_first=True)
            self.r = torch.nn.RNN(16, 8)

        def forward(self, tok):
            x = self.e(tok)
            a, _ = self.m(x, x, x, need_weights=False)
            g, _ = self.g(a)
            v, i = torch.topk(g, 3, dim=-1)
            m = x.masked_fill(tok.unsqueeze(-1) == 0, 0.0)
            return (v, i, torch.cumsum(g, 1), torch.argmax(g, -1),
                    F.gelu(m, approximate="tanh").log_softmax(1), self.r(x)[0])

    torch.manual_seed(0)
    return Vision(), Sequence()


@pytest.mark.parametrize("which", ["vision", "sequence"])
def test_torch_more_layers(rt, tmp_path, which):
    torch = pytest.importorskip("torch")
    vision, sequence = _torch_more_layers()
    net, x = (vision, torch.randn(2, 3, 16, 16)) if which == "vision" else (sequence, torch.randint(0, 30, (2, 6)))
    path = _torch_export(tmp_path, net, (x,), which, input_names=["x"], opset_version=14)
    _import_and_compare(rt, path, {"x": x.numpy()}, f"torch {which} layers", atol=1e-4)


def _torch_positions():
    import torch

    class Positions(torch.nn.Module):
        """arange(t) position ids, a class token expanded to the batch, a mask expanded to
        (b, t, t): Range, Expand and ConstantOfShape over run-time sizes."""

        def __init__(self):
            super().__init__()
            self.e, self.p = torch.nn.Embedding(20, 8), torch.nn.Embedding(64, 8)
            self.cls = torch.nn.Parameter(torch.randn(1, 1, 8))

        def forward(self, tok):
            b, t = tok.shape
            x = self.e(tok) + self.p(torch.arange(t).unsqueeze(0))
            mask = (tok > 0).unsqueeze(1).expand(b, t, t).float()
            return torch.cat([self.cls.expand(b, -1, -1), x], 1), mask

    torch.manual_seed(0)
    return Positions()


@pytest.mark.parametrize("which", ["conv", "rnn", "encoder", "positions"])
def test_torch_dynamic_axes(rt, tmp_path, which):
    """dynamic_axes exports: Shape subgraphs fold into symbolic sizes, Reshape targets become
    0/-1 codes, ConstantOfShape and x[:t] are built from tensors carrying the run-time dims; one
    import serves every batch size and sequence length."""
    torch = pytest.importorskip("torch")
    if which == "conv":
        net, make, axes = _torch_conv_net(), (lambda b, t: torch.randn(b, 3, 16, 16)), {0: "batch"}
    elif which == "rnn":
        net, make, axes = _torch_rnn_net(), (lambda b, t: torch.randn(b, t, 6)), {0: "batch", 1: "time"}
    elif which == "encoder":
        net, make, axes = _torch_encoder(), (lambda b, t: torch.randint(1, 20, (b, t))), {0: "batch", 1: "time"}
    else:
        net, make, axes = _torch_positions(), (lambda b, t: torch.randint(0, 20, (b, t))), {0: "batch", 1: "time"}
    path = _torch_export(tmp_path, net, (make(2, 5),), f"dyn_{which}", input_names=["x"],
                         dynamic_axes={"x": axes}, opset_version=17)
    meta = onnx_mxnet.get_model_metadata(path)["input_tensor_data"][0]
    assert meta[1][0] == 0 and (meta[1][1] == 0) == (1 in axes)
    for b, t in ((1, 5), (3, 5), (2, 7)):
        if t != 5 and 1 not in axes:
            continue
        x = make(b, t)
        got = _import_and_compare(rt, path, {"x": x.numpy()}, f"torch {which} dynamic {b}x{t}")
        with torch.no_grad():
            want = net(x)
        for g, w in zip(got, want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g, w.numpy(), rtol=RTOL, atol=ATOL)


def test_run_time_sizes_the_import_cannot_fold_are_named(rt, tmp_path):
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Range", ["one", "n", "one"], ["r"], name="range"),
             helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[helper.make_tensor("zero", TensorProto.INT64, [], [0]),
                                           helper.make_tensor("one", TensorProto.INT64, [], [1])])
    path = _write(tmp_path, "range.onnx", helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    with pytest.raises(MXNetError, match=r"node 'range' \(Range\): Range\(1, n, 1\) over a run-time size"):
        onnx_mxnet.import_model(path)
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Tile", ["x", "s"], ["y"], name="tile")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = _write(tmp_path, "tile.onnx", helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    with pytest.raises(MXNetError, match=r"node 'tile' \(Tile\): the dimension n is known only at run time; "
                                         r"hybridnet folds shape arithmetic at import"):
        onnx_mxnet.import_model(path)


def test_onnxruntime_quantized_models(rt, tmp_path):
    """onnxruntime.quantization outputs: quantize_dynamic (DynamicQuantizeLinear + MatMulInteger)
    of the encoder equals onnxruntime; quantize_static in QDQ format (QuantizeLinear/
    DequantizeLinear around float ops, which onnxruntime runs as fused integer kernels) within
    one output quantization step."""
    torch = pytest.importorskip("torch")
    quant = pytest.importorskip("onnxruntime.quantization")
    import logging
    logging.getLogger().setLevel(logging.ERROR)
    tok = torch.randint(1, 20, (2, 5))
    src = _torch_export(tmp_path, _torch_encoder(), (tok,), "enc", input_names=["tok"], opset_version=17)
    dyn = str(tmp_path / "enc_dynamic_q.onnx")
    quant.quantize_dynamic(src, dyn, weight_type=quant.QuantType.QUInt8)
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= {n.op_type for n in rt[0].load(dyn).graph.node}
    _import_and_compare(rt, dyn, {"tok": tok.numpy()}, "onnxruntime quantize_dynamic encoder")

    class Reader(quant.CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": np.random.RandomState(i).randn(2, 3, 16, 16).astype(np.float32)}
                            for i in range(3)])

        def get_next(self):
            return next(self.it, None)

    conv = _torch_export(tmp_path, _torch_conv_net(), (torch.randn(2, 3, 16, 16),), "conv", input_names=["x"],
                         opset_version=13)
    qdq = str(tmp_path / "conv_qdq.onnx")
    quant.quantize_static(conv, qdq, Reader(), quant_format=quant.QuantFormat.QDQ, per_channel=True,
                          activation_type=quant.QuantType.QUInt8, weight_type=quant.QuantType.QInt8)
    model = rt[0].load(qdq)
    assert {"QuantizeLinear", "DequantizeLinear"} <= {n.op_type for n in model.graph.node}
    out_step = float(max(np.abs(rt[0].numpy_helper.to_array(t)).max() for t in model.graph.initializer
                         if t.data_type == 1 and t.name.endswith("_scale")))
    x = np.random.RandomState(9).randn(2, 3, 16, 16).astype(np.float32)
    _import_and_compare(rt, qdq, {"x": x}, "onnxruntime quantize_static QDQ conv net", rtol=0,
                        atol=out_step * 1.01)


# ---- (c) import_to_gluon ---------------------------------------------------------------------------
def test_import_to_gluon_symbolblock(rt, tmp_path):
    torch = pytest.importorskip("torch")
    net = _torch_conv_net()
    x = torch.randn(3, 3, 16, 16)
    path = _torch_export(tmp_path, net, (x,), "conv", input_names=["x"], opset_version=13)
    block = onnx_mxnet.import_to_gluon(path, ctx=mx.cpu())
    assert isinstance(block, gluon.SymbolBlock)
    params = block.collect_params()
    assert "fc.weight" in params and params["fc.weight"].shape == (10, 4)   # initializer names kept
    xs = nd.array(x.numpy())
    eager = block(xs).asnumpy()
    block.hybridize(static_alloc=True, static_shape=True)
    np.testing.assert_array_equal(block(xs).asnumpy(), eager)
    np.testing.assert_array_equal(block(xs).asnumpy(), eager)
    # fine-tuning works: gradients reach the imported weights
    with mx.autograd.record():
        loss = block(xs).sum()
    loss.backward()
    assert float(nd.abs(params["fc.weight"].grad()).sum().asscalar()) > 0
    # and the block exports again in MXNet's formats
    block.export(str(tmp_path / "again"))
    again = gluon.SymbolBlock.imports(str(tmp_path / "again-symbol.json"), ["x"],
                                      str(tmp_path / "again-0000.params"))
    np.testing.assert_allclose(again(xs).asnumpy(), eager, rtol=1e-6, atol=1e-6)


# ---- (d) metadata -------------------------------------------------------------------------------
def test_get_model_metadata(rt, tmp_path):
    net = nn.HybridSequential()
    net.add(nn.Dense(4, in_units=3))
    net.initialize()
    net.hybridize()
    net(nd.ones((2, 3)))
    path = mxonnx.export_model(net, None, onnx_file_path=str(tmp_path / "m.onnx"))
    meta = onnx_mxnet.get_model_metadata(path)
    assert meta == {"input_tensor_data": [("data", (2, 3), 1)],
                    "output_tensor_data": [(meta["output_tensor_data"][0][0], (2, 4))]}
    sym, arg, aux = onnx_mxnet.import_model(path)
    assert sym.list_outputs()[0].startswith(meta["output_tensor_data"][0][0]) or len(sym.list_outputs()) == 1
    assert set(arg) == set(net.collect_params()) and aux == {}


def test_module_paths_and_supported_ops():
    import importlib
    for m in ("onnx2mx", "onnx2mx.import_model", "onnx2mx.import_onnx", "onnx2mx.import_to_gluon"):
        importlib.import_module(f"hybridnet.contrib.onnx.{m}")
    assert onnx_mxnet.onnx2mx.import_model.import_model is onnx_mxnet.import_model
    assert mx.contrib.onnx is onnx_mxnet
    ops = onnx_mxnet.supported_ops()
    assert {"Conv", "LSTM", "GRU", "Gemm", "LayerNormalization", "Gelu", "Where"} <= set(ops)
    assert len(ops) >= 130


def test_missing_onnx_package_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)   # import onnx now raises ImportError
    for fn in (onnx_mxnet.import_model, onnx_mxnet.get_model_metadata, onnx_mxnet.import_to_gluon):
        with pytest.raises(ImportError, match="pip install onnx"):
            fn("model.onnx")


# ---- (e) hostile files -----------------------------------------------------------------------------
def _small_model(rt, tmp_path):
    net = nn.HybridSequential()
    net.add(nn.Dense(4, in_units=3), nn.Activation("relu"))
    net.initialize()
    net.hybridize()
    net(nd.ones((2, 3)))
    return mxonnx.export_model(net, None, onnx_file_path=str(tmp_path / "small.onnx"))


def _write(tmp_path, name, model_or_bytes):
    data = model_or_bytes if isinstance(model_or_bytes, bytes) else model_or_bytes.SerializeToString()
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def _tensor(elem, dims, raw, name="w"):
    from onnx import TensorProto
    t = TensorProto()
    t.name, t.data_type, t.raw_data = name, elem, raw
    t.dims.extend(dims)
    return t


def test_hostile_files(rt, tmp_path):
    onnx = rt[0]
    from onnx import TensorProto, helper
    good = _small_model(rt, tmp_path)
    raw = open(good, "rb").read()
    # truncated at many points: MXNetError or (rarely, at a field boundary) a smaller valid model
    for cut in (1, 7, len(raw) // 3, len(raw) // 2, len(raw) - 5):
        try:
            onnx_mxnet.import_model(_write(tmp_path, f"cut{cut}.onnx", raw[:cut]))
        except MXNetError:
            pass
    with pytest.raises(MXNetError, match="not an ONNX model|holds no graph"):
        onnx_mxnet.import_model(_write(tmp_path, "junk.onnx", b"\xff\xfe junk" * 10))
    with pytest.raises(MXNetError, match="cannot read"):
        onnx_mxnet.import_model(str(tmp_path / "absent.onnx"))

    def model(nodes, inits=(), opset=13, outputs=("y",)):
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                              initializer=list(inits))
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])

    cases = [
        (model([helper.make_node("FancyOp", ["x"], ["y"], name="n1")]),
         r"node 'n1' \(FancyOp\): operator FancyOp is not supported.*supported: Abs"),
        (model([helper.make_node("Relu", ["x"], ["y"])], opset=3), r"opset 3; hybridnet reads opsets"),
        (model([helper.make_node("Relu", ["nowhere"], ["y"], name="r")]), r"'nowhere' is not produced"),
        (model([helper.make_node("Relu", ["x"], ["z"])]), r"graph output 'y' is not produced"),
        (model([helper.make_node("Add", ["x", "w"], ["y"])],
               [_tensor(TensorProto.FLOAT, [1 << 40, 1 << 40], b"")]),
         r"tensor 'w' declares \d+ elements"),
        (model([helper.make_node("Add", ["x", "w"], ["y"])],
               [_tensor(TensorProto.FLOAT, [1000, 1000], b"\0" * 16)]),
         r"tensor 'w' has 16 bytes of data for dims \[1000, 1000\]"),
        (model([helper.make_node("Add", ["x", "w"], ["y"])],
               [_tensor(TensorProto.STRING, [1], b"a")]),
         r"element type STRING is not supported"),
        (model([helper.make_node("Relu", ["x"], ["y"], domain="com.evil", name="r")]),
         r"domain 'com.evil' is not supported"),
        (model([helper.make_node("Softmax", ["x"], ["y"], name="s", axis="one")]),
         r"node 's' \(Softmax\): attribute 'axis' is string, expected int"),
        (model([helper.make_node("If", ["x"], ["y"], name="i",
                                 then_branch=helper.make_graph([], "t", [], []),
                                 else_branch=helper.make_graph([], "e", [], []))]),
         r"subgraphs"),
        (model([helper.make_node("ConstantOfShape", ["s"], ["c"], name="c"),
                helper.make_node("Add", ["x", "c"], ["y"])],
               [helper.make_tensor("s", TensorProto.INT64, [2], [1 << 30, 1 << 30])]),
         r"node 'c' \(ConstantOfShape\): would make a tensor of shape"),
        (model([helper.make_node("Mul", ["a", "b"], ["ab"], name="m"), helper.make_node("Add", ["x", "ab"], ["y"])],
               [_tensor(TensorProto.FLOAT, [1 << 17, 1], b"\0" * (4 << 17), "a"),
                _tensor(TensorProto.FLOAT, [1, 1 << 17], b"\0" * (4 << 17), "b")]),
         r"node 'm' \(Mul\): would make a tensor of shape \(131072, 131072\)"),
        (model([helper.make_node("Tile", ["x", "r"], ["y"], name="t")],
               [helper.make_tensor("r", TensorProto.INT64, [2], [1 << 20, 1 << 20])]),
         r"node 't' \(Tile\): would make a tensor"),
        (model([helper.make_node("Resize", ["x", "", "sc"], ["y"], name="rz", mode="nearest",
                                 coordinate_transformation_mode="half_pixel", nearest_mode="floor")],
               [helper.make_tensor("sc", TensorProto.FLOAT, [2], [1, 2])]),
         r"node 'rz' \(Resize\): only 4-D"),
        (model([helper.make_node("Reshape", ["x", "x"], ["y"], name="rs")]),
         r"node 'rs' \(Reshape\): input 1 \(shape\) must be a constant"),
    ]
    for k, (m, pattern) in enumerate(cases):
        p = _write(tmp_path, f"bad{k}.onnx", m)
        with pytest.raises(MXNetError, match=pattern):
            onnx_mxnet.import_model(p)
        with pytest.raises(MXNetError):
            onnx_mxnet.import_to_gluon(p, mx.cpu())
    # external data must be a plain file beside the model, inside its bounds
    t = helper.make_tensor("w", TensorProto.FLOAT, [2, 3], [0.0] * 6)
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for loc, pattern in (("../../etc/passwd", "plain file name"), ("w.bin", "not found"),
                         ("small.onnx", "truncated|does not hold")):
        del t.external_data[:]
        t.external_data.add(key="location", value=loc)
        t.external_data.add(key="length", value="24" if loc != "small.onnx" else str(10 ** 9))
        with pytest.raises(MXNetError, match=pattern):
            onnx_mxnet.import_model(_write(tmp_path, "ext.onnx", model([helper.make_node("Add", ["x", "w"], ["y"])], [t])))
    assert onnx is not None


def test_large_model_external_data_round_trip(rt, tmp_path):
    net = nn.HybridSequential()
    net.add(nn.Dense(300, in_units=5), nn.Activation("tanh"), nn.Dense(2))   # over 1 KiB: external
    net.initialize()
    net.hybridize()
    x = np.random.RandomState(0).uniform(-1, 1, (3, 5)).astype(np.float32)
    want = net(nd.array(x)).asnumpy()
    path = mxonnx.export_model(net, None, onnx_file_path=str(tmp_path / "big.onnx"), large_model=True)
    assert os.path.exists(str(tmp_path / "big.onnx.data"))
    got = _import_and_compare(rt, path, {"data": x}, "large_model")
    np.testing.assert_allclose(got[0], want, rtol=RTOL, atol=ATOL)


def test_zz_report_max_differences():
    """Prints the largest |import - onnxruntime| per model (run with -s)."""
    for k, v in sorted(MAX_DIFF.items()):
        print(f"ONNX import max abs diff {k}: {v:.3g}")


def test_mutated_files_raise_only_mxnet_error(rt, tmp_path):
    """Random byte edits and random attribute/input/operator edits of real models: the import
    either succeeds or raises MXNetError, never anything else."""
    import random
    onnx = rt[0]
    torch = pytest.importorskip("torch")
    srcs = [onnx.load(_torch_export(tmp_path, _torch_conv_net(), (torch.randn(1, 3, 8, 8),), "c",
                                    opset_version=13)),
            onnx.load(_torch_export(tmp_path, _torch_encoder(), (torch.randint(1, 20, (2, 5)),), "e",
                                    opset_version=17, do_constant_folding=False))]
    rnd = random.Random(0)
    for it in range(160):
        m = onnx.ModelProto()
        m.CopyFrom(rnd.choice(srcs))
        if it % 2:
            data = bytearray(m.SerializeToString())
            for _ in range(rnd.randint(1, 4)):
                k = rnd.randrange(len(data))
                if rnd.random() < 0.5:
                    data[k] = rnd.randrange(256)
                else:
                    del data[k:k + rnd.randint(1, 40)]
            blob = bytes(data)
        else:
            n = rnd.choice(m.graph.node)
            ints = [a for a in n.attribute if a.type in (2, 7)]
            if ints and rnd.random() < 0.5:
                a = rnd.choice(ints)
                if a.type == 2:
                    a.i = rnd.randint(-4, 12)
                elif len(a.ints):
                    a.ints[rnd.randrange(len(a.ints))] = rnd.randint(-4, 12)
            elif len(n.input) and rnd.random() < 0.5:
                n.input[rnd.randrange(len(n.input))] = rnd.choice(
                    [o for other in m.graph.node for o in other.output] + [""])
            else:
                n.op_type = rnd.choice(["Relu", "Reshape", "Gather", "Concat", "Slice", "Unsqueeze",
                                        "MatMul", "Transpose", "Softmax", "Split", "Expand"])
            blob = m.SerializeToString()
        try:
            onnx_mxnet.import_model(blob)
        except MXNetError:
            pass


_MXNET_SIDE = r"""
import json, sys
import numpy as np
import mxnet as mx
from mxnet.contrib import onnx as onnx_mxnet
path, xfile = sys.argv[1], sys.argv[2]
sym, arg, aux = onnx_mxnet.import_model(path)
meta = onnx_mxnet.get_model_metadata(path)
net = onnx_mxnet.import_to_gluon(path, mx.cpu())
np.save(xfile + ".out.npy", net(mx.nd.array(np.load(xfile))).asnumpy())
print(json.dumps({"arg": sorted(arg), "aux": sorted(aux), "meta": meta}))
"""


def test_same_import_as_real_mxnet(rt, tmp_path):
    """Real MXNet 1.9.1's mx.contrib.onnx on the same file (when its Python has onnx: set
    HYBRIDNET_MXNET_ONNX_PATH to a folder holding onnx and protobuf for it): same parameters,
    metadata and outputs."""
    import json
    import subprocess
    env = dict(os.environ)
    if os.environ.get("HYBRIDNET_MXNET_ONNX_PATH"):
        env["PYTHONPATH"] = os.environ["HYBRIDNET_MXNET_ONNX_PATH"]
    # onnx first (quick), then whether that Python is MXNet 1.9.1 (real_mxnet asks once)
    pythons = [p for p in (os.environ.get("HYBRIDNET_MXNET_PYTHON"), "/tmp/mxvenv/bin/python",
                           "/work/mxvenv/bin/python") if p and os.path.exists(p)]
    if not any(subprocess.run([p, "-c", "import onnx"], capture_output=True, env=env, timeout=120).returncode == 0
               for p in pythons):
        pytest.skip("no real MXNet Python with the onnx package (set HYBRIDNET_MXNET_ONNX_PATH)")
    from real_mxnet import MXNET_PYTHON, SKIP_REASON
    if MXNET_PYTHON is None:
        pytest.skip(SKIP_REASON)
    onnx = rt[0]
    from hybridnet.gluon.model_zoo import vision
    mx.random.seed(0)
    net = vision.mobilenet0_25(classes=10)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = np.random.RandomState(3).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)
    net(nd.array(x))
    _randomize_bn(net)
    model = onnx.load(mxonnx.export_model(net, None, onnx_file_path=str(tmp_path / "m.onnx")))
    for t in model.graph.initializer:   # MXNet 1.9.1's import reads initializers listed as inputs
        model.graph.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    path = str(tmp_path / "m_inputs.onnx")
    onnx.save(model, path)
    xfile = str(tmp_path / "x.npy")
    np.save(xfile, x)
    out = subprocess.run([MXNET_PYTHON, "-c", _MXNET_SIDE, path, xfile], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    sym, arg, aux = onnx_mxnet.import_model(path)
    assert sorted(arg) == theirs["arg"] and sorted(aux) == theirs["aux"]
    meta = onnx_mxnet.get_model_metadata(path)
    assert json.loads(json.dumps(meta)) == theirs["meta"]
    ours = onnx_mxnet.import_to_gluon(path, mx.cpu())(nd.array(x)).asnumpy()
    np.testing.assert_allclose(ours, np.load(xfile + ".out.npy"), rtol=RTOL, atol=ATOL)
