"""List MXNet 1.9.1 public names (../shared/spec/mxnet-api-names.txt) hybridnet lacks.

Run: python scripts/api_coverage.py [SPEC]
"""
from __future__ import annotations

import os
import sys

import hybridnet as mx

SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "spec", "mxnet-api-names.txt")


def main() -> None:
    spec = sys.argv[1] if len(sys.argv) > 1 else SPEC
    spaces = {"nd": mx.nd, "sym": mx.sym, "nd.random": mx.nd.random, "nd.linalg": mx.nd.linalg,
              "nd.contrib": mx.nd.contrib, "nd.image": mx.nd.image, "nd.sparse": mx.nd.sparse,
              "nd.op": mx.nd.op, "NDArray": mx.nd.NDArray, "Symbol": mx.sym.Symbol}
    missing: dict = {}
    total: dict = {}
    with open(spec) as f:
        for line in f:
            if line.startswith("#") or "\t" not in line:
                continue
            space, name = line.rstrip("\n").split("\t")[:2]
            if space not in spaces:
                continue
            total[space] = total.get(space, 0) + 1
            if not hasattr(spaces[space], name):
                missing.setdefault(space, []).append(name)
    for space in spaces:
        if space in total:
            m = missing.get(space, [])
            print(f"{space}: {total[space] - len(m)}/{total[space]} present; missing ({len(m)}): {' '.join(m)}")


if __name__ == "__main__":
    main()
