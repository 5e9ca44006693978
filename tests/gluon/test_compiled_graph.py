"""The compiled-graph object of a hybridized block: signature cache, retrace diagnostics, LRU."""
import dataclasses
import logging
import threading
import warnings

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import nd
from hybridnet.compiler.cached_op import CachedGraph
from hybridnet.gluon import nn


def _net(**flags):
    net = nn.HybridSequential()
    net.add(nn.Dense(4, activation="relu"), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.hybridize(**flags)
    return net


def _eager(net, x):
    """The block's output computed without its compiled graph."""
    saved = [(b, b._options) for b in _hybrid_blocks(net)]
    for b, options in saved:
        b._options = dataclasses.replace(options, active=False)
    try:
        return net(x).asnumpy()
    finally:
        for b, options in saved:
            b._options = options


def _hybrid_blocks(net):
    found = []
    net.apply(lambda b: found.append(b) if isinstance(b, mx.gluon.HybridBlock) else None)
    return found


def test_one_compiled_graph_object_serves_every_batch_size_without_static_shape():
    net = _net()
    for b in (1, 5, 7, 5):
        x = nd.array(np.random.RandomState(b).randn(b, 6))
        out = net(x).asnumpy()
        np.testing.assert_allclose(out, _eager(net, x), rtol=1e-6, atol=1e-6)
    cached = net._cached_op
    assert isinstance(cached, CachedGraph)
    assert cached.compiles == 1  # the generated code is shape-generic


def test_static_shape_compiles_one_variant_per_shape_and_reuses_them():
    net = _net(static_shape=True, static_alloc=True)
    outs = {}
    for b in (2, 3, 2, 3, 2):
        x = nd.array(np.random.RandomState(b).randn(b, 6))
        outs.setdefault(b, []).append(net(x).asnumpy())
    assert net._cached_op.compiles == 2
    for b, got in outs.items():
        np.testing.assert_array_equal(got[0], got[-1])


def test_a_miss_logs_which_input_changed(caplog):
    net = _net(static_shape=True)
    net(nd.ones((2, 6)))
    with caplog.at_level(logging.INFO, logger="hybridnet.hybridize"):
        net(nd.ones((5, 6)))
    assert "input 'data' shape (2, 6) -> (5, 6)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="hybridnet.hybridize"):
        net(nd.ones((5, 6), dtype="float64").astype("float32"))  # same signature: no message
    assert caplog.text == ""


def test_dtype_change_is_a_new_signature_named_in_the_log(caplog):
    class Twice(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x * 2

    b = Twice()
    b.hybridize()
    b(nd.ones((2, 2)))
    with caplog.at_level(logging.INFO, logger="hybridnet.hybridize"):
        out = b(nd.ones((2, 2), dtype="float64"))
    assert out.dtype == np.float64 and out.asnumpy().sum() == 8
    assert "input 'data' dtype float32 -> float64" in caplog.text
    assert b._cached_op.compiles == 2


def test_keeps_at_most_max_cached_and_warns_once_naming_the_input():
    net = _net(static_shape=True, max_cached=2)
    net(nd.ones((1, 6)))
    net(nd.ones((2, 6)))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        net(nd.ones((3, 6)))
        net(nd.ones((4, 6)))
    msgs = [str(x.message) for x in w if "recompiling" in str(x.message)]
    assert len(msgs) == 1
    assert "input 'data' shape (2, 6) -> (3, 6)" in msgs[0] and "max_cached=2" in msgs[0]
    assert len(net._cached_op._variants) == 2
    # the least recently used (batch 1 and 2) were dropped; batch 1 compiles again
    before = net._cached_op.compiles
    net(nd.ones((4, 6)))
    assert net._cached_op.compiles == before
    net(nd.ones((1, 6)))
    assert net._cached_op.compiles == before + 1


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "8"])
def test_max_cached_must_be_a_positive_int(bad):
    net = _net()
    with pytest.raises(TypeError, match="max_cached"):
        net.hybridize(max_cached=bad)


