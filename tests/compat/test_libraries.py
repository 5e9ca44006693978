"""GluonCV 0.10.5 / GluonNLP 0.10.0, unchanged, on hybridnet through ``python -m hybridnet``.

Their zoo models build with ``pretrained=False``, and eager, hybridized and exported-then-
reimported runs agree (examples/gluon_zoo_drop_in.py does the work). Skips cleanly when the
libraries are not installed (CI stays light; README "Running unchanged MXNet code" has the
install commands).
"""
import importlib.util
import json
import os

import pytest

from .conftest import REPO

EXAMPLE = os.path.join(REPO, "examples", "gluon_zoo_drop_in.py")


def _needs(library):
    return pytest.mark.skipif(importlib.util.find_spec(library) is None,
                              reason=f"{library} is not installed")


@pytest.mark.parametrize("library", [
    pytest.param("gluoncv", marks=_needs("gluoncv")),
    pytest.param("gluonnlp", marks=_needs("gluonnlp"))])
def test_library_imports_through_the_alias(run_python, library):
    proc = run_python(["-m", "hybridnet", "-c", f"""if True:
        import sys, {library}, mxnet, hybridnet
        assert sys.modules["mxnet.gluon"] is hybridnet.gluon
        print({library}.__name__, mxnet.__version__, getattr({library}, "_found_mxnet", True))
    """])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [library, "1.9.1", "True"]


@pytest.mark.parametrize("models", [
    pytest.param(["resnet18_v1b", "yolo3_mobilenet1.0_coco", "ssd_512_mobilenet1.0_voc"],
                 marks=_needs("gluoncv"), id="gluoncv"),
    pytest.param(["bert_small", "transformer_encoder_small"], marks=_needs("gluonnlp"),
                 id="gluonnlp")])
def test_zoo_models_eager_hybridized_exported(run_python, tmp_path, models):
    out_dir = tmp_path / "export"
    proc = run_python(["-m", "hybridnet", EXAMPLE, *models, "--out", str(out_dir)], timeout=900)
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [r["model"] for r in results] == models
    for result in results:
        assert result["eager_vs_hybridized"] <= 1e-5, result
        assert result["eager_vs_exported"] <= 1e-5, result
        name = result["model"]
        assert result["files"] == [f"{name}-0000.params", f"{name}-symbol.json"]
        assert result["outputs"] and all(result["outputs"])
