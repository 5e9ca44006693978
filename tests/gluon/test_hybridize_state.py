"""A HybridBlock's hybridize state: one typed, checked options object (``_options``), one trace
(``_cached_graph``, a TracedGraph) and the compiled graph built from them; tracing state
entered and left by one context manager; ``verify=N``'s eager side confined to the calling
thread (no shared parameter tensor, block flag or module global is swapped)."""
import dataclasses
import re
import threading

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import gluon
from hybridnet.base import MXNetError
from hybridnet.compiler.verify import VerificationError
from hybridnet.gluon import block as block_mod
from hybridnet.gluon import nn
from hybridnet.gluon.block import TracedGraph
from hybridnet.gluon.hybridize_options import HYBRIDIZE_FLAGS, HybridizeOptions
from hybridnet.ndarray import ndarray as nd_mod
from hybridnet.symbol.symbol import TRACING, TraceState, tracing


def _mlp():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(4, activation="relu"), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    return net


# ---- options ---------------------------------------------------------------------------------
def test_options_are_typed_checked_and_frozen():
    net = _mlp()
    assert net._options == HybridizeOptions() and not net._options.active
    net.hybridize(static_alloc=1, static_shape=True, inline_limit=4, max_cached=3, verify=2,
                  backend="default", backend_opts={"a": 1})
    o = net._options
    assert isinstance(o, HybridizeOptions)
    assert (o.active, o.static_alloc, o.static_shape, o.inline_limit, o.max_cached, o.verify,
            o.backend, o.backend_opts) == (True, True, True, 4, 3, 2, "default", {"a": 1})
    assert o.static_alloc is True  # coerced, as the old flags dict held it
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.active = False  # type: ignore[misc]
    # children get active, static_alloc/static_shape and the keyword flags; not backend or verify
    child = net[0]._options
    assert (child.active, child.static_alloc, child.inline_limit, child.max_cached) == (True, True, 4, 3)
    assert child.verify == 0 and child.backend is None and child.backend_opts is None


def test_every_option_is_a_flag_and_the_unknown_flag_error_is_unchanged():
    assert {f.name for f in dataclasses.fields(HybridizeOptions)} | {"clear"} == set(HYBRIDIZE_FLAGS)
    with pytest.raises(TypeError) as e:
        _mlp().hybridize(static_aloc=True)
    assert str(e.value) == (
        "HybridSequential.hybridize() got unknown flag(s) ['static_aloc'] (did you mean "
        "'static_alloc'?); valid flags are ['active', 'backend', 'backend_opts', 'clear', "
        "'static_alloc', 'static_shape', 'inline_limit', 'forward_bulk_size', "
        "'backward_bulk_size', 'partition_if_dynamic', 'max_cached', 'verify']")
    with pytest.raises(TypeError, match=re.escape("Sequential.hybridize() got unknown flag(s) ['fast']")):
        nn.Sequential().hybridize(fast=True)


@pytest.mark.parametrize("flags,err,match", [
    ({"verify": True}, TypeError, r"hybridize\(verify=...\) takes the number of calls"),
    ({"verify": -1}, TypeError, r"hybridize\(verify=...\) takes the number of calls"),
    ({"max_cached": 0}, TypeError, r"hybridize\(max_cached=...\) takes how many"),
    ({"max_cached": 2.0}, TypeError, r"hybridize\(max_cached=...\) takes how many"),
    ({"backend": 3}, TypeError, r"backend must be a string"),
    ({"backend": "no-such-backend"}, MXNetError, r"no-such-backend"),
])
def test_a_rejected_hybridize_keeps_the_previous_options(flags, err, match):
    net = _mlp()
    net.hybridize(static_shape=True)
    before = net._options
    with pytest.raises(err, match=match):
        net.hybridize(**flags)
    assert net._options is before


def test_rehybridizing_with_other_options_rebuilds_the_compiled_graph():
    net = _mlp()
    x = mx.nd.ones((2, 5))
    net.hybridize()
    ref = net(x).asnumpy()
    first = net._cached_op
    assert not first.static_shape and first.max_cached == HybridizeOptions().max_cached
    net.hybridize(static_shape=True, max_cached=2)
    assert net._cached_op is None and not net._cached_graph   # cleared: traced again
    np.testing.assert_allclose(net(x).asnumpy(), ref, rtol=1e-6)
    second = net._cached_op
    assert second is not first and second.static_shape and second.max_cached == 2
    net.hybridize(static_alloc=True, clear=False)             # kept, options recorded for later
    assert net._cached_op is second and net._options.static_alloc
    net.hybridize(False)
    assert not net._options.active
    np.testing.assert_allclose(net(x).asnumpy(), ref, rtol=1e-6)  # eager again
    assert net._cached_op is None


# ---- one trace -------------------------------------------------------------------------------
class _Pair(gluon.HybridBlock):
    def hybrid_forward(self, F, x, y=None):
        return [x + 1, F.relu(x)]


def test_the_trace_is_held_once():
    net = _Pair()
    net.hybridize()
    x = mx.nd.ones((2, 5))
    net(x, None)   # the input and output structures are the trace's
    trace = net._cached_graph
    assert isinstance(trace, TracedGraph)
    inputs, out = trace   # MXNet's (inputs, output) form still reads
    assert inputs is trace.inputs and out is trace.output
    assert trace.in_format == [0, -1] and trace.out_format == [0, 0]
    assert trace.in_shapes == {"data": (2, 5)}
    cached = net._cached_op
    assert cached.in_format == trace.in_format and cached.out_format == trace.out_format
    for gone in ("_active", "_flags", "_in_format", "_out_format", "_last_in_shapes"):
        assert not hasattr(net, gone), gone


