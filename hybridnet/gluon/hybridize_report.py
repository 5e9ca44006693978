"""What ``HybridBlock.hybridize_report(x)`` finds: every construct in ``hybrid_forward`` that a
graph cannot capture, each with the user's line and the fix, found in one dry trace that goes
on past each problem (a real trace stops at the first), plus a second trace to catch graphs
that change from one trace to the next (Python-side randomness or state)."""
from __future__ import annotations

import linecache
from dataclasses import dataclass
from typing import Optional, Sequence

from ..ops.attrs import format_value

__all__ = ["Issue", "HybridizeReport", "first_trace_difference"]


@dataclass(frozen=True)
class Issue:
    """One construct that cannot be captured: what it is, where ('file:line'), the fix."""
    what: str
    where: str
    fix: str

    def __str__(self) -> str:
        code = ""
        path, _, line = self.where.rpartition(":")
        if path and line.isdigit():
            code = linecache.getline(path, int(line)).strip()
        code = f"\n    {code}" if code else ""
        return f"{self.where or '<unknown line>'}: {self.what}{code}\n    fix: {self.fix}"


class HybridizeReport:
    """The issues of one block, in the order the dry trace met them (each line once)."""

    def __init__(self, block_name: str, issues: Sequence[Issue]):
        self.block_name = block_name
        seen: set = set()
        self.issues: list = []
        for i in issues:
            if (i.what, i.where) not in seen:
                seen.add((i.what, i.where))
                self.issues.append(i)

    @property
    def ok(self) -> bool:
        """True when hybridize() will capture the block as written."""
        return not self.issues

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if self.ok:
            return f"{self.block_name}: hybridize() captures this block as written."
        head = (f"{self.block_name}: {len(self.issues)} construct(s) a hybridized graph cannot "
                f"capture:")
        return "\n".join([head] + [f"  {k + 1}. {i}" for k, i in enumerate(self.issues)])

    __repr__ = __str__


def _signature(node: object) -> tuple:
    op = getattr(node, "op")
    attrs = getattr(node, "attrs")
    return (op.name if op is not None else None,
            tuple(sorted((k, format_value(v)) for k, v in attrs.items() if not k.startswith("__"))))


def first_trace_difference(first: Sequence[tuple], second: Sequence[tuple]) -> Optional[Issue]:
    """An issue when two traces created different operator sequences ((node, site) lists)."""
    for (a, site), (b, _) in zip(first, second):
        if _signature(a) != _signature(b):
            return Issue(f"the graph changes from one trace to the next (here {a.op.name} became "
                         f"{b.op.name if b.op is not None else 'a variable'} or changed attributes): "
                         f"Python-side randomness or state decides what is traced",
                         site, "draw random numbers inside the graph (F.random.*, Dropout) and keep "
                         "Python state the block reads fixed after hybridize()")
    if len(first) != len(second):
        k = min(len(first), len(second))
        site = (first if len(first) > k else second)[k][1]
        return Issue("the graph changes from one trace to the next (a different number of "
                     "operators): Python-side randomness or state decides what is traced", site,
                     "draw random numbers inside the graph (F.random.*, Dropout) and keep Python "
                     "state the block reads fixed after hybridize()")
    return None
