"""Predict-mode passes: each leaves the expected node count, lints, and computes the same
predict-mode outputs as the graph it rewrote (numbers, with non-trivial BatchNorm statistics)."""
import numpy as np
import pytest
import torch

from hybridnet import sym
from hybridnet.compiler.codegen import compile_graph
from hybridnet.compiler.passes import (fold_batchnorm, remove_inference_identities, run_passes,
                                       split_parameter_prologue)
from hybridnet.compiler.passes.inference import compute_in_place
from hybridnet.ir.graph import Graph
from hybridnet.ops import fused


def _ops(g):
    return [n.op.name for n in g.nodes if n.op is not None]


def _values(g, rng, shapes, dtype=np.float64):
    """Random inputs for the variables of ``g``: BatchNorm variances positive, the rest normal."""
    out = {}
    for v in g.variables():
        shape = shapes.get(v.name)
        if shape is None:
            raise KeyError(v.name)
        if v.name.endswith(("var", "gamma")):
            out[v.name] = rng.uniform(0.5, 2.0, shape).astype(dtype)
        else:
            out[v.name] = rng.randn(*shape).astype(dtype)
    return out


def _predict(g, values):
    c = compile_graph(g)
    with torch.no_grad():
        outs = c(*[torch.from_numpy(values[n]) for n in c.input_names], _train=False)
    return [o.numpy() for o in outs]


def _same(g_new, g_old, values, rtol=1e-10, atol=1e-12):
    g_new.lint()
    new, old = _predict(g_new, values), _predict(g_old, values)
    assert len(new) == len(old)
    for a, b in zip(new, old):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# ---- identity removal ---------------------------------------------------------------------------
def test_remove_inference_identities_drops_every_predict_mode_identity():
    a = sym.var("a")
    x = sym.Dropout(a, p=0.5)                      # mode='training': identity in predict mode
    x = sym.BlockGrad(x)
    x = sym.identity(x)                            # _copy
    x = sym.make_loss(x)
    x = sym.MakeLoss(x)
    x = sym.Dropout(x, p=0.0, mode="always")       # p = 0: identity even when always on
    x = sym.relu(x)
    g = x._graph()
    assert len(g.nodes) == 8
    g2 = run_passes(g, [remove_inference_identities])
    assert _ops(g2) == ["relu"] and len(g2.nodes) == 2
    _same(g2, g, _values(g, np.random.RandomState(0), {"a": (3, 4)}))


def test_remove_inference_identities_keeps_always_on_dropout():
    a = sym.var("a")
    g = sym.relu(sym.Dropout(sym.BlockGrad(a), p=0.5, mode="always"))._graph()
    g2 = remove_inference_identities(g)
    assert _ops(g2) == ["Dropout", "relu"] and len(g2.nodes) == 3
    assert g2.nodes[1].attrs["mode"] == "always"


def test_remove_inference_identities_leaves_input_graph_unchanged():
    a = sym.var("a")
    g = sym.BlockGrad(sym.Dropout(a, p=0.3))._graph()
    before = g.text()
    remove_inference_identities(g)
    assert g.text() == before


# ---- BatchNorm folding --------------------------------------------------------------------------
def _conv_bn(no_bias, fix_gamma, axis=1, layout=None, use_global_stats=False, eps=1e-3):
    data = sym.var("data")
    kw = {"layout": layout} if layout else {}
    c = sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), no_bias=no_bias, name="conv", **kw)
    return sym.BatchNorm(c, fix_gamma=fix_gamma, axis=axis, use_global_stats=use_global_stats,
                         eps=eps, name="bn")


_CONV_SHAPES = {"data": (2, 3, 5, 6), "conv_weight": (4, 3, 3, 3), "conv_bias": (4,),
                "bn_gamma": (4,), "bn_beta": (4,), "bn_moving_mean": (4,), "bn_moving_var": (4,)}


