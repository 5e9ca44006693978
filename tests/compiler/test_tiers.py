"""Lowered predict-mode tiers (compiler/tiers.py) against the default compiled function."""
from __future__ import annotations

import os
import shutil
import sys
import warnings

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet.base import MXNetError
from hybridnet.compiler import tiers
from hybridnet.compiler.codegen import compile_graph
from hybridnet.gluon.model_zoo.vision import get_model

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from demo import Net as LeNet  # noqa: E402  (the seed tutorial's LeNet)

RTOL, ATOL = 1e-4, 1e-5


class Case:
    """A net after one eager forward, its traced graph and the default tier's function."""

    def __init__(self, net: mx.gluon.HybridBlock, shape: tuple):
        net.initialize()
        self.net = net
        x = mx.nd.random.uniform(-1, 1, shape=shape)
        net(x)
        self.graph = net(mx.sym.var("data"))._graph()
        variables = self.graph.variables()
        self.data_node = next(v for v in variables if v.name == "data")
        self.param_nodes = [v for v in variables if v is not self.data_node]
        self.inputs = [self.data_node] + self.param_nodes
        self.default = compile_graph(self.graph, self.inputs)
        self.x = x._t

    def params(self) -> list:
        table = self.net.collect_params()
        return [table[v.name].data()._t for v in self.param_nodes]

    def tensors(self, x: torch.Tensor = None) -> list:
        return [self.x if x is None else x] + self.params()

    def expected(self, tensors: list) -> tuple:
        with torch.no_grad():
            return self.default(*tensors)


def assert_same(got: tuple, want: tuple) -> None:
    assert got is not None, "the tier fell back where it should have run"
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=RTOL, atol=ATOL)


MODELS = {
    "lenet": (lambda: LeNet(), (4, 1, 28, 28)),
    "resnet18_v1": (lambda: get_model("resnet18_v1", classes=10), (2, 3, 32, 32)),
    "mobilenet1.0": (lambda: get_model("mobilenet1.0", classes=10), (2, 3, 32, 32)),
    "mobilenetv2_0.25": (lambda: get_model("mobilenetv2_0.25", classes=10), (2, 3, 32, 32)),
    "squeezenet1.0": (lambda: get_model("squeezenet1.0", classes=10), (1, 3, 224, 224)),
    "vgg11_bn": (lambda: get_model("vgg11_bn", classes=10), (2, 3, 32, 32)),
    "alexnet": (lambda: get_model("alexnet", classes=10), (1, 3, 63, 63)),  # smallest valid size
}


@pytest.fixture(scope="module")
def lenet() -> Case:
    mx.random.seed(0)
    return Case(LeNet(), (4, 1, 28, 28))


# ---- names --------------------------------------------------------------------------------
def test_check_backend_names_and_aliases():
    assert tiers.check_backend("MKLDNN") == "MKLDNN"
    assert tiers.check_backend("onednn") == "MKLDNN"
    assert tiers.check_backend("OneDNN") == "MKLDNN"
    assert tiers.check_backend("Inductor") == "inductor"
    assert tiers.check_backend("default") == "default"
    with pytest.raises(MXNetError) as e:
        tiers.check_backend("TensorRT")
    for name in ("'TensorRT'", "'MKLDNN'", "'ONEDNN'", "'inductor'", "'default'"):
        assert name in str(e.value)


def test_unknown_backend_in_lower_and_runner(lenet):
    with pytest.raises(MXNetError, match="unknown backend 'tvm'"):
        tiers.lower("tvm", lenet.graph, lenet.inputs, 1, lenet.tensors())
    with pytest.raises(MXNetError, match="unknown backend"):
        tiers.TierRunner("tvm", lenet.graph, lenet.inputs, 1)
    with pytest.raises(tiers.TierRefused, match="'default' has no lowered tier"):
        tiers.TierRunner("default", lenet.graph, lenet.inputs, 1)


# ---- results equal the default tier ----------------------------------------------------------
@pytest.mark.parametrize("name", list(MODELS))
def test_torchscript_tier_matches_default(name):
    mx.random.seed(1)
    make, shape = MODELS[name]
    case = Case(make(), shape)
    lowered = tiers.lower("ONEDNN", case.graph, case.inputs, 1, case.tensors())
    assert_same(lowered(case.tensors()), case.expected(case.tensors()))
    other = torch.rand(shape) * 2 - 1  # values the trace never saw
    assert_same(lowered(case.tensors(other)), case.expected(case.tensors(other)))
    # outputs are fresh memory: writing into one does not change the next call's result
    first = lowered(case.tensors())
    first[0].fill_(123.0)
    assert_same(lowered(case.tensors()), case.expected(case.tensors()))


