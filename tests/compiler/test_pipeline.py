"""The pipelines declared once (compiler/pipeline.py): their order, the lint after each stage
naming the stage that broke the graph, the serving decision, and outputs equal to eager mode."""
import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, nd, sym
from hybridnet.compiler import passes, pipeline
from hybridnet.compiler.cached_op import CachedGraph
from hybridnet.compiler.pipeline import (PREDICT_PIPELINE, TRAINING_PIPELINE, PassContext, PredictOptions, Serve,
                                         Stage, Target, predict_graph, serving_order)
from hybridnet.gluon import nn
from hybridnet.gluon.model_zoo import vision
from hybridnet.ir.graph import Graph, GraphError, Node


def _names(stages):
    return [s.name for s in stages]


def test_the_predict_pipeline_is_one_ordered_list_with_the_lowered_tier_last():
    assert _names(PREDICT_PIPELINE) == [
        "remove_inference_identities", "fold_batchnorm", "cse", "fuse_softmax_ce", "fuse_onednn",
        "cse_after_onednn", "fuse_int8", "channels_last_convolutions", "compute_in_place", "lowered_tier"]
    assert len(set(_names(PREDICT_PIPELINE))) == len(PREDICT_PIPELINE)  # each stage once
    # every stage but the tier and CSE's rerun after the oneDNN fusion is one pass of its own name
    for name in _names(PREDICT_PIPELINE):
        if name not in ("lowered_tier", "cse_after_onednn"):
            assert callable(getattr(passes, name, None) or getattr(pipeline, name, None)), name
    tier = PREDICT_PIPELINE[-1]
    assert tier.run is None and tier.feeds == Target.TIER  # lowers: no graph rewrite of its own
    assert all(s.run is not None for s in PREDICT_PIPELINE[:-1])
    # each stage feeds one predict-mode function (the int8 fusion two); the plan's stages come first
    by_target = {t: [s.name for s in PREDICT_PIPELINE if t in s.feeds] for t in Target}
    assert by_target == {Target.PLAN: _names(PREDICT_PIPELINE)[:7],
                         Target.IN_PLACE: ["fuse_int8", "channels_last_convolutions", "compute_in_place"],
                         Target.TIER: ["lowered_tier"]}
    assert [s.needs for s in PREDICT_PIPELINE if s.needs] == ["fuse_onednn"]


def test_the_training_pipeline_is_declared_once_and_selected_by_context():
    assert _names(TRAINING_PIPELINE) == ["cse", "fuse_softmax_ce", "distinct_outputs"]

    def selected(ctx):
        g = sym.var("a")._graph()
        return [s.name for s in TRAINING_PIPELINE if s.when is None or s.when(g, ctx)]
    assert selected(PassContext()) == ["cse", "fuse_softmax_ce"]  # a hybridized block
    assert selected(PassContext(bound=True)) == ["cse", "distinct_outputs"]  # an executor
    assert selected(PassContext(bound=True, eliminate_common=False)) == []  # MXNET_ELIMINATE_COMMON_EXPR=0


def _breaks(g, ctx=None):
    """A deliberately broken pass: the last node loses an input."""
    n = g.outputs[0][0]
    return Graph([(Node(n.op, n.name, n.attrs, n.inputs[:1]), 0)] + list(g.outputs[1:]))


def _replace_stage(monkeypatch, name, run, stages="PREDICT_PIPELINE"):
    replaced = tuple(s._replace(run=run) if s.name == name else s for s in getattr(pipeline, stages))
    monkeypatch.setattr(pipeline, stages, replaced)


def _conv_bn_net():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(32, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(32, 3, padding=1), nn.BatchNorm())
    net.initialize(mx.init.Xavier())
    return net, nd.random.uniform(shape=(2, 3, 8, 8))


@pytest.mark.parametrize("broken", ["fold_batchnorm", "fuse_onednn"])
def test_a_broken_plan_stage_is_named_not_the_cse_after_it(monkeypatch, broken):
    net, x = _conv_bn_net()
    net.hybridize(static_alloc=True)
    _replace_stage(monkeypatch, broken, _breaks)
    # the plan is built by the first prediction: its kernel-error report carries the lint's
    with pytest.raises((GraphError, mx.base.MXNetError), match=f"pass {broken} produced an invalid graph") as err:
        net(x)
    assert "pass cse" not in str(err.value)


def test_a_broken_in_place_stage_is_named(monkeypatch):
    net, x = _conv_bn_net()
    net.hybridize()
    _replace_stage(monkeypatch, "channels_last_convolutions", _breaks)
    with pytest.raises(GraphError, match="^pass channels_last_convolutions produced an invalid graph"):
        net(x)