@pytest.mark.parametrize("no_bias", [True, False])
@pytest.mark.parametrize("fix_gamma", [True, False])
@pytest.mark.parametrize("use_global_stats", [True, False])
def test_fold_batchnorm_into_convolution(no_bias, fix_gamma, use_global_stats):
    g = _conv_bn(no_bias, fix_gamma, use_global_stats=use_global_stats)._graph()
    g2 = fold_batchnorm(g)
    assert "BatchNorm" not in _ops(g2)
    # BN (-1); rsqrt(var + eps), [gamma *], reshape, W *, b - mean (or -mean), * scale, + beta
    added = 7 if fix_gamma else 8
    dropped_vars = 1 if fix_gamma else 0   # gamma is unused when fixed to 1
    assert len(g2.nodes) == len(g.nodes) - 1 + added - dropped_vars
    conv = [n for n in g2.nodes if n.op is not None and n.op.name == "Convolution"]
    assert len(conv) == 1 and conv[0].attrs["no_bias"] is False and len(conv[0].inputs) == 3
    _same(g2, g, _values(g, np.random.RandomState(1), _CONV_SHAPES))


def test_fold_batchnorm_float32_close():
    g = _conv_bn(False, False, eps=1e-5)._graph()
    values = _values(g, np.random.RandomState(2), _CONV_SHAPES, np.float32)
    _same(fold_batchnorm(g), g, values, rtol=1e-5, atol=1e-5)


def test_fold_batchnorm_channels_last_convolution():
    shapes = dict(_CONV_SHAPES, data=(2, 5, 6, 3), conv_weight=(4, 3, 3, 3))
    g = _conv_bn(False, False, axis=-1, layout="NHWC")._graph()
    g2 = fold_batchnorm(g)
    assert "BatchNorm" not in _ops(g2)
    _same(g2, g, _values(g, np.random.RandomState(3), shapes))
    # channels-last output normalized over axis 1 (a spatial axis): not the channel, kept
    g3 = _conv_bn(False, False, axis=1, layout="NHWC")._graph()
    assert _ops(fold_batchnorm(g3)) == _ops(g3)


@pytest.mark.parametrize("flatten,axis,in_shape", [(True, 1, (3, 2, 5)), (True, -1, (3, 10)),
                                                   (False, -1, (3, 2, 10))])
def test_fold_batchnorm_into_fully_connected(flatten, axis, in_shape):
    data = sym.var("data")
    fc = sym.FullyConnected(data, num_hidden=4, flatten=flatten, name="fc")
    g = sym.BatchNorm(fc, fix_gamma=False, axis=axis, name="bn")._graph()
    g2 = fold_batchnorm(g)
    assert "BatchNorm" not in _ops(g2) and len(g2.nodes) == len(g.nodes) - 1 + 8
    shapes = {"data": in_shape, "fc_weight": (4, 10), "fc_bias": (4,), "bn_gamma": (4,), "bn_beta": (4,),
              "bn_moving_mean": (4,), "bn_moving_var": (4,)}
    _same(g2, g, _values(g, np.random.RandomState(4), shapes))


def test_fold_batchnorm_leaves_what_it_cannot_fold():
    data = sym.var("data")
    # FullyConnected without flatten, normalized on axis 1: the output rank is unknown
    fc = sym.FullyConnected(data, num_hidden=4, flatten=False, name="fc")
    cases = [sym.BatchNorm(fc, axis=1, name="bn")]
    # normalized over a spatial axis of the convolution
    conv = sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv")
    cases.append(sym.BatchNorm(conv, axis=2, name="bn"))
    # the convolution output is read twice
    conv2 = sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv2")
    cases.append(sym.BatchNorm(conv2, name="bn2") + conv2)
    # the convolution output is also a graph output
    conv3 = sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv3")
    cases.append(sym.Group([sym.BatchNorm(conv3, name="bn3"), conv3]))
    # BatchNorm with mean/var outputs
    conv4 = sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv4")
    cases.append(sym.BatchNorm(conv4, output_mean_var=True, name="bn4"))
    # BatchNorm after something other than Convolution/FullyConnected
    cases.append(sym.BatchNorm(sym.relu(data), name="bn5"))
    for out in cases:
        g = out._graph()
        g2 = fold_batchnorm(g)
        assert _ops(g2) == _ops(g) and len(g2.nodes) == len(g.nodes), g.text()