@pytest.mark.parametrize("channels_last", [False, True])
def test_channels_last_keeps_values_and_layout(channels_last):
    mx.random.seed(2)
    case = Case(get_model("resnet18_v1", classes=10), (2, 3, 32, 32))
    lowered = tiers.lower("MKLDNN", case.graph, case.inputs, 1, case.tensors(),
                          channels_last=channels_last)
    assert lowered.channels_last is channels_last
    got = lowered(case.tensors())
    assert all(o.is_contiguous() for o in got)
    assert_same(got, case.expected(case.tensors()))


# ---- guards: parameters and data signature ------------------------------------------------------
def test_parameter_change_in_place_and_set_data_is_seen():
    mx.random.seed(3)
    case = Case(LeNet(), (4, 1, 28, 28))
    lowered = tiers.lower("MKLDNN", case.graph, case.inputs, 1, case.tensors())
    assert_same(lowered(case.tensors()), case.expected(case.tensors()))
    table = case.net.collect_params()
    weight = table[case.param_nodes[0].name]
    weight.data()[:] = weight.data() * 0.5  # in place: same tensor, new version
    assert lowered(case.tensors()) is tiers.FALLBACK
    relowered = tiers.lower("MKLDNN", case.graph, case.inputs, 1, case.tensors())
    assert_same(relowered(case.tensors()), case.expected(case.tensors()))
    bias = table[case.param_nodes[1].name]
    bias.set_data(mx.nd.ones(bias.shape))  # a new tensor
    assert relowered(case.tensors()) is tiers.FALLBACK


def test_runner_relowers_after_parameter_change(lenet):
    runner = tiers.TierRunner("MKLDNN", lenet.graph, lenet.inputs, 1, background=False)
    assert_same(runner(lenet.tensors()), lenet.expected(lenet.tensors()))
    table = lenet.net.collect_params()
    name = lenet.param_nodes[-1].name  # fc3_weight, the last layer
    before = runner(lenet.tensors())[0].clone()
    table[name].data()[:] = table[name].data() + 1.0
    got = runner(lenet.tensors())
    assert_same(got, lenet.expected(lenet.tensors()))
    assert not torch.allclose(got[0], before)
    assert runner.builds == 2


def test_other_batch_size_falls_back_then_relowers(lenet):
    lowered = tiers.lower("MKLDNN", lenet.graph, lenet.inputs, 1, lenet.tensors())
    x7 = torch.rand(7, 1, 28, 28)
    assert lowered(lenet.tensors(x7)) is tiers.FALLBACK
    assert lowered(lenet.tensors(lenet.x.double())) is tiers.FALLBACK  # dtype is part of it
    runner = tiers.TierRunner("MKLDNN", lenet.graph, lenet.inputs, 1, background=False)
    assert_same(runner(lenet.tensors()), lenet.expected(lenet.tensors()))
    assert_same(runner(lenet.tensors(x7)), lenet.expected(lenet.tensors(x7)))
    assert_same(runner(lenet.tensors()), lenet.expected(lenet.tensors()))
    assert runner.builds == 2  # both signatures kept


def test_runner_keeps_at_most_max_signatures_programs(lenet):
    runner = tiers.TierRunner("MKLDNN", lenet.graph, lenet.inputs, 1, background=False,
                              max_signatures=2)
    for batch in (1, 2, 3, 1, 2):
        x = torch.rand(batch, 1, 28, 28)
        assert_same(runner(lenet.tensors(x)), lenet.expected(lenet.tensors(x)))
        assert len(runner._programs) <= 2
    assert runner.builds == 5  # 1 was evicted by 3, 2 by 1
    assert runner.disabled is None  # every program served the call it was built for


def test_runner_disables_itself_when_weights_change_every_call(lenet):
    runner = tiers.TierRunner("MKLDNN", lenet.graph, lenet.inputs, 1, background=True,
                              max_unused_builds=2)
    table = lenet.net.collect_params()
    name = lenet.param_nodes[-1].name
    for _ in range(8):
        out = runner(lenet.tensors())
        if out is not None:
            assert_same(out, lenet.expected(lenet.tensors()))
        runner.wait()
        table[name].data()[:] = table[name].data() * 0.99
    runner(lenet.tensors())
    assert runner.disabled is not None and "dropped before serving" in runner.disabled
    assert runner(lenet.tensors()) is tiers.FALLBACK