def test_unknown_hybridize_flag_is_an_error_naming_the_close_one():
    net = _net()
    with pytest.raises(TypeError, match="static_alloc"):
        net.hybridize(static_aloc=True)


def test_eight_threads_share_one_compiled_graph_with_one_set_of_weights():
    net = _net(static_shape=True, static_alloc=True)
    xs = [nd.array(np.random.RandomState(i).randn(1 + i % 3, 6)) for i in range(8)]
    expected = [_eager(net, x) for x in xs]
    net(xs[0])
    cached = net._cached_op
    results: list = [None] * 8
    barrier = threading.Barrier(8)

    def work(i):
        barrier.wait()
        for _ in range(20):
            results[i] = net(xs[i]).asnumpy()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert net._cached_op is cached and cached.compiles == 3  # batch sizes 1, 2, 3
    for got, want in zip(results, expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_nd_cached_op_takes_mxnet_string_flags():
    data = mx.sym.var("data")
    op = nd.CachedOp(data * 3, flags=[("static_alloc", "true"), ("static_shape", "1")])
    assert op._compiled.static_alloc and op._compiled.static_shape
    np.testing.assert_array_equal(op(nd.ones((2,))).asnumpy(), [3, 3])
    np.testing.assert_array_equal(op(nd.ones((3,))).asnumpy(), [3, 3, 3])
    assert op._compiled.compiles == 2


def test_results_keep_a_cpu_i_context_and_blocks_read_parameters_on_the_input_context():
    a = nd.ones((2, 3), ctx=mx.cpu(1))
    assert (a * 2 + a).context == mx.cpu(1) and nd.dot(a, a.T).context == mx.cpu(1)
    assert nd.ones((2,)).context == mx.cpu(0)
    for hybrid in (False, True):
        net = nn.Dense(2, in_units=3)
        net.initialize(mx.init.One(), ctx=[mx.cpu(1), mx.cpu(2)])
        net.weight.data(mx.cpu(2))[:] = 2
        if hybrid:
            net.hybridize()
        out1 = net(nd.ones((1, 3), ctx=mx.cpu(1)))
        out2 = net(nd.ones((1, 3), ctx=mx.cpu(2)))
        np.testing.assert_array_equal(out1.asnumpy(), [[3, 3]])
        np.testing.assert_array_equal(out2.asnumpy(), [[6, 6]])
        assert out1.context == mx.cpu(1) and out2.context == mx.cpu(2)


# ---- predict-mode tiers behind hybridize()'s flags ---------------------------------------------
def _conv_net(dropout=0.5):
    mx.random.seed(3)
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(4, 3), nn.BatchNorm(), nn.Dropout(dropout), nn.Flatten(), nn.Dense(5))
    net.initialize(mx.init.Xavier())
    x = nd.array(np.random.RandomState(0).randn(4, 3, 8, 8))
    with mx.autograd.record():  # moving statistics away from 0/1, so folding has work to do
        net(x)
    return net, x


def _tensors(net, x):
    cached = net._cached_op
    return [x._t] + [p.data()._t for p in cached.params]


def test_static_alloc_runs_the_predict_plan_with_batchnorm_folded():
    net, x = _conv_net()
    want = _eager(net, x)
    net.hybridize(static_alloc=True)
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-5)
    variant = net._cached_op.variant(_tensors(net, x))
    assert variant.tier is None and variant.predict_plan is not None
    _, main = variant.predict_plan.program_for(_tensors(net, x))
    ops = [n.op.name for n in main.graph.nodes if n.op is not None]
    # CPU float32: oneDNN-fused convolutions (passes.onednn), else the plain ones
    assert "BatchNorm" not in ops and "Dropout" not in ops
    assert ops.count("Convolution") + ops.count("_fused_conv") == 2


def test_plain_hybridize_keeps_the_generated_function_only():
    net, x = _conv_net()
    net.hybridize()
    net(x)
    variant = net._cached_op.variant(_tensors(net, x))
    assert variant.tier is None and variant.predict_plan is None