def test_fold_batchnorm_respects_parameter_dtypes():
    g = _conv_bn(True, False)._graph()
    same = {v.name: torch.float32 for v in g.variables()}
    assert "BatchNorm" not in _ops(fold_batchnorm(g, same))
    mixed = dict(same, conv_weight=torch.float16)  # float16 network, float32 BatchNorm
    assert _ops(fold_batchnorm(g, mixed)) == _ops(g)
    unknown = {k: v for k, v in same.items() if k != "bn_moving_var"}
    assert _ops(fold_batchnorm(g, unknown)) == _ops(g)


def test_fold_batchnorm_chain_and_input_unchanged():
    """conv -> BN -> relu -> conv -> BN: both fold; the input graph is left as it was."""
    data = sym.var("data")
    x = sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), no_bias=True, name="c1")
    x = sym.relu(sym.BatchNorm(x, fix_gamma=False, name="b1"))
    x = sym.Convolution(x, kernel=(1, 1), num_filter=5, name="c2")
    g = sym.BatchNorm(x, fix_gamma=True, name="b2")._graph()
    before = g.text()
    g2 = fold_batchnorm(g)
    assert g.text() == before
    assert _ops(g2).count("BatchNorm") == 0 and _ops(g2).count("Convolution") == 2
    assert len(g2.nodes) == len(g.nodes) - 2 + 8 + 7 - 1
    shapes = {"data": (2, 3, 5, 5), "c1_weight": (4, 3, 3, 3), "c2_weight": (5, 4, 1, 1), "c2_bias": (5,)}
    for b, c in (("b1", 4), ("b2", 5)):
        shapes.update({f"{b}_gamma": (c,), f"{b}_beta": (c,), f"{b}_moving_mean": (c,), f"{b}_moving_var": (c,)})
    _same(g2, g, _values(g, np.random.RandomState(5), shapes))


# ---- parameter prologue -------------------------------------------------------------------------
def _run_split(split, data_nodes, param_nodes, values):
    with torch.no_grad():
        folded = ()
        if split.prologue is not None:
            folded = compile_graph(split.prologue, param_nodes)(
                *[torch.from_numpy(values[v.name]) for v in param_nodes], _train=False)
        main = compile_graph(split.main, list(data_nodes) + list(param_nodes) + list(split.folded))
        args = [torch.from_numpy(values[v.name]) for v in list(data_nodes) + list(param_nodes)]
        return [o.numpy() for o in main(*args, *folded, _train=False)]


def _split_nodes(g, data_names):
    data = [v for v in g.variables() if v.name in data_names]
    params = [v for v in g.variables() if v.name not in data_names]
    return data, params


def test_split_parameter_prologue_hoists_folded_batchnorm():
    g = fold_batchnorm(_conv_bn(False, False)._graph())
    data, params = _split_nodes(g, {"data"})
    split = split_parameter_prologue(g, params)
    split.main.lint()
    split.prologue.lint()
    # main: data, weight, bias (both folded), the convolution
    assert _ops(split.main) == ["Convolution"] and len(split.main.nodes) == 4
    assert len(split.folded) == 2 and len(split.prologue.outputs) == 2
    # prologue: 6 parameters + 8 fold nodes
    assert len(split.prologue.nodes) == 14
    assert {v.name for v in split.prologue.variables()} <= {v.name for v in params}
    values = _values(g, np.random.RandomState(6), _CONV_SHAPES)
    ref = _predict(g, values)
    np.testing.assert_allclose(_run_split(split, data, params, values)[0], ref[0], rtol=1e-12)


