"""Which of MXNet 1.9.1's 598 NumPy-interface names hybridnet has (run: python api_names.py).

The list is ../shared/spec/mxnet-np-api-names.txt (dir() of real MXNet's mx.np, np.random,
np.linalg, npx, npx.random, npx.image and np.ndarray). A name counts as present when the
namespace has it; for np.ndarray, when the class has it.
"""
from __future__ import annotations

import collections
import os
import sys

SPEC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "spec", "mxnet-np-api-names.txt")


def namespaces() -> dict:
    import hybridnet as mx
    return {"np": mx.np, "np.random": mx.np.random, "np.linalg": mx.np.linalg, "npx": mx.npx,
            "npx.random": mx.npx.random, "npx.image": mx.npx.image, "np.ndarray": mx.np.ndarray}


def coverage(path: str = SPEC) -> dict:
    """{namespace: (present names, missing names)}."""
    spaces = namespaces()
    res: dict = collections.OrderedDict()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            space, name = line.rstrip("\n").split("\t")[:2]
            have, miss = res.setdefault(space, ([], []))
            (have if hasattr(spaces[space], name) else miss).append(name)
    return res


def main() -> None:
    total = have_all = 0
    for space, (have, miss) in coverage().items():
        total += len(have) + len(miss)
        have_all += len(have)
        print(f"{space:11s} {len(have):4d} / {len(have) + len(miss):4d}   missing: {' '.join(miss)}")
    print(f"{'all':11s} {have_all:4d} / {total:4d}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    main()
