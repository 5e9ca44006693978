"""The seed tutorial, as MXNet's docs print it (``import mxnet as mx``), runs unchanged through
``python -m hybridnet``. examples/seed_hybrid_tutorial.py is that program with only its imports
spelled ``hybridnet``; spelling them back gives the original text."""
import os
import re

from .conftest import REPO


def _original_seed(name):
    text = open(os.path.join(REPO, "examples", name), encoding="utf-8").read()
    text = re.sub(r"^import hybridnet as mx$", "import mxnet as mx", text, flags=re.M)
    text = re.sub(r"^from hybridnet(\.| )", r"from mxnet\1", text, flags=re.M)
    code = text.split('"""', 2)[2]  # the program after the module docstring
    assert "hybridnet" not in code
    return text


def test_seed_tutorial_runs_unchanged(run_python, tmp_path):
    (tmp_path / "seed_hybrid_tutorial.py").write_text(_original_seed("seed_hybrid_tutorial.py"))
    proc = run_python(["-m", "hybridnet", "seed_hybrid_tutorial.py"], timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # eager: two NDArray prints; hybridized: one Symbol print per trace (as tests/test_seeds.py)
    assert out.count("<NDArray 16x1x28x28 @cpu(0)>") == 2
    assert out.count("<Symbol data>") == 2
    assert (tmp_path / "model-symbol.json").exists() and (tmp_path / "model-0001.params").exists()
    import hybridnet as mx
    names = list(mx.nd.load(str(tmp_path / "model-0001.params")).keys())
    assert names[0] == "arg:net0_conv0_weight" and names[-1] == "arg:net0_fc3_weight"