def test_split_parameter_prologue_never_hoists_random_or_stateful_nodes():
    data, w = sym.var("data"), sym.var("w")
    noise = sym.random.uniform(shape=(3,))                          # random, no inputs
    dropped = sym.Dropout(w, p=0.5, mode="always")                   # random, on a parameter
    normed = sym.BatchNorm(w, sym.var("g"), sym.var("b"), sym.var("m"), sym.var("v"))  # aux state
    const = sym.zeros(shape=(3,))                                     # deterministic, no inputs
    scaled = sym.exp(w) * 2.0                                         # deterministic on a parameter
    out = data + noise + dropped + normed + const + scaled
    g = out._graph()
    data_nodes, params = _split_nodes(g, {"data"})
    split = split_parameter_prologue(g, params)
    hoisted = sorted(_ops(split.prologue))
    assert hoisted == ["_mul_scalar", "_zeros", "exp"]
    main_ops = _ops(split.main)
    for kept in ("_random_uniform", "Dropout", "BatchNorm"):
        assert kept in main_ops
    assert len(split.folded) == 2                                     # zeros and exp(w) * 2
    assert len(split.main.nodes) == len(g.nodes) - 3 + 2


def test_split_parameter_prologue_nothing_to_hoist():
    data, w = sym.var("data"), sym.var("w")
    g = sym.FullyConnected(data, w, num_hidden=3, no_bias=True)._graph()
    split = split_parameter_prologue(g, [v for v in g.variables() if v.name == "w"])
    assert split.prologue is None and split.main is g and split.folded == ()


def test_split_parameter_prologue_parameter_only_output():
    """An output computed from parameters only is a prologue output read straight back."""
    data, w = sym.var("data"), sym.var("w")
    out = sym.Group([sym.relu(data), sym.transpose(w)])
    g = out._graph()
    data_nodes, params = _split_nodes(g, {"data"})
    split = split_parameter_prologue(g, params)
    assert _ops(split.prologue) == ["transpose"] and _ops(split.main) == ["relu"]
    assert split.main.outputs[1][0] is split.folded[0]
    values = {"data": np.random.randn(2, 3), "w": np.random.randn(3, 4)}
    got = _run_split(split, data_nodes, params, values)
    np.testing.assert_array_equal(got[1], values["w"].T)
    np.testing.assert_array_equal(got[0], np.maximum(values["data"], 0))


def test_split_keeps_the_input_graph():
    g = fold_batchnorm(_conv_bn(True, True)._graph())
    before = g.text()
    split_parameter_prologue(g, _split_nodes(g, {"data"})[1])
    assert g.text() == before and isinstance(g, Graph)


def test_values_written_into_stay_copies_and_per_call():
    """An optimizer update writes into its ``mom`` (auxiliary) input: a copy feeding it stays a
    copy, and a parameter-only value feeding it is not hoisted into the cached prologue."""
    w, g, mom = sym.var("w"), sym.var("g"), sym.var("mom")
    out = sym.sgd_mom_update(w, g, sym.identity(mom), lr=0.1, momentum=0.9)
    graph = out._graph()
    assert _ops(remove_inference_identities(graph)) == _ops(graph)
    hoisted = sym.sgd_mom_update(w, g, sym.exp(mom), lr=0.1, momentum=0.9)._graph()
    split = split_parameter_prologue(hoisted, [v for v in hoisted.variables() if v.name in ("mom", "w")])
    assert split.prologue is None and split.main is hoisted


def test_fold_batchnorm_v1():
    data = sym.var("data")
    c = sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    g = sym.BatchNorm_v1(c, fix_gamma=False, name="bn")._graph()
    g2 = fold_batchnorm(g)
    assert "BatchNorm_v1" not in _ops(g2) and len(g2.nodes) == len(g.nodes) - 1 + 8
    _same(g2, g, _values(g, np.random.RandomState(7), _CONV_SHAPES))