# ---- tracing state ---------------------------------------------------------------------------
class _Fails(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        y = F.relu(x)
        if F is mx.sym:
            raise ValueError("boom")
        return y


@pytest.mark.parametrize("verify", [0, 2])
def test_tracing_state_is_restored_after_an_exception_in_hybrid_forward(verify):
    net = nn.HybridSequential()
    net.add(_Fails())
    net.hybridize(verify=verify)
    with pytest.raises(ValueError, match="boom"):
        net(mx.nd.ones((2, 2)))
    assert TRACING.state == TraceState()
    assert not net.hybridize_report(mx.nd.ones((2, 2))).ok  # the dry run reports it
    assert TRACING.state == TraceState()


def test_tracing_nests_and_restores_whatever_is_raised():
    created = []
    with tracing(enter_block=True, created=created) as outer:
        assert outer.depth == 1 and TRACING.state is outer
        with pytest.raises(RuntimeError):
            with tracing(enter_block=True, report=[]) as inner:
                assert inner.depth == 2 and inner.created is created and inner.report == []
                raise RuntimeError
        assert TRACING.state is outer
        mx.sym.relu(mx.sym.var("a"))
    assert TRACING.state == TraceState() and [n.op.name for n, _ in created] == ["relu"]
    with pytest.raises(TypeError):
        with tracing(no_such_field=1):
            pass


def test_tracing_state_is_per_thread():
    seen = []
    with tracing(enter_block=True, created=[]):
        t = threading.Thread(target=lambda: seen.append(TRACING.state))
        t.start()
        t.join()
    assert seen == [TraceState()]


# ---- verify without shared state -------------------------------------------------------------
class _Probe(gluon.HybridBlock):
    """Dense * scale; ``on_eager(block)`` runs inside each eager call."""

    def __init__(self, on_eager=None):
        super().__init__()
        self.scale = 2.0
        self.on_eager = on_eager
        with self.name_scope():
            self.dense = nn.Dense(4)

    def hybrid_forward(self, F, x):
        if F is mx.nd and self.on_eager is not None:
            self.on_eager(self)
        return self.dense(x) * self.scale


def test_another_thread_sees_the_block_unchanged_during_a_verified_call():
    x = mx.nd.ones((2, 3))
    seen = {}

    def other_thread(block):
        def run():
            w = block.dense.weight
            seen["weight_tensor"] = w.data()._t
            seen["active"] = block._options.active
            seen["out"] = block(x).asnumpy()   # the compiled graph, on the real parameters
        t = threading.Thread(target=run)
        t.start()
        t.join()

    net = _Probe()
    net.initialize()
    net.hybridize(verify=2)
    ref = net(x).asnumpy()            # verified call 1
    weight = net.dense.weight.data()._t
    net.on_eager = other_thread
    assert np.allclose(net(x).asnumpy(), ref)   # verified call 2: the probe runs in its eager side
    assert seen["weight_tensor"] is weight and seen["active"] is True
    np.testing.assert_allclose(seen["out"], ref, rtol=1e-6)
    assert block_mod._EAGER_RUNS == {} and nd_mod._op_recorders == {}


def test_verify_in_two_threads_at_once_reports_each_threads_own_divergence():
    barrier = threading.Barrier(2, timeout=60)
    x = mx.nd.ones((2, 3))
    errors = {}

    def meet(block):
        barrier.wait()   # both threads are in their eager sides now

    def run(name):
        try:
            net = _Probe(on_eager=meet)
            net.initialize()
            net.hybridize(verify=2)
            net.scale = 3.0   # the graph keeps 3.0 ...
            net(x)
            net.scale = 5.0   # ... the eager code now multiplies by 5
            net(x)
        except VerificationError as e:
            errors[name] = str(e)
        except Exception as e:  # noqa: BLE001 - reported below
            errors[name] = f"unexpected {type(e).__name__}: {e}"

    threads = [threading.Thread(target=run, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(errors) == {"a", "b"}, errors
    for msg in errors.values():
        # each thread's eager operators were recorded for it: the divergence is found at the
        # multiplication, not reported as an operator missing from the eager run
        assert "First divergence" in msg and "mul" in msg.lower(), msg
        assert "no matching operator" not in msg, msg
    assert block_mod._EAGER_RUNS == {} and nd_mod._op_recorders == {}


def test_verify_on_nested_blocks():
    x = mx.nd.array(np.random.RandomState(0).randn(2, 3))
    outer = nn.HybridSequential()
    with outer.name_scope():
        inner = _Probe()
        outer.add(inner, nn.Dense(2))
    outer.initialize()
    outer.hybridize(verify=2)
    inner.hybridize(verify=2)   # the child verified on its own calls too
    for _ in range(2):
        inner(x)
        outer(x)
    assert inner._cached_op.verify_left == 0 and outer._cached_op.verify_left == 0
    outer.hybridize(verify=2)
    outer(x)
    inner.scale = 4.0   # the parent's graph keeps the child's 2.0
    with pytest.raises(VerificationError, match="mul"):
        outer(x)
    assert block_mod._EAGER_RUNS == {} and nd_mod._op_recorders == {}


def test_recording_ops_nests_per_thread():
    a = mx.nd.ones((2,))
    with nd_mod.recording_ops() as outer:
        mx.nd.relu(a)
        with nd_mod.recording_ops() as inner:
            mx.nd.sigmoid(a)
            t = threading.Thread(target=lambda: mx.nd.tanh(a))
            t.start()
            t.join()
        mx.nd.exp(a)
    assert [op.name for op, _ in outer.records] == ["relu", "exp"]
    assert [op.name for op, _ in inner.records] == ["sigmoid"]
    assert nd_mod._op_recorders == {}