def test_static_alloc_and_static_shape_swap_in_the_onednn_tier_and_keep_results():
    net, x = _conv_net()
    want = _eager(net, x)
    net.hybridize(static_alloc=True, static_shape=True)
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-5)  # the plan serves
    variant = net._cached_op.variant(_tensors(net, x))
    assert variant.tier is not None and variant.tier.backend == "MKLDNN"
    # the first predictions (the first builds the predict plan) start no lowering; the next does
    from hybridnet.compiler.cached_op import AUTOMATIC_TIER_AFTER_CALLS
    for _ in range(AUTOMATIC_TIER_AFTER_CALLS - 1):
        assert variant.tier.builds == 0
        np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-5)
    assert variant.tier.builds == 0
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-5)
    assert variant.tier.builds == 1
    variant.wait_for_tier(120)
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-4, atol=1e-5)
    # chosen automatically, the tier serves only where it measured faster when built
    if variant.tier.disabled is not None:
        assert variant.tier.disabled.startswith("not 1.1x faster than the predict plan")
    else:
        assert any(variant.tier._used.values())  # the lowered program served that call


def test_a_named_backend_serves_predictions_once_built():
    net, x = _conv_net()
    want = _eager(net, x)
    net.hybridize(backend="MKLDNN")
    net(x)
    variant = net._cached_op.variant(_tensors(net, x))
    variant.wait_for_tier(120)
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-4, atol=1e-5)
    assert variant.tier.disabled is None and any(variant.tier._used.values())


def test_tiers_see_a_trainer_step_and_training_calls_use_the_default_function():
    net, x = _conv_net()
    net.hybridize(static_alloc=True, static_shape=True)
    net(x)
    variant = net._cached_op.variant(_tensors(net, x))
    variant.wait_for_tier(120)  # waiting for the automatic tier ends its deferral:
    net(x)  # this prediction starts the build
    assert variant.tier.builds == 1
    variant.wait_for_tier(120)
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    with mx.autograd.record():
        loss = net(x).sum()
    loss.backward()
    trainer.step(4)
    np.testing.assert_allclose(net(x).asnumpy(), _eager(net, x), rtol=1e-5, atol=1e-5)


def test_gradients_through_a_static_graph_match_eager():
    net, x = _conv_net(dropout=0.0)
    params = list(net.collect_params().values())

    def grads(hybrid):
        if hybrid:
            net.hybridize(static_alloc=True, static_shape=True)
        with mx.autograd.record():
            out = net(x)
        out.backward()
        return out.asnumpy(), [p.grad().asnumpy().copy() for p in params if p.grad_req != "null"]

    eager_out, eager_grads = grads(False)
    hyb_out, hyb_grads = grads(True)
    np.testing.assert_allclose(hyb_out, eager_out, rtol=1e-5, atol=1e-5)
    for a, b in zip(hyb_grads, eager_grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_optimize_for_builds_the_named_tier_before_returning():
    net, x = _conv_net()
    want = _eager(net, x)
    net.optimize_for(x, backend="ONEDNN")
    variant = net._cached_op.variant(_tensors(net, x))
    assert variant.tier is not None and variant.tier._programs  # built, not pending
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="backend"):
        net.optimize_for(x)


def test_unknown_backend_names_the_valid_ones_and_default_turns_lowering_off():
    net, x = _conv_net()
    with pytest.raises(mx.base.MXNetError, match="ONEDNN"):
        net.hybridize(backend="TensorRT")
    net.hybridize(static_alloc=True, static_shape=True, backend="default")
    net(x)
    assert net._cached_op.variant(_tensors(net, x)).tier is None