# ---- refusals ------------------------------------------------------------------------------------
def _lower_symbol(out: mx.sym.Symbol, shapes: dict) -> tiers.LoweredGraph:
    graph = out._graph()
    inputs = graph.variables()
    tensors = [torch.rand(shapes[v.name]) for v in inputs]
    return tiers.lower("MKLDNN", graph, inputs, 1, tensors)


def test_refuses_random_operators():
    data = mx.sym.var("data")
    with pytest.raises(tiers.TierRefused, match="random operator"):
        _lower_symbol(data + mx.sym.random.uniform(shape=(2, 3)), {"data": (2, 3)})
    with pytest.raises(tiers.TierRefused, match="Dropout\\(mode='always'\\)"):
        _lower_symbol(mx.sym.Dropout(data, p=0.5, mode="always"), {"data": (2, 3)})


def test_predict_mode_dropout_is_lowered():
    data = mx.sym.var("data")
    lowered = _lower_symbol(mx.sym.Dropout(data * 2, p=0.5), {"data": (2, 3)})
    x = torch.rand(2, 3)
    assert_same(lowered([x]), (x * 2,))


def test_refuses_control_flow():
    data = mx.sym.var("data")
    outs, _ = mx.sym.contrib.foreach(lambda x, s: (x * 2, s), data, [])
    with pytest.raises(tiers.TierRefused, match="control flow"):
        _lower_symbol(outs, {"data": (3, 2)})


def test_refuses_kernels_that_read_values():
    data, index = mx.sym.var("data"), mx.sym.var("index")
    graph = mx.sym.contrib.boolean_mask(data, index)._graph()
    inputs = graph.variables()
    tensors = {"data": torch.rand(4, 3), "index": torch.tensor([1.0, 0.0, 1.0, 1.0])}
    with pytest.raises(tiers.TierRefused, match="read tensor values") as e:
        tiers.lower("MKLDNN", graph, inputs, 2, [tensors[v.name] for v in inputs])
    assert "boolean" in str(e.value)


def test_runner_warns_once_when_a_build_fails_and_keeps_falling_back():
    data, index = mx.sym.var("data"), mx.sym.var("index")
    graph = mx.sym.contrib.boolean_mask(data, index)._graph()
    inputs = graph.variables()
    tensors = [{"data": torch.rand(4, 3), "index": torch.tensor([1.0, 0.0, 1.0, 1.0])}[v.name]
               for v in inputs]
    runner = tiers.TierRunner("MKLDNN", graph, inputs, 2)  # refused only when built
    assert runner(tensors) is tiers.FALLBACK
    with pytest.warns(RuntimeWarning, match="read tensor values"):
        runner.wait()
    assert runner.disabled is not None and "read tensor values" in runner.disabled
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert runner(tensors) is tiers.FALLBACK
    assert runner.builds == 1


def test_parameter_only_output_is_a_fresh_copy():
    data, weight = mx.sym.var("data"), mx.sym.var("weight")
    out = mx.sym.Group([mx.sym.FullyConnected(data, weight, num_hidden=3, no_bias=True), weight * 2])
    graph = out._graph()
    inputs = [v for v in graph.variables() if v.name == "data"] + \
             [v for v in graph.variables() if v.name == "weight"]
    x, w = torch.rand(2, 4), torch.rand(3, 4)
    lowered = tiers.lower("MKLDNN", graph, inputs, 1, [x, w])
    first = lowered([x, w])
    first[1].zero_()
    assert_same(lowered([x, w]), (x @ w.T, w * 2))


# ---- background lowering --------------------------------------------------------------------------
def test_background_runner_swaps_in(lenet):
    runner = tiers.TierRunner("MKLDNN", lenet.graph, lenet.inputs, 1)  # background by default
    assert runner(lenet.tensors()) is tiers.FALLBACK  # the default tier serves the first call
    runner.wait()
    assert_same(runner(lenet.tensors()), lenet.expected(lenet.tensors()))


def test_background_lowering_reports_a_failure_once():
    def build():
        raise RuntimeError("no compiler here")
    job = tiers.BackgroundLowering(build)
    job.join(10)
    with pytest.warns(RuntimeWarning, match="no compiler here"):
        assert job.ready() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert job.ready() is None  # no second warning


def test_background_lowering_returns_the_build():
    job = tiers.BackgroundLowering(lambda: (lambda tensors: tuple(tensors)))
    fn = job.wait(10)
    assert fn is not None and fn([1, 2]) == (1, 2)


# ---- Inductor: one tiny model (compiles for seconds) ----------------------------------------------
@pytest.mark.skipif(not any(shutil.which(c) for c in ("c++", "g++", "clang++")),
                    reason="Inductor's CPU backend needs a C++ compiler")
