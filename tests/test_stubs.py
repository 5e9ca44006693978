"""The committed .pyi stubs of the generated front-ends match the operator registry."""
import pytest

import hybridnet  # noqa: F401
from hybridnet.ops import stubs


@pytest.mark.parametrize("front", ["ndarray", "symbol"])
def test_committed_stubs_match_registry(front):
    with open(stubs.stub_path(front), encoding="utf-8") as f:
        committed = f.read()
    assert committed == stubs.render(front), (
        f"hybridnet/{front}/__init__.pyi is stale: run `python -m hybridnet.ops.stubs` and commit it")


def test_stubs_list_every_top_level_operator():
    text = stubs.render("ndarray")
    for name in ("FullyConnected", "Convolution", "BatchNorm", "relu", "reshape", "concat", "dot"):
        assert f"def {name}(" in text
