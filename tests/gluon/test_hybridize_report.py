"""hybridize_report(x): one dry run lists every construct a graph cannot capture, with the
user's line and the fix, and changes nothing."""
import random

import numpy as np

import hybridnet as mx
from hybridnet import gluon
from hybridnet.gluon import nn

HERE = __file__.rsplit("/", 1)[-1]


class _Messy(gluon.HybridBlock):
    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.dense = nn.Dense(4)

    def hybrid_forward(self, F, x):
        y = self.dense(x)
        n = y.shape[1]                       # line A: .shape
        if y.sum() > 0:                      # line B: if on a value
            y = y * 2
        y += 1                               # line C: in-place
        scale = float(y.mean().asscalar())   # line D: asscalar
        return F.reshape(y, shape=(-1, n)) * scale


def _line(text):
    src = open(__file__).read().splitlines()
    return next(i + 1 for i, s in enumerate(src) if text in s)


def test_every_problem_is_listed_with_its_line_and_the_dry_run_changes_nothing():
    net = _Messy()
    net.initialize()
    x = mx.nd.ones((2, 3))
    report = net.hybridize_report(x)
    assert not report.ok
    sites = {i.where.rsplit(":", 1)[1]: i for i in report.issues if HERE in i.where}
    for text, what in [("# line A", ".shape"), ("# line B", "`if`"), ("# line C", "in-place operator"),
                       ("# line D", "asscalar")]:
        issue = sites.get(str(_line(text)))
        assert issue is not None, (text, report)
        assert what in issue.what and issue.fix
    assert "4 construct(s)" in str(report)
    # nothing was initialized, traced for real or hybridized
    assert net._cached_op is None and not net._options.active
    np.testing.assert_equal(net(x).shape, (2, 4))   # the eager block still works


def test_a_clean_block_reports_ok():
    net = nn.HybridSequential()
    net.add(nn.Dense(3, activation="relu"), nn.Dense(2))
    report = net.hybridize_report(mx.nd.ones((2, 5)))
    assert report.ok and "captures this block as written" in str(report)


class _Coin(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.relu(x) if random.random() < 0.5 else F.sigmoid(x)


def test_a_graph_that_changes_between_traces_is_reported():
    random.seed(3)
    hits = sum(not _Coin().hybridize_report(mx.nd.ones((1, 2))).ok for _ in range(20))
    assert hits > 0
    random.seed(3)
    issues = [i for _ in range(20) for i in _Coin().hybridize_report(mx.nd.ones((1, 2))).issues]
    assert all("changes from one trace to the next" in i.what for i in issues)


class _Broken(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.no_such_operator(x)


def test_a_trace_that_stops_is_reported_not_raised():
    report = _Broken().hybridize_report(mx.nd.ones((1, 2)))
    assert len(report.issues) == 1 and "tracing stopped" in report.issues[0].what
