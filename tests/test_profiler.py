"""mx.profiler: operator/block/graph-node events with the right names and counts, valid Chrome
trace JSON, MXNet's aggregate tables, user annotations, and nothing recorded while stopped."""
import json

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import profiler
from hybridnet.profiler import recorder


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "trace.json"
    profiler.set_config(profile_all=True, filename=str(path), aggregate_stats=True)
    profiler.dumps(reset=True)
    recorder.take_events(clear=True)
    yield path
    profiler.set_state("stop")
    profiler.dumps(reset=True)
    recorder.take_events(clear=True)


def _events(path):
    with open(path) as f:
        return json.load(f)["traceEvents"]


def _names(path, cat):
    return [e["name"] for e in _events(path) if e.get("cat") == cat]


def test_imperative_ops_named_and_counted(trace):
    x = mx.nd.ones((3, 4))
    profiler.set_state("run")
    for _ in range(3):
        mx.nd.relu(x)
    y = mx.nd.sqrt(x) + 1
    y = y + 1
    profiler.set_state("stop")
    mx.nd.relu(x)  # stopped: not recorded
    profiler.dump()
    ops = _names(trace, "operator")
    assert ops.count("relu") == 3 and ops.count("sqrt") == 1 and ops.count("_plus_scalar") == 2
    stats = json.loads(profiler.dumps(format="json"))
    assert stats["Time"]["operator"]["relu"]["Count"] == 3
    assert stats["Time"]["operator"]["_plus_scalar"]["Count"] == 2
    assert stats["Unit"] == {"Time": "ms", "Memory": "kB"}
    for e in _events(trace):
        if e.get("ph") == "X":
            assert e["dur"] >= 0 and isinstance(e["ts"], float)


def test_blocks_and_hybridized_graph_nodes(trace):
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(4, activation="relu"), mx.gluon.nn.Dense(2))
    net.initialize()
    x = mx.nd.ones((2, 3))
    net(x)
    net.hybridize()
    net(x)  # trace + compile
    profiler.set_state("run")
    net(x)
    net(x)
    profiler.set_state("stop")
    profiler.dump()
    blocks = _names(trace, "Gluon Block")
    assert blocks.count(f"{net.name} forward") == 2
    ops = _names(trace, "operator")
    # the compiled graph's nodes, by MXNet operator name: 2 FullyConnected and 1 relu per call
    assert ops.count("FullyConnected") == 4
    assert ops.count("Activation") == 2


def test_executor_nodes(trace):
    a = mx.sym.Variable("a")
    exe = (mx.sym.dot(a, a) + 1).simple_bind(mx.cpu(), a=(3, 3))
    profiler.set_state("run")
    exe.forward()
    profiler.set_state("stop")
    profiler.dump()
    ops = _names(trace, "operator")
    assert ops.count("dot") == 1 and ops.count("_plus_scalar") == 1
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), np.ones((3, 3)))  # a is zeros


def test_pause_resume_and_annotations(trace):
    domain = profiler.Domain("D")
    profiler.set_state("run")
    profiler.pause()
    with profiler.Task(domain, "hidden"):
        mx.nd.ones((2,))
    profiler.resume()
    task = profiler.Task(domain, "shown")
    task.start()
    task.stop()
    frame = domain.new_frame("frame")
    frame.start()
    frame.stop()
    counter = domain.new_counter("count", 5)
    counter += 2
    counter -= 1
    profiler.Marker(domain, "mark").mark("thread")
    profiler.set_state("stop")
    profiler.dump()
    events = _events(trace)
    names = [e["name"] for e in events]
    assert "hidden" not in names and "shown" in names
    assert [e["args"]["count"] for e in events if e["name"] == "count"] == [5, 7, 6]
    assert [e["s"] for e in events if e["name"] == "mark"] == ["t"]
    assert any(e.get("cat") == "D,frame" for e in events)
    with pytest.raises(mx.MXNetError, match="scope"):
        profiler.Marker(domain, "m").mark("galaxy")


def test_continuous_dump_appends_valid_json(trace):
    profiler.set_state("run")
    sizes = []
    for i in range(3):
        mx.nd.relu(mx.nd.ones((2,)))
        profiler.dump(finished=False)
        sizes.append(trace.stat().st_size)
        assert [e["name"] for e in _events(trace)].count("relu") == i + 1
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    profiler.dump(finished=True)
    profiler.set_state("stop")


def test_dumps_table_and_sorting(trace):
    profiler.set_state("run")
    x = mx.nd.ones((50, 50))
    for _ in range(3):
        mx.nd.relu(x)
    mx.nd.dot(x, x)
    profiler.set_state("stop")
    table = profiler.dumps()
    assert "Profile Statistics:" in table and "operator\n=================" in table
    header = next(line for line in table.splitlines() if line.startswith("Name") and "Time" in line)
    assert header.split() == ["Name", "Total", "Count", "Time", "(ms)", "Min", "Time", "(ms)",
                              "Max", "Time", "(ms)", "Avg", "Time", "(ms)"]
    for key, field in [("count", "Count"), ("min", "Min"), ("max", "Max"), ("avg", "Avg"),
                       ("total", "Total")]:
        for ascending in (False, True):
            data = json.loads(profiler.dumps(format="json", sort_by=key, ascending=ascending))
            values = [v[field] for v in data["Time"]["operator"].values()]
            assert values == sorted(values, reverse=not ascending)
    with pytest.raises(mx.MXNetError, match="sort_by"):
        profiler.dumps(sort_by="median")
    profiler.dumps(reset=True)
    assert json.loads(profiler.dumps(format="json"))["Time"] == {}


def test_custom_operator_names(trace):
    class AddOne(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] + 1)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0])

    @mx.operator.register("ProfAddOne")
    class AddOneProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["data"]

        def list_outputs(self):
            return ["output"]

        def infer_shape(self, in_shape):
            return [in_shape[0]], [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return AddOne()

    x = mx.nd.ones((3,))
    x.attach_grad()
    profiler.set_state("run")
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="ProfAddOne")
    y.backward()
    profiler.set_state("stop")
    custom = json.loads(profiler.dumps(format="json"))["Time"]["Custom Operator"]
    assert {"ProfAddOne::pure_python", "_backward_ProfAddOne::pure_python",
            "ProfAddOne::_plus_scalar"} <= set(custom)


def test_scope_prefixes_operator_names(trace):
    profiler.set_state("run")
    with profiler.scope("outer"):
        with profiler.scope("inner:"):
            mx.nd.relu(mx.nd.ones((2,)))
    profiler.set_state("stop")
    assert "outer:inner:relu" in json.loads(profiler.dumps(format="json"))["Time"]["operator"]


def test_bad_config_is_refused():
    with pytest.raises(mx.MXNetError, match="unknown option"):
        profiler.set_config(profile_everything=True)
    with pytest.raises(mx.MXNetError, match="'run' or 'stop'"):
        profiler.set_state("go")
    assert recorder.running is False