def test_shape_variants_share_one_predict_plan_per_device():
    net, x = _conv_net()
    net.hybridize(static_alloc=True, static_shape=True, backend="default")
    x2 = nd.array(np.random.RandomState(1).randn(2, 3, 8, 8))
    want = [_eager(net, x), _eager(net, x2)]
    got = [net(x).asnumpy(), net(x2).asnumpy()]
    cached = net._cached_op
    assert cached.compiles == 2
    plans = {id(op.predict_plan) for op in cached._variants.values()}
    assert len(plans) == 1 and None not in plans
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_training_batchnorm_on_a_traced_slice_reduces_what_eager_mode_reduces():
    """Eager slice copies; the traced one is a view. BatchNorm's batch statistics are sums whose
    rounding follows memory order, so the hybridized step must reduce the same contiguous copy
    (MXNet's test_slice_batchnorm compares the two at atol 1e-6 on gradients ~1e-7)."""
    class Net(mx.gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.conv = nn.Conv2D(64, 1)
                self.bn = nn.BatchNorm()

        def hybrid_forward(self, F, x):
            return self.bn(self.conv(x).slice(begin=(0, 0, 0, 0), end=(4, 16, 24, 24)))

    def run(hybrid):
        mx.random.seed(3)
        net = Net()
        net.initialize(mx.init.Xavier())
        if hybrid:
            net.hybridize()
        x = nd.array(np.random.RandomState(0).rand(8, 32, 48, 48).astype("float32"))
        x.attach_grad()
        with mx.autograd.record():
            out = net(x)
        out.backward()
        return out.asnumpy(), x.grad.asnumpy(), net.conv.weight.grad().asnumpy()

    for eager, hybrid in zip(run(False), run(True)):
        np.testing.assert_array_equal(hybrid, eager)


class _ViewsNet(mx.gluon.HybridBlock):
    """Slices, a split, swapaxes and a broadcast feeding reductions (InstanceNorm, sum, mean):
    each kernel reduces a strided view in another order than a packed copy."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.conv = nn.Conv2D(8, 3, padding=1, in_channels=4)
            self.inorm = nn.InstanceNorm(in_channels=2, center=True, scale=True)
            self.dense = nn.Dense(3, in_units=2 * 16 * 12)

    def hybrid_forward(self, F, x):
        a, b = F.split(self.conv(x), num_outputs=2, axis=1)
        z = self.inorm(F.slice_axis(F.slice_axis(a, axis=1, begin=1, end=3), axis=3, begin=2, end=14))
        s = F.sum(F.swapaxes(b, 1, 3), axis=(0, 2, 3))
        m = F.mean(F.broadcast_to(F.slice_axis(b, axis=2, begin=0, end=1), shape=(0, 0, 16, 16)), axis=(1, 2))
        return self.dense(z) + (s * s).mean() + m.sum(axis=1, keepdims=True)


def test_hybridized_training_through_views_equals_eager_training_bit_for_bit():
    """The compiled training function hands each view on in eager mode's layout (a packed copy);
    it used to pass the strided view, and the loss, input gradient and weights drifted from
    eager training by rounding (x.grad 3e-5 apart on a similar net)."""
    rng = np.random.RandomState(0)
    x0 = rng.randn(6, 4, 16, 16).astype("f")
    target = mx.nd.array(rng.randn(6, 3))

    def train(hybridize: bool) -> tuple:
        net = _ViewsNet(prefix="views_")
        net.initialize(mx.init.Xavier(rnd_type="gaussian"))
        for p in net.collect_params().values():  # the same start for both runs
            p.set_data(mx.nd.array(np.random.RandomState(len(p.name)).randn(*p.shape) * 0.1))
        if hybridize:
            net.hybridize()
        trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})
        x = mx.nd.array(x0)
        x.attach_grad()
        losses = []
        for _ in range(4):
            with mx.autograd.record():
                loss = ((net(x) - target) ** 2).mean()
            loss.backward()
            trainer.step(1)
            losses.append(loss.asnumpy())
        return losses, x.grad.asnumpy(), {k[len("views_"):]: v.data().asnumpy()
                                          for k, v in net.collect_params().items()}

    eager, hybrid = train(False), train(True)
    np.testing.assert_array_equal(np.concatenate(eager[0]), np.concatenate(hybrid[0]))
    np.testing.assert_array_equal(eager[1], hybrid[1])
    assert eager[2].keys() == hybrid[2].keys()
    for name in eager[2]:
        np.testing.assert_array_equal(eager[2][name], hybrid[2][name], err_msg=name)
