"""gluon.contrib.estimator: training converges, handlers stop/save/resume at the right points,
the progress bar and the curve plot work with and without their optional packages."""
import io
import os
import sys
import types

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import gluon, nd
from hybridnet.gluon.contrib.estimator import (CheckpointHandler, EarlyStoppingHandler, EpochEnd,
                                               Estimator, ProgressBarHandler, TrainingCurveHandler)

W_TRUE = np.array([[2.0, -3.0, 0.5]], dtype=np.float32)
B_TRUE = 1.5


def _regression_data(n=64, batch_size=16):
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, size=(n, 3)).astype(np.float32)
    y = x @ W_TRUE.T + B_TRUE
    return gluon.data.DataLoader(gluon.data.ArrayDataset(nd.array(x), nd.array(y)),
                                 batch_size=batch_size, shuffle=False)


def _estimator(lr=0.1, seed=0, metrics=None, hybridize=False):
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(1, in_units=3))
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": lr})
    est = Estimator(net, gluon.loss.L2Loss(), train_metrics=metrics or mx.metric.MSE(),
                    trainer=trainer, context=mx.cpu())
    est.logger.handlers = []  # keep test output quiet
    return est


def _params(est):
    return {k[k.index("_"):]: v.data().asnumpy().copy() for k, v in est.net.collect_params().items()}


@pytest.mark.parametrize("hybridize", [False, True])
def test_tiny_regression_converges(hybridize):
    data = _regression_data()
    est = _estimator(hybridize=hybridize)
    curve = TrainingCurveHandler()
    est.fit(data, val_data=data, epochs=60, event_handlers=[curve])
    mse = curve.history["training mse"]
    assert len(mse) == 60 and len(curve.history["validation mse"]) == 60
    assert mse[-1] < 1e-3 < mse[0]
    np.testing.assert_allclose(curve.history["validation mse"][-1], est.val_metrics[0].get()[1])
    dense = est.net[0]
    np.testing.assert_allclose(dense.weight.data().asnumpy(), W_TRUE, atol=0.05)
    np.testing.assert_allclose(dense.bias.data().asnumpy(), [B_TRUE], atol=0.05)


def test_fit_by_batches_counts_batches():
    est = _estimator()
    seen = []

    class Count(EpochEnd):
        def epoch_end(self, estimator, *args, **kwargs):
            seen.append(1)
            return False
    est.fit(_regression_data(), batches=10, event_handlers=[Count()])  # 4 batches per epoch
    assert est.trainer.optimizer.num_update == 10 and len(seen) == 3


class ScriptedMetric(mx.metric.EvalMetric):
    """A metric whose value at epoch k is values[k] (MetricHandler resets it at each epoch)."""

    def __init__(self, values):
        self.values, self.epoch = values, -2  # EvalMetric.__init__ resets once
        super().__init__("scripted")

    def reset(self):
        self.epoch += 1

    def update(self, labels, preds):
        pass

    def get(self):
        return self.name, self.values[self.epoch] if 0 <= self.epoch < len(self.values) else float("nan")


@pytest.mark.parametrize("values,patience,mode,epochs_run,stopped", [
    ([0.5, 0.6, 0.55, 0.58, 0.7, 0.8], 2, "max", 4, 3),     # best at 1, two epochs without gain
    ([0.5, 0.6, 0.55, 0.7, 0.6, 0.5, 0.4], 2, "max", 6, 5),  # improvement at 3 restarts patience
    ([1.0, 0.9, 0.95, 0.8], 0, "min", 3, 2),                # patience 0: first non-improvement
    ([0.9, 0.91, 0.92, 0.93], 1, "max", 4, 0),              # always improving: runs all epochs
])
def test_early_stopping_stops_at_the_right_epoch(values, patience, mode, epochs_run, stopped):
    metric = ScriptedMetric(values)
    est = _estimator(metrics=metric)
    epochs = []

    class Count(EpochEnd):
        def epoch_end(self, estimator, *args, **kwargs):
            epochs.append(1)
            return False
    early = EarlyStoppingHandler(monitor=metric, patience=patience, mode=mode)
    est.fit(_regression_data(), epochs=4 if stopped == 0 else 10, event_handlers=[early, Count()])
    assert len(epochs) == epochs_run
    assert early.stopped_epoch == stopped


def test_early_stopping_min_delta_and_baseline():
    metric = ScriptedMetric([0.50, 0.505, 0.509, 0.52])
    est = _estimator(metrics=metric)
    early = EarlyStoppingHandler(monitor=metric, patience=1, mode="max", min_delta=0.01)
    est.fit(_regression_data(), epochs=4, event_handlers=[early])
    assert early.stopped_epoch == 1           # +0.005 is below min_delta
    metric = ScriptedMetric([0.5, 0.6, 0.7])
    est = _estimator(metrics=metric)
    early = EarlyStoppingHandler(monitor=metric, patience=0, mode="max", baseline=0.65)
    est.fit(_regression_data(), epochs=3, event_handlers=[early])
    assert early.stopped_epoch == 0           # the first epoch does not beat the baseline


