"""Models exported by real MXNet 1.9.1 (../shared/fixtures/mxnet): load, run, round-trip, and
rebuild each model here from its recorded source to compare exports byte for byte."""
import os

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import gluon, nd

from fixture_paths import MXNET as FIXTURES  # noqa: E402
from fixture_paths import load_case as _case  # noqa: E402
CASES = sorted(os.listdir(FIXTURES)) if os.path.isdir(FIXTURES) else []
pytestmark = pytest.mark.skipif(not CASES, reason="shared/fixtures/mxnet not found")


def _tol(case):
    t = case.get("suggested_tolerance", {})
    return dict(rtol=t.get("rtol", 1e-4), atol=t.get("atol", 1e-5))


@pytest.mark.parametrize("name", CASES)
def test_symbolblock_imports_reproduces_output(name):
    d, case, inputs, outputs = _case(name)
    net = gluon.SymbolBlock.imports(os.path.join(d, "model-symbol.json"), case["input_names"],
                                    os.path.join(d, "model-0000.params"))
    out = net(*[nd.array(x) for x in inputs])
    outs = out if isinstance(out, (list, tuple)) else [out]
    for o, ref in zip(outs, outputs):
        np.testing.assert_allclose(o.asnumpy(), ref, **_tol(case))
    net.hybridize()
    out2 = net(*[nd.array(x) for x in inputs])
    outs2 = out2 if isinstance(out2, (list, tuple)) else [out2]
    for o, ref in zip(outs2, outputs):
        np.testing.assert_allclose(o.asnumpy(), ref, **_tol(case))


@pytest.mark.parametrize("name", CASES)
def test_symbol_bind_reproduces_output_and_json_round_trips(name):
    d, case, inputs, outputs = _case(name)
    text = open(os.path.join(d, "model-symbol.json"), encoding="utf-8").read()
    s = mx.sym.load(os.path.join(d, "model-symbol.json"))
    assert s.tojson() == text  # MXNet's bytes, attribute spellings included
    assert mx.sym.load_json(s.tojson()).tojson() == text
    params = nd.load(os.path.join(d, "model-0000.params"))
    args = {k[4:]: v for k, v in params.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in params.items() if k.startswith("aux:")}
    args.update({n: nd.array(x) for n, x in zip(case["input_names"], inputs)})
    exe = s.bind(mx.cpu(), args=args, aux_states=aux)
    outs = exe.forward(is_train=False)
    for o, ref in zip(outs, outputs):
        np.testing.assert_allclose(o.asnumpy(), ref, **_tol(case))


def _build(case, monkeypatch):
    """Run the case's recorded MXNet model source with hybridnet in a fresh name scope."""
    import hybridnet.name as _name
    monkeypatch.setattr(_name._local, "value", _name.NameManager(), raising=False)
    src = (case["model_source_preamble"] + case["model_source"]).replace("mxnet", "hybridnet")
    ns: dict = {}
    exec(compile(src, f"<fixture {case['case']}>", "exec"), ns)  # test-only: the fixture's own code
    return ns["build"]()


@pytest.mark.parametrize("name", CASES)
def test_rebuilt_model_has_mxnet_names_and_export_bytes(name, tmp_path, monkeypatch):
    d, case, inputs, outputs = _case(name)
    net, xs = _build(case, monkeypatch)
    assert list(net.collect_params().keys()) == case["collect_params_keys"]
    net(*[nd.array(x) for x in xs])
    net.export(str(tmp_path / "model"), epoch=0)
    ours = open(tmp_path / "model-symbol.json", encoding="utf-8").read()
    theirs = open(os.path.join(d, "model-symbol.json"), encoding="utf-8").read()
    assert ours == theirs
    assert list(nd.load(str(tmp_path / "model-0000.params")).keys()) == case["params_file_names"]


@pytest.mark.parametrize("name", [c for c in CASES if os.path.exists(os.path.join(FIXTURES, c, "params_saved.params"))])
def test_params_saved_loads_into_rebuilt_model(name, monkeypatch):
    d, case, inputs, outputs = _case(name)
    net, _ = _build(case, monkeypatch)
    assert list(nd.load(os.path.join(d, "params_saved.params")).keys()) == case["params_saved_names"]
    net.load_parameters(os.path.join(d, "params_saved.params"))
    out = net(*[nd.array(x) for x in inputs])
    np.testing.assert_allclose(out.asnumpy(), outputs[0], **_tol(case))
