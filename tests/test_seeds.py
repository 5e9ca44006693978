"""The seed programs run verbatim (examples/seed_*.py) and behave as MXNet's docs describe."""
import os
import runpy
import sys

import numpy as np
import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def _run(name, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    import hybridnet.name as _name
    monkeypatch.setattr(_name._local, "value", _name.NameManager(), raising=False)
    ns = runpy.run_path(os.path.join(EXAMPLES, name), run_name="__main__")
    return ns, capsys.readouterr().out


def test_tutorial_seed(tmp_path, capsys, monkeypatch):
    ns, out = _run("seed_hybrid_tutorial.py", tmp_path, capsys, monkeypatch)
    # eager: two NDArray prints; hybridized: one Symbol per trace (hybridize() clears the cache,
    # so the static_alloc re-hybridization traces once more), never on cached calls
    assert out.count("<NDArray 16x1x28x28 @cpu(0)>") == 2
    assert out.count("<Symbol data>") == 2
    assert (tmp_path / "model-symbol.json").exists() and (tmp_path / "model-0001.params").exists()
    net, net2, x = ns["net"], ns["net2"], ns["x"]
    np.testing.assert_allclose(net2(x).asnumpy(), net(x).asnumpy(), rtol=1e-5, atol=1e-6)
    import hybridnet as mx
    names = list(mx.nd.load(str(tmp_path / "model-0001.params")).keys())
    assert names == ["arg:net0_conv0_weight", "arg:net0_conv0_bias", "arg:net0_conv1_weight",
                     "arg:net0_conv1_bias", "arg:net0_dense0_weight", "arg:net0_dense0_bias",
                     "arg:net0_dense1_weight", "arg:net0_dense1_bias", "arg:net0_fc3_weight"]


def test_notebook_seed(tmp_path, capsys, monkeypatch):
    ns, out = _run("seed_hybrid_notebook.py", tmp_path, capsys, monkeypatch)
    assert "10\n" in out
    assert "<Symbol dense5_fwd>" in out
    assert "x:  <Symbol data>" in out
    assert "hidden:  <Symbol hybridnet0_relu0>" in out
    # hybrid_forward's prints: once eagerly (NDArray) and once while tracing, then never again
    assert out.count("F:  ") == 2
    assert "before hybridizing" in out and "after hybridizing" in out