# ---- work written in place ----------------------------------------------------------------------
def _residual_block():
    """conv -> BN -> relu -> conv -> BN -> (+ shortcut) -> relu, the shortcut read twice."""
    data = sym.var("data")
    c1 = sym.Convolution(data, kernel=(3, 3), num_filter=3, pad=(1, 1), name="c1")
    a1 = sym.Activation(sym.BatchNorm(c1, fix_gamma=False, name="bn1"), act_type="relu", name="act1")
    c2 = sym.Convolution(a1, kernel=(3, 3), num_filter=3, pad=(1, 1), name="c2")
    b2 = sym.BatchNorm(c2, fix_gamma=True, eps=1e-5, name="bn2")
    return sym.relu(data + b2, name="out")


_BLOCK_SHAPES = {"data": (2, 3, 5, 4), "c1_weight": (3, 3, 3, 3), "c1_bias": (3,), "c2_weight": (3, 3, 3, 3),
                 "c2_bias": (3,), **{f"bn{i}_{p}": (3,) for i in (1, 2)
                                     for p in ("gamma", "beta", "moving_mean", "moving_var")}}


@pytest.mark.parametrize("min_elements", [0, 1 << 30])  # written in place / a new tensor
def test_compute_in_place_residual_block(min_elements, monkeypatch):
    monkeypatch.setattr(fused, "INPLACE_MIN_ELEMENTS", min_elements)
    g = _residual_block()._graph()
    g2 = compute_in_place(g)
    assert sorted(_ops(g2)) == ["Convolution", "Convolution", "_add_act", "_batchnorm_act", "_batchnorm_act"]
    bns = [n for n in g2.nodes if n.op is not None and n.op.name == "_batchnorm_act"]
    assert [n.attrs.get("act", "none") for n in bns] == ["relu", "none"] and all(n.attrs["inplace"] for n in bns)
    add = [n for n in g2.nodes if n.op is not None and n.op.name == "_add_act"][0]
    assert add.attrs["act"] == "relu" and add.inputs[0][0] is bns[1]  # written over the BatchNorm's
    values = _values(g, np.random.RandomState(7), _BLOCK_SHAPES)
    before = {k: v.copy() for k, v in values.items()}
    _same(g2, g, values, rtol=1e-12, atol=1e-12)
    for k, v in before.items():  # inputs and parameters are never written
        np.testing.assert_array_equal(values[k], v, err_msg=k)


def test_compute_in_place_clip_sigmoid_and_channels_last_axis():
    data = sym.var("data")
    c1 = sym.Convolution(data, kernel=(1, 1), num_filter=3, name="c1")
    x = sym.clip(sym.BatchNorm(c1, fix_gamma=False, name="bn1"), 0.0, 0.4)
    c2 = sym.Convolution(x, kernel=(1, 1), num_filter=3, layout="NHWC", name="c2")
    out = sym.sigmoid(sym.BatchNorm(c2, axis=-1, fix_gamma=False, name="bn2"))
    g = out._graph()
    g2 = compute_in_place(g)
    bns = [n for n in g2.nodes if n.op is not None and n.op.name == "_batchnorm_act"]
    assert [(n.attrs.get("act"), n.attrs["axis"]) for n in bns] == [("hardtanh", 1), ("sigmoid", -1)]
    assert (bns[0].attrs["act_alpha"], bns[0].attrs["act_beta"]) == (0.0, 0.4)
    shapes = {"data": (2, 4, 3, 3), "c1_weight": (3, 4, 1, 1), "c1_bias": (3,), "c2_weight": (3, 1, 1, 3),
              "c2_bias": (3,), **{f"bn{i}_{p}": (3,) for i in (1, 2)
                                  for p in ("gamma", "beta", "moving_mean", "moving_var")}}
    _same(g2, g, _values(g, np.random.RandomState(8), shapes), rtol=1e-12, atol=1e-12)