def test_checkpoints_resume_to_identical_parameters(tmp_path):
    data = _regression_data()
    full = _estimator(lr=0.05)
    full.fit(data, epochs=4)

    first = _estimator(lr=0.05)
    ckpt = CheckpointHandler(str(tmp_path), model_prefix="reg", max_checkpoints=1)
    first.fit(data, epochs=2, event_handlers=[ckpt])
    assert sorted(os.listdir(tmp_path)) == ["reg-epoch1batch8.params", "reg-epoch1batch8.states"]

    resumed = _estimator(lr=0.05, seed=123)  # different initial weights: the checkpoint wins
    ckpt = CheckpointHandler(str(tmp_path), model_prefix="reg", max_checkpoints=2,
                             resume_from_checkpoint=True)
    resumed.fit(data, epochs=4, event_handlers=[ckpt])
    assert resumed.max_epoch == 2
    for name, value in _params(full).items():
        np.testing.assert_array_equal(_params(resumed)[name], value)
    files = sorted(os.listdir(tmp_path))
    assert files == ["reg-epoch2batch12.params", "reg-epoch2batch12.states",
                     "reg-epoch3batch16.params", "reg-epoch3batch16.states"]
    with pytest.raises(ValueError, match="maximum number of epoch 4 reached"):
        _estimator().fit(data, epochs=4, event_handlers=[
            CheckpointHandler(str(tmp_path), model_prefix="reg", resume_from_checkpoint=True)])


def test_checkpoint_save_best_and_symbol(tmp_path):
    metric = ScriptedMetric([3.0, 1.0, 2.0])
    est = _estimator(metrics=metric, hybridize=True)
    ckpt = CheckpointHandler(str(tmp_path), model_prefix="m", monitor=metric, save_best=True,
                             mode="min")
    saved = []
    orig = ckpt._save_params_and_trainer
    ckpt._save_params_and_trainer = lambda e, p: (saved.append(p), orig(e, p))
    est.fit(_regression_data(), epochs=3, event_handlers=[ckpt])
    assert saved == ["m-epoch0batch4", "m-best", "m-epoch1batch8", "m-best", "m-epoch2batch12"]
    assert ckpt.best == 1.0
    assert os.path.isfile(tmp_path / "m-symbol.json")
    assert not [f for f in os.listdir(tmp_path) if "tmp" in f]  # atomic writes leave nothing


def test_plain_progress_line_without_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if tqdm were not installed
    out = io.StringIO()
    est = _estimator()
    bar = ProgressBarHandler(metrics=est.train_metrics, file=out)
    est.fit(_regression_data(), epochs=2, event_handlers=[bar])
    text = out.getvalue()
    assert "\r[Epoch 0] batch 4/4 training mse:" in text and "\r[Epoch 1] batch 4/4" in text
    assert text.count("\n") == 2
    with pytest.raises(ImportError, match="pip install tqdm"):
        ProgressBarHandler(use_tqdm=True)


def test_tqdm_progress_bar_when_installed(monkeypatch):
    calls = []

    class FakeTqdm:
        def __init__(self, total=None, desc=None, file=None, leave=True):
            calls.append(("open", total, desc))

        def set_postfix_str(self, s, refresh=True):
            calls.append(("postfix", s.split(":")[0]))

        def update(self, n):
            calls.append(("update", n))

        def close(self):
            calls.append(("close",))
    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=FakeTqdm))
    est = _estimator()
    est.fit(_regression_data(), epochs=1,
            event_handlers=[ProgressBarHandler(metrics=est.train_metrics)])
    assert calls[0] == ("open", 4, "epoch 0") and calls[-1] == ("close",)
    assert calls.count(("update", 1)) == 4 and ("postfix", "training mse") in calls


def test_training_curve_plot(tmp_path, monkeypatch):
    path = str(tmp_path / "curves.png")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        TrainingCurveHandler(path)
    TrainingCurveHandler()  # recording alone needs nothing
    monkeypatch.undo()
    pytest.importorskip("matplotlib")
    est = _estimator()
    est.fit(_regression_data(), val_data=_regression_data(), epochs=3,
            event_handlers=[TrainingCurveHandler(path)])
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_bad_arguments_are_clear_errors():
    est = _estimator()
    data = _regression_data()
    with pytest.raises(ValueError, match="one and only one of: epochs or batches"):
        est.fit(data, epochs=1, batches=2)
    with pytest.raises(ValueError, match="DataLoader"):
        est.fit([nd.ones((2, 3))], epochs=1)
    with pytest.raises(ValueError, match="loss must be a Loss"):
        Estimator(est.net, "l2")
    with pytest.raises(ValueError, match="metrics must be a Metric"):
        Estimator(est.net, gluon.loss.L2Loss(), train_metrics="mse")
    with pytest.raises(ValueError, match="outside of the known"):
        est.fit(data, epochs=1, event_handlers=[EarlyStoppingHandler(monitor=mx.metric.MSE(), mode="min")])