def test_inductor_tier_matches_default():
    mx.random.seed(4)
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(8, activation="relu"), mx.gluon.nn.Dense(3))
    case = Case(net, (4, 5))
    lowered = tiers.lower("inductor", case.graph, case.inputs, 1, case.tensors())
    other = torch.rand(4, 5)
    assert_same(lowered(case.tensors(other)), case.expected(case.tensors(other)))
    assert lowered(case.tensors(torch.rand(6, 5))) is tiers.FALLBACK


def test_runner_with_min_speedup_keeps_only_a_faster_program(lenet):
    slow_bar = tiers.TierRunner("MKLDNN", lenet.graph, lenet.inputs, 1, background=False,
                                min_speedup=1e6)  # no program is a million times faster
    assert slow_bar(lenet.tensors()) is tiers.FALLBACK
    assert slow_bar.disabled.startswith("not 1e+06x faster than the default tier")
    assert slow_bar(lenet.tensors()) is tiers.FALLBACK and slow_bar.builds == 1
    lowered = tiers.lower("MKLDNN", lenet.graph, lenet.inputs, 1, lenet.tensors(), timed=True)
    assert lowered.default_seconds > 0 and lowered.lowered_seconds > 0
    untimed = tiers.lower("MKLDNN", lenet.graph, lenet.inputs, 1, lenet.tensors())
    assert untimed.default_seconds == untimed.lowered_seconds == 0.0


def test_runner_defers_its_first_build_and_times_against_the_baseline(lenet):
    """The automatic choice: the first call falls back without building (the predict plan is
    being built then); the build is timed against ``baseline``, and a refusal names it."""
    seen = []

    def baseline(tensors):
        seen.append(len(tensors))
        return ()
    runner = tiers.TierRunner("MKLDNN", lenet.graph, lenet.inputs, 1, background=False, min_speedup=1e6,
                              baseline=baseline, defer_calls=1)
    assert runner(lenet.tensors()) is tiers.FALLBACK and runner.builds == 0 and seen == []
    assert runner(lenet.tensors()) is tiers.FALLBACK and runner.builds == 1
    assert seen and set(seen) == {len(lenet.inputs)}  # timed on data + parameters
    assert runner.disabled.startswith("not 1e+06x faster than the predict plan")


def test_relu6_clip_takes_the_fused_onednn_path(monkeypatch):
    """MobileNetV2's relu6 is clip(0, 6): with integer bounds torch's optimize_for_inference
    asserted and the tier fell back to the unfused frozen program; the kernel passes floats."""
    mx.random.seed(5)
    case = Case(get_model("mobilenetv2_0.25", classes=10), (2, 3, 32, 32))
    outcomes = []
    original = torch.jit.optimize_for_inference

    def spy(module, *args, **kwargs):
        try:
            result = original(module, *args, **kwargs)
        except RuntimeError:
            outcomes.append("failed")
            raise
        outcomes.append("fused")
        return result

    monkeypatch.setattr(torch.jit, "optimize_for_inference", spy)
    lowered = tiers.lower("MKLDNN", case.graph, case.inputs, 1, case.tensors())
    assert outcomes == ["fused"]
    assert_same(lowered(case.tensors()), case.expected(case.tensors()))


