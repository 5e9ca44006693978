"""Where the shared real-MXNet fixtures are: $HYBRIDNET_FIXTURES, else ../shared/fixtures beside
the repository (CI's layout), else /work/shared/fixtures (the development machines)."""
import os

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _find() -> str:
    for cand in (os.environ.get("HYBRIDNET_FIXTURES_ROOT"),
                 os.path.join(_REPO, "..", "shared", "fixtures"),
                 "/work/shared/fixtures"):
        if cand and os.path.isdir(cand):
            return os.path.abspath(cand)
    return os.path.join(_REPO, "..", "shared", "fixtures")


ROOT = _find()
MXNET = os.environ.get("HYBRIDNET_FIXTURES") or os.path.join(ROOT, "mxnet")
ZOO = os.path.join(ROOT, "mxnet-zoo")


def load_case(name: str) -> tuple:
    """(case folder, case.json as a dict, input arrays, output arrays) of one MXNet fixture."""
    import json

    import numpy as np
    d = os.path.join(MXNET, name)
    with open(os.path.join(d, "case.json")) as f:
        case = json.load(f)
    inputs = [np.load(os.path.join(d, i["file"])) for i in case["inputs"]]
    outputs = [np.load(os.path.join(d, o["file"])) for o in case["outputs"]]
    return d, case, inputs, outputs
