"""mx.profiler over every operator: each registry sample runs eagerly while the profiler wraps
every kernel (operator attributes arrive as keywords, so one named ``kernel`` or ``op_name``
must not collide with the wrapper's own parameters), gives the outputs it gives unprofiled and
is recorded under its operator's name; a hybridized conv net (Convolution's ``kernel``
attribute) profiles too."""
import numpy as np
import pytest

import hybridnet as mx
from hybridnet import profiler
from hybridnet.profiler import recorder

from . import harness


@pytest.fixture
def profiling(tmp_path):
    profiler.set_config(profile_all=True, filename=str(tmp_path / "trace.json"),
                        aggregate_stats=True)
    profiler.dumps(reset=True)
    recorder.take_events(clear=True)
    yield
    profiler.set_state("stop")
    profiler.dumps(reset=True)
    recorder.take_events(clear=True)


def _run(op, sample):
    mx.random.seed(7)
    np.random.seed(7)
    return harness.run_eager(op, sample, np.float64)


def _operator_spans():
    return [e[1] for e in recorder.take_events(clear=True) if e[0] == "X" and e[2] == "operator"]


def test_every_registry_sample_runs_under_the_profiler(profiling):
    failed, differ, unrecorded, ran = [], [], [], 0
    for case_id, op, _, sample in harness.all_cases():
        try:
            plain = _run(op, sample)
        except Exception:  # noqa: BLE001 - samples that only run in another path
            continue
        recorder.take_events(clear=True)
        profiler.set_state("run")
        try:
            profiled = _run(op, sample)
        except Exception as e:  # noqa: BLE001 - collected and reported below
            failed.append(f"{case_id}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            continue
        finally:
            profiler.set_state("stop")
        ran += 1
        spans = _operator_spans()
        if not spans:
            unrecorded.append(case_id)
        for a, b in zip(plain, profiled):
            if a.shape != b.shape or not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
                differ.append(case_id)
                break
    assert not failed, f"{len(failed)} samples fail under the profiler:\n" + "\n".join(failed)
    assert ran > 1000, ran
    assert not unrecorded, f"no operator span recorded for {unrecorded}"
    assert not differ, f"profiled outputs differ from unprofiled ones for {differ}"


def test_hybridized_conv_net_profiles(profiling):
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Conv2D(4, kernel_size=3, padding=1), mx.gluon.nn.BatchNorm(),
            mx.gluon.nn.Activation("relu"), mx.gluon.nn.MaxPool2D(), mx.gluon.nn.Dense(3))
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(0).rand(2, 1, 8, 8))
    expected = net(x).asnumpy()
    net.hybridize()
    net(x)
    profiler.set_state("run")
    got = net(x).asnumpy()
    eager_conv = mx.nd.Convolution(x, net[0].weight.data(), net[0].bias.data(), kernel=(3, 3),
                                   num_filter=4, pad=(1, 1))
    profiler.set_state("stop")
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert eager_conv.shape == (2, 4, 8, 8)
    spans = _operator_spans()
    assert spans.count("Convolution") == 2 and spans.count("FullyConnected") == 1