def test_a_broken_training_stage_is_named_for_blocks_and_executors(monkeypatch):
    _replace_stage(monkeypatch, "fuse_softmax_ce", _breaks, "TRAINING_PIPELINE")
    _replace_stage(monkeypatch, "distinct_outputs", _breaks, "TRAINING_PIPELINE")
    net, x = _conv_bn_net()
    net.hybridize()
    with pytest.raises(GraphError, match="^pass fuse_softmax_ce produced"):
        net(x)
    out = sym.Convolution(sym.var("data"), num_filter=4, kernel=(3, 3), name="c")
    with pytest.raises(GraphError, match="^pass distinct_outputs produced"):
        out.simple_bind(mx.cpu(), data=(1, 3, 5, 5))


def test_run_stages_skips_what_does_not_apply_and_lints_what_runs():
    calls = []

    def record(name):
        def run(g, ctx):
            calls.append(name)
            return g
        return run
    stages = [Stage("a", record("a")), Stage("b", record("b"), when=lambda g, c: False),
              Stage("c", record("c"), needs="b"), Stage("d", record("d"), needs="a"),
              Stage("e", _breaks)]
    g = (sym.var("x") + sym.var("y"))._graph()
    with pytest.raises(GraphError, match="^pass e produced"):
        pipeline.run_stages(g, stages)
    assert calls == ["a", "d"]


# -- which function serves a call ------------------------------------------------------------

class _Mode:
    def __init__(self, recording=False, training=False):
        self.recording, self.training = recording, training


PREDICT, TRAIN, RECORD = _Mode(), _Mode(training=True), _Mode(recording=True, training=True)


def test_serving_order_table():
    S = Serve
    assert serving_order(False, False) == (S.IN_PLACE, S.COMPILED)
    assert serving_order(False, False, plan=True) == (S.PLAN,)
    assert serving_order(False, False, tier=True) == (S.TIER, S.IN_PLACE, S.COMPILED)
    assert serving_order(False, False, tier=True, plan=True) == (S.TIER, S.PLAN)
    for recording, training in ((True, False), (False, True), (True, True)):
        assert serving_order(recording, training, tier=True, plan=True) == (S.COMPILED,)
    assert serving_order(False, False, hooked=True, tier=True, plan=True) == (S.HOOK,)
    assert serving_order(True, True, hooked=True) == (S.HOOK,)
    assert serving_order(False, False, profiling=True, hooked=True, plan=True) == (S.TIMED,)


def test_predict_options_follow_the_flags_as_before():
    assert PredictOptions.from_flags(False, False) == PredictOptions()
    assert PredictOptions.from_flags(True, False) == PredictOptions(plan=True)
    assert PredictOptions.from_flags(False, True) == PredictOptions()
    assert PredictOptions.from_flags(True, True) == PredictOptions(True, "MKLDNN", True)
    assert PredictOptions.from_flags(True, True, "default") == PredictOptions(plan=True)
    assert PredictOptions.from_flags(False, False, "onednn") == PredictOptions(False, "MKLDNN", False)
    assert PredictOptions.from_flags(True, False, "inductor") == PredictOptions(True, "inductor", False)
    with pytest.raises(mx.base.MXNetError, match="ONEDNN"):
        PredictOptions.from_flags(True, True, "TensorRT")


class _Spy:
    """Stands in for a compiled function, plan or tier, recording in ``calls`` when it serves."""

    def __init__(self, inner, name, calls):
        self._inner, self._name, self._calls = inner, name, calls

    def __getattr__(self, key):
        return getattr(self._inner, key)

    def __call__(self, *args, **kwargs):
        out = self._inner(*args, **kwargs)
        if out is not None:
            self._calls.append(self._name)
        return out

    @property
    def fn(self):
        return _Spy(self._inner.fn, self._name, self._calls)


def _served(net, x, mode):
    """Which function served one call of ``net`` on ``x`` in ``mode``."""
    cached = net._cached_op
    op = cached.variant([x._t] + [p.data()._t for p in cached.params])
    calls = []
    op.compiled = _Spy(op.compiled, "compiled", calls)
    if op.__dict__.get("_predict_function") is not None:
        op._predict_function = _Spy(op._predict_function, "in_place", calls)
    if op.predict_plan is not None:
        op.predict_plan = _Spy(op.predict_plan, "plan", calls)
    if op.tier is not None:
        op.tier = _Spy(op.tier, "tier", calls)
    op._route()
    with (autograd.record() if mode.recording else
          autograd.train_mode() if mode.training else autograd.predict_mode()):
        net(x)
    return op.serving(mode), calls


