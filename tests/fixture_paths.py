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