def test_compute_in_place_leaves_what_others_read():
    data = sym.var("data")
    cases = []
    conv = sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv")
    cases.append(sym.BatchNorm(conv, name="bn") + conv)  # the convolution output is read twice
    conv3 = sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv3")
    cases.append(sym.Group([sym.BatchNorm(conv3, name="bn3"), conv3]))  # and returned
    conv4 = sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv4")
    cases.append(sym.BatchNorm(conv4, output_mean_var=True, name="bn4"))  # mean/var outputs
    cases.append(sym.BatchNorm(sym.relu(data), name="bn5"))  # not a convolution's output
    cases.append(sym.relu(data + data))  # no fresh operand
    conv6 = sym.Convolution(data, kernel=(1, 1), num_filter=4, name="conv6")
    cases.append(sym.Group([sym.relu(conv6), conv6]))  # an activation of a returned convolution
    for out in cases:
        g = out._graph()
        g2 = compute_in_place(g)
        assert _ops(g2) == _ops(g) and len(g2.nodes) == len(g.nodes), g.text()


def test_compute_in_place_keeps_activations_others_read():
    """A BatchNorm read twice (or returned) is still written over its convolution, but the
    activations after it stay separate."""
    data = sym.var("data")
    bn = sym.BatchNorm(sym.Convolution(data, kernel=(1, 1), num_filter=2, name="conv"), name="bn")
    for out in (sym.Group([sym.relu(bn), sym.tanh(bn)]), sym.Group([sym.relu(bn), bn])):
        g2 = compute_in_place(out._graph())
        ops = _ops(g2)
        assert ops.count("_batchnorm_act") == 1 and "relu" in ops and "BatchNorm" not in ops
        assert [n.attrs.get("act", "none") for n in g2.nodes if n.op is not None and n.op.name == "_batchnorm_act"] \
            == ["none"]


def test_compute_in_place_activation_of_a_convolution():
    """conv -> relu -> conv -> clip -> tanh: the relu and the clip are written over their
    convolutions; the tanh reads the clip's result, which it may overwrite too but stays apart."""
    data = sym.var("data")
    c1 = sym.Convolution(data, kernel=(3, 3), num_filter=3, pad=(1, 1), name="c1")
    c2 = sym.Convolution(sym.relu(c1), kernel=(1, 1), num_filter=2, name="c2")
    g = sym.tanh(sym.clip(c2, -0.2, 0.3))._graph()
    g2 = compute_in_place(g)
    acts = [(n.op.name, n.attrs.get("act"), n.attrs.get("inplace")) for n in g2.nodes
            if n.op is not None and n.op.name not in ("Convolution",)]
    assert acts == [("_act", "relu", True), ("_act", "hardtanh", True), ("tanh", None, None)]
    shapes = {"data": (2, 3, 4, 4), "c1_weight": (3, 3, 3, 3), "c1_bias": (3,), "c2_weight": (2, 3, 1, 1),
              "c2_bias": (2,)}
    values = _values(g, np.random.RandomState(9), shapes)
    before = {k: v.copy() for k, v in values.items()}
    _same(g2, g, values, rtol=1e-12, atol=1e-12)
    for k, v in before.items():
        np.testing.assert_array_equal(values[k], v, err_msg=k)


def test_compute_in_place_absorbs_what_fused_convolutions_absorb():
    """The activations come from ``onednn.absorbable_activation``: leaky relu joins, and a clip
    with a_min > a_max (no clamp interval) stays its own operator."""
    data = sym.var("data")
    c1 = sym.Convolution(data, kernel=(1, 1), num_filter=3, name="c1")
    c2 = sym.Convolution(sym.LeakyReLU(c1, act_type="leaky", slope=0.2), kernel=(1, 1), num_filter=3, name="c2")
    g = sym.clip(c2, 0.5, -0.5)._graph()
    g2 = compute_in_place(g)
    acts = [(n.op.name, n.attrs.get("act"), n.attrs.get("act_alpha")) for n in g2.nodes
            if n.op is not None and n.op.name != "Convolution"]
    assert acts == [("_act", "leaky_relu", 0.2), ("clip", None, None)]
    shapes = {"data": (2, 4, 3, 3), "c1_weight": (3, 4, 1, 1), "c1_bias": (3,), "c2_weight": (3, 3, 1, 1),
              "c2_bias": (3,)}
    _same(g2, g, _values(g, np.random.RandomState(10), shapes), rtol=1e-12, atol=1e-12)