@pytest.mark.parametrize("flags, predict_order", [
    ({}, (Serve.IN_PLACE, Serve.COMPILED)),
    ({"static_shape": True}, (Serve.IN_PLACE, Serve.COMPILED)),
    ({"static_alloc": True}, (Serve.PLAN,)),
    ({"static_alloc": True, "static_shape": True}, (Serve.TIER, Serve.PLAN)),
    ({"static_alloc": True, "static_shape": True, "backend": "default"}, (Serve.PLAN,)),
])
def test_which_function_serves_which_call(flags, predict_order):
    net, x = _conv_bn_net()
    net.hybridize(**flags)
    net(x)  # builds the variant (and the in-place function or the plan)
    order, calls = _served(net, x, PREDICT)
    assert order == predict_order
    # an automatic tier waits out the first prediction and builds in the background: the
    # function after it serves meanwhile
    want = predict_order[-1] if predict_order[-1] is not Serve.COMPILED else predict_order[0]
    assert calls == [want.value]
    for mode in (TRAIN, RECORD):
        order, calls = _served(net, x, mode)
        assert order == (Serve.COMPILED,) and calls == ["compiled"]


def test_an_op_hook_takes_every_call_and_its_removal_restores_the_order():
    net, x = _conv_bn_net()
    net.hybridize(static_alloc=True)
    net(x)
    seen = []
    net.register_op_hook(lambda name, op, t: seen.append(name))
    order, _ = _served(net, x, PREDICT)
    assert order == (Serve.HOOK,) and seen
    net._cached_op.set_op_hook(None)
    assert _served(net, x, PREDICT) == ((Serve.PLAN,), ["plan"])


def test_predict_options_are_separate_from_static_alloc():
    """The plan can be asked for without MXNet's static_alloc (and its allocator policy)."""
    net, x = _conv_bn_net()
    net.hybridize()
    net(x)
    cached = net._cached_op
    plain = CachedGraph(cached.graph, cached.data_names, cached.param_names, cached.params,
                        predict=PredictOptions(plan=True))
    assert not plain.static_alloc and plain.predict.plan
    tensors = [x._t] + [p.data()._t for p in cached.params]
    op = plain.variant(tensors)
    assert op.predict_plan is not None and op.tier is None
    assert op.serving(PREDICT) == (Serve.PLAN,)
    flags = CachedGraph(cached.graph, cached.data_names, cached.param_names, cached.params,
                        static_alloc=True, static_shape=True)
    assert flags.predict == PredictOptions(True, "MKLDNN", True)


def test_in_place_stages_start_from_the_training_graph():
    net, x = _conv_bn_net()
    net.hybridize()
    net(x)
    op = net._cached_op.latest()
    assert op._predict_function.graph.text() == predict_graph(op.graph, Target.IN_PLACE).text()


# -- results ---------------------------------------------------------------------------------

class _Loss(nn.HybridBlock):
    """Two convolutions, a dense layer, cross-entropy and dropout: every stage has work."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2D(32, 3), nn.Conv2D(32, 3)
        self.bn = nn.BatchNorm()
        self.d = nn.Dense(5)

    def hybrid_forward(self, F, x, label):
        h = self.bn(self.c1(x)).relu() + self.c2(x).relu()
        y = self.d(F.Dropout(h, p=0.5))
        return -F.pick(F.log_softmax(y), label), y


def _models():
    net = vision.resnet18_v1(classes=10)
    net.initialize(mx.init.Xavier())
    yield "resnet18_v1", net, [nd.random.uniform(shape=(2, 3, 32, 32))]
    loss = _Loss()
    loss.initialize(mx.init.Xavier())
    yield "loss", loss, [nd.random.uniform(shape=(2, 3, 8, 8)), nd.array([1, 4])]


def _outs(out):
    return [o.asnumpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


@pytest.mark.parametrize("flags", [{}, {"static_alloc": True},
                                   {"static_alloc": True, "static_shape": True, "backend": "default"}])
def test_outputs_equal_eager_mode_for_every_pipeline(flags):
    for name, net, args in _models():
        net.hybridize(active=False)
        with autograd.predict_mode():
            want = _outs(net(*args))
        net.hybridize(**flags)
        with autograd.predict_mode():
            got = _outs(net(*args))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=f"{name} {flags}")
        mx.random.seed(3)
        with autograd.record():
            got = _outs(net(*args))
        net.hybridize(active=False)
        mx.random.seed(3)
        with autograd.record():
            want = _outs(net(*args))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=f"{name} {flags} training")