# ---- the build policy: when to build, at which priority, what a build leaves behind ----------
def test_a_runner_refusing_a_slow_program_drops_it_quietly_and_tells_no_one(lenet):
    served = []
    runner = tiers.TierRunner("MKLDNN", lenet.graph, lenet.inputs, 1, min_speedup=1e6,
                              on_serving=lambda: served.append(1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert runner(lenet.tensors()) is tiers.FALLBACK
        runner.wait(120)
        assert runner(lenet.tensors()) is tiers.FALLBACK
    # a program that does not pay is no failure: no warning
    assert not [w for w in caught if "lowering failed" in str(w.message)]
    assert runner.disabled.startswith("not 1e+06x faster than the default tier")
    assert runner._programs == [] and served == []


def test_on_serving_is_called_when_a_program_is_kept(lenet):
    served = []
    runner = tiers.TierRunner("MKLDNN", lenet.graph, lenet.inputs, 1, background=False,
                              on_serving=lambda: served.append(1))
    assert_same(runner(lenet.tensors()), lenet.expected(lenet.tensors()))
    assert served == [1]


def test_deferred_build_starts_after_the_deferred_calls_or_after_a_wait(lenet):
    runner = tiers.TierRunner("MKLDNN", lenet.graph, lenet.inputs, 1, background=False, defer_calls=3)
    for _ in range(3):
        assert runner(lenet.tensors()) is tiers.FALLBACK and runner.builds == 0
    assert_same(runner(lenet.tensors()), lenet.expected(lenet.tensors()))
    assert runner.builds == 1
    waited = tiers.TierRunner("MKLDNN", lenet.graph, lenet.inputs, 1, background=False, defer_calls=3)
    assert waited(lenet.tensors()) is tiers.FALLBACK and waited.builds == 0
    waited.wait()  # whoever waits wants the tier settled: the next call builds
    assert_same(waited(lenet.tensors()), lenet.expected(lenet.tensors()))
    assert waited.builds == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
def test_background_builds_run_at_the_callers_priority_or_the_lowest_when_asked():
    seen = []
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    for low in (False, True):
        job = tiers.BackgroundLowering(lambda: seen.append(os.getpriority(os.PRIO_PROCESS, 0)) or (lambda: None),
                                       low_priority=low)
        job.wait(60)
    assert seen == [mine, 19]
    assert os.getpriority(os.PRIO_PROCESS, 0) == mine  # the calling thread is untouched


def test_background_lowering_lets_go_of_its_build_and_example_when_done():
    import gc
    import weakref
    example = torch.ones(1000)
    ref = weakref.ref(example)
    job = tiers.BackgroundLowering(lambda: (lambda: example.sum()) and None)
    del example
    job.wait(60)
    gc.collect()
    assert ref() is None  # the closure holding the example tensors is gone once the build ended


def test_automatic_tier_waits_for_a_hot_signature_and_frees_the_plans_weights_while_it_serves():
    from hybridnet.compiler.cached_op import AUTOMATIC_TIER_AFTER_CALLS, CachedOp
    from hybridnet.compiler.predict import PredictPlan
    mx.random.seed(1)
    case = Case(LeNet(), (4, 1, 28, 28))
    plan = PredictPlan(case.graph, [case.data_node], case.param_nodes)
    op = CachedOp(case.graph, [case.data_node], case.param_nodes, predict=plan, backend="MKLDNN",
                  automatic=True)
    op.tier.min_speedup = 0.0  # keep whatever is built (speed is the machine's, not the test's)
    op.tier.background = False

    class Predict:
        recording = training = False
    want = case.expected(case.tensors())
    for _ in range(AUTOMATIC_TIER_AFTER_CALLS):
        assert_same(op(case.tensors(), Predict()), want)
        assert op.tier.builds == 0 and plan.holds_folded
    assert_same(op(case.tensors(), Predict()), want)  # built, serving: the folded weights go
    assert op.tier.builds == 1 and op.tier._programs and not plan.holds_folded
    # a call the tier cannot serve (another batch size) falls back to the plan, which refolds
    other = torch.rand(2, 1, 28, 28)
    assert_same(op(case.tensors(other), Predict()), case.expected(case.tensors(other)))


def test_a_dropped_torchscript_program_lets_go_of_its_frozen_weights(lenet):
    """TorchScript keeps a frozen module's class type (and the weights in its graph) for the life
    of the process; a dropped lowered program empties that graph, so the weights are freed."""
    import gc
    lowered = tiers.lower("MKLDNN", lenet.graph, lenet.inputs, 1, lenet.tensors())
    assert_same(lowered(lenet.tensors()), lenet.expected(lenet.tensors()))
    module = torch.jit._recursive.wrap_cpp_module(lowered._program._self)
    graph = module.forward.graph
    weights = [n for n in graph.nodes() if n.kind().startswith("prim::Constant")
               and n.output().type().kind() == "TensorType"]
    assert weights  # the frozen (pre-packed) weights are constants of the graph
    del lowered, weights
    gc.collect()
    assert list(graph.nodes()) == []


def test_lowering_bakes_the_parameters_in_without_writing_them():
    """The program bakes the caller's parameter tensors in (no private copy of the weights):
    building it leaves their values and version counters as they were, and a later write in
    place makes it fall back."""
    mx.random.seed(2)
    case = Case(get_model("resnet18_v1", classes=10), (2, 3, 32, 32))
    params = case.params()
    saved = [p.clone() for p in params]
    versions = [p._version for p in params]
    lowered = tiers.lower("MKLDNN", case.graph, case.inputs, 1, case.tensors())
    assert all(torch.equal(a, b) for a, b in zip(params, saved))
    assert [p._version for p in params] == versions
    assert_same(lowered(case.tensors()), case.expected(case.tensors()))
    with torch.no_grad():
        params[0].mul_(2.0)
    assert lowered(case.tensors()) is tiers.FALLBACK
