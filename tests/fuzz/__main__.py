"""``python -m tests.fuzz [--long] [--n N] [--seed S] [--loader NAME ...] [--only I -v] [--json F]``

Runs in this process (set up ``OMP_NUM_THREADS=1``; the address-space cap applies to it).
Exit status 1 when any input gave an unclear error, a hang or a memory blow-up.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

LONG_N = 20_000  # per loader, every loader: 11 loaders -> 220,000 inputs


def main(argv: list = None) -> int:
    import torch
    torch.set_num_threads(1)
    from .runner import failures, run
    from .targets import TARGETS, inputs_for
    p = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    p.add_argument("--n", type=int, default=300,
                   help="inputs per loader (default 300; the slow loaders get a share, see targets.SHARE)")
    p.add_argument("--long", action="store_true", help=f"{LONG_N} inputs per loader")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--loader", action="append", choices=sorted(TARGETS), help="repeatable; default all")
    p.add_argument("--only", type=int, default=None, help="run just this input index")
    p.add_argument("--time-limit", type=float, default=5.0, help="seconds per input")
    p.add_argument("--memory", type=int, default=1 << 30, help="address-space headroom in bytes")
    p.add_argument("--json", default=None, help="write the report here")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    loaders = args.loader or list(TARGETS)
    n = {name: inputs_for(name, LONG_N if args.long else args.n, full=args.long) for name in loaders}
    t0 = time.perf_counter()

    def save(report: dict) -> None:
        report["total_seconds"] = round(time.perf_counter() - t0, 1)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)

    def progress(name: str, report: dict) -> None:
        st = report["loaders"][name]
        print(f"{name:22s} inputs {st['inputs']:6d}  accepted {st['accepted']:6d}  clear {st['clear']:6d}  "
              f"unclear {st['unclear']:4d}  hangs {st['hangs']:3d}  memory {st['memory']:3d}  "
              f"{st['seconds']:8.1f} s", flush=True)
        save(report)

    report = run(loaders, n, args.seed, args.time_limit, args.memory,
                 args.verbose, args.only, progress=progress)
    save(report)
    total = sum(st["inputs"] for st in report["loaders"].values())
    print(f"total inputs {total}, {report['total_seconds']} s, max RSS growth "
          f"{report['max_rss_growth_bytes'] / 2**20:.0f} MiB")
    bad = failures(report)
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
