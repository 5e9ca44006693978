"""Profiler cost: what the idle profiler adds to every imperative operator, and what recording costs.

Question: ``mx.profiler`` hooks the eager dispatch (``ndarray.invoke``) with one flag read;
does ``nd.relu`` on a small array get slower while the profiler is off?  And what does a call
cost while it records (span + memory tracking + aggregate statistics)?

Method: (1) the idle hook in isolation: a function reading ``op.kernel`` vs one doing the same
read behind the hook's ``if not recorder.running`` test, interleaved medians; (2) ``nd.relu`` on
a 4x4 array with the profiler stopped, recording without and with aggregate statistics,
interleaved medians.  Run it alone on an idle machine: ``python benchmarks/profiler_overhead.py``.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hybridnet as mx  # noqa: E402
from hybridnet import profiler  # noqa: E402
from hybridnet.ops.registry import get  # noqa: E402
from hybridnet.profiler import recorder  # noqa: E402

from _timing import interleaved, table  # noqa: E402

OP = get("relu")


def plain_read():
    return OP.kernel


def hooked_read():
    return OP.kernel if not recorder.running else recorder.timed_kernel(OP)


def main() -> None:
    hook = interleaved({"plain": plain_read, "hooked": hooked_read}, number=200_000, repeats=9)
    print(table("idle hook (ns per call)",
                [[k, f"{v * 1e9:.1f}"] for k, v in hook.items()]
                + [["added", f"{(hook['hooked'] - hook['plain']) * 1e9:.1f}"]], ["case", "ns"]))
    x = mx.nd.ones((4, 4))
    trace = os.path.join(tempfile.mkdtemp(), "bench_trace.json")

    def stopped():
        mx.nd.relu(x)

    def recording():
        profiler.set_config(profile_imperative=True, filename=trace)
        profiler.set_state("run")
        mx.nd.relu(x)
        profiler.set_state("stop")

    def recording_stats():
        profiler.set_config(profile_imperative=True, profile_memory=True, aggregate_stats=True,
                            filename=trace)
        profiler.set_state("run")
        mx.nd.relu(x)
        profiler.set_state("stop")

    res = interleaved({"profiler stopped": stopped, "recording": recording,
                       "recording + memory + aggregate": recording_stats}, number=5_000, repeats=7)
    recorder.take_events(clear=True)
    print(table("nd.relu((4, 4)) (us per call)", [[k, f"{v * 1e6:.2f}"] for k, v in res.items()],
                ["case", "us"]))


if __name__ == "__main__":
    main()
