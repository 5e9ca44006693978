"""mx.metric against hand-computed values (MXNet 1.9.1 semantics)."""
import json
import math

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import metric as M


def nd(x, dtype="float32"):
    return mx.nd.array(x, dtype=dtype)


PRED3 = [[0.1, 0.7, 0.2], [0.6, 0.3, 0.1], [0.2, 0.3, 0.5], [0.3, 0.4, 0.3]]
LABEL3 = [1, 2, 2, 0]


def test_accuracy_argmax_axis_and_exact_labels():
    m = M.Accuracy()
    m.update([nd(LABEL3)], [nd(PRED3)])
    assert m.get() == ("accuracy", 0.5)  # argmax: 1, 0, 2, 1 -> 2 of 4 correct
    m.update(nd([0, 1]), nd([0, 0]))  # same shapes: predictions are class ids; single arrays wrap
    assert m.num_inst == 6 and m.sum_metric == 3
    m2 = M.Accuracy(axis=0)
    m2.update([nd([1, 0])], [nd([[0.2, 0.9], [0.8, 0.1]])])  # argmax over axis 0 -> [1, 0]
    assert m2.get()[1] == 1.0
    assert math.isnan(M.Accuracy().get()[1])


def test_check_label_shapes_error_names_both():
    with pytest.raises(ValueError, match="labels 2 does not match shape of predictions 1"):
        M.Accuracy().update([nd([1]), nd([0])], [nd([[0.0, 1.0]])])
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(3, 2\)"):
        M.check_label_shapes(nd(np.zeros((2, 3))), nd(np.zeros((3, 2))), shape=True)
    lab, pred = M.check_label_shapes(nd([1, 2]), nd([3, 4]), wrap=True)
    assert isinstance(lab, list) and isinstance(pred, list)


def test_topk():
    m = M.TopKAccuracy(top_k=2)
    assert m.name == "top_k_accuracy_2"
    pred = [[0.1, 0.7, 0.2], [0.6, 0.3, 0.1], [0.2, 0.3, 0.5], [0.35, 0.45, 0.2]]
    m.update([nd(LABEL3)], [nd(pred)])
    # top-2 sets: {1,2}, {0,1}, {2,1}, {1,0} -> labels 1, 2, 2, 0: rows 0, 2, 3 correct
    assert m.get()[1] == 0.75
    m = M.TopKAccuracy(top_k=3)
    m.update([nd(LABEL3)], [nd(PRED3)])
    assert m.get()[1] == 1.0
    with pytest.raises(ValueError, match="top_k"):
        M.TopKAccuracy(top_k=1)


def test_f1_macro_micro_and_mcc():
    pred = nd([[0.3, 0.7], [0.6, 0.4], [0.2, 0.8], [0.9, 0.1], [0.4, 0.6]])  # -> 1 0 1 0 1
    label = nd([1, 1, 0, 0, 1])
    # tp = 2 (rows 0, 4), fp = 1 (row 2), fn = 1 (row 1), tn = 1 (row 3)
    f1 = M.F1()
    f1.update([label], [pred])
    p, r = 2 / 3, 2 / 3
    assert f1.get()[1] == pytest.approx(2 * p * r / (p + r))
    mcc = M.MCC()
    mcc.update([label], [pred])
    expect = (2 * 1 - 1 * 1) / math.sqrt(3 * 3 * 2 * 2)
    assert mcc.get()[1] == pytest.approx(expect)
    # micro pools the counts of two batches; macro averages the per-batch scores
    b2_pred, b2_label = nd([[0.1, 0.9], [0.2, 0.8]]), nd([1, 0])  # tp 1, fp 1
    micro, macro = M.F1(average="micro"), M.F1(average="macro")
    for m in (micro, macro):
        m.update([label], [pred])
        m.update([b2_label], [b2_pred])
    tp, fp, fn = 3, 2, 1
    pm, rm = tp / (tp + fp), tp / (tp + fn)
    assert micro.get()[1] == pytest.approx(2 * pm * rm / (pm + rm))
    assert macro.get()[1] == pytest.approx((2 / 3 + 2 * 0.5 * 1.0 / 1.5) / 2)
    with pytest.raises(ValueError, match="binary"):
        M.F1().update([nd([0, 1, 2])], [nd(PRED3[:3])])
    # reset_local keeps the global statistics
    macro.reset_local()
    assert math.isnan(macro.get()[1]) and macro.get_global()[1] == pytest.approx((2 / 3 + 2 / 3) / 2)


def test_pcc_multiclass_equals_binary_mcc():
    pred = nd([[0.3, 0.7], [0.6, 0.4], [0.2, 0.8], [0.9, 0.1], [0.4, 0.6]])
    label = nd([1, 1, 0, 0, 1])
    pcc = M.PCC()
    pcc.update([label], [pred])
    assert pcc.get()[1] == pytest.approx(1 / 6)
    pcc.update([nd([2, 0])], [nd([2, 1])])  # grows the confusion matrix to 3 classes
    assert pcc.lcm.shape == (3, 3) and pcc.lcm.sum() == 7


def test_perplexity_with_ignore_label():
    pred = nd([[0.5, 0.5], [0.25, 0.75], [0.9, 0.1]])
    label = nd([0, 1, 1])
    m = M.Perplexity(ignore_label=None)
    m.update([label], [pred])
    assert m.get()[1] == pytest.approx(math.exp(-(math.log(0.5) + math.log(0.75) + math.log(0.1)) / 3), rel=1e-6)
    m = M.Perplexity(ignore_label=1)
    m.update([label], [pred])
    assert m.get()[1] == pytest.approx(2.0, rel=1e-6)  # only the first row counts: exp(-log .5)
    with pytest.raises(ValueError, match="shape mismatch"):
        M.Perplexity(None).update([nd([0, 1])], [pred])


def test_regression_metrics_average_per_batch():
    lab1, pred1 = nd([1.0, 2.0, 3.0]), nd([1.5, 2.0, 2.0])
    lab2, pred2 = nd([[0.0], [4.0]]), nd([[1.0], [1.0]])
    mae, mse, rmse = M.MAE(), M.MSE(), M.RMSE()
    for m in (mae, mse, rmse):
        m.update([lab1], [pred1])
        m.update([lab2], [pred2])
    assert mae.get() == ("mae", pytest.approx(((0.5 + 0 + 1) / 3 + (1 + 3) / 2) / 2))
    assert mse.get()[1] == pytest.approx(((0.25 + 1) / 3 + (1 + 9) / 2) / 2)
    assert rmse.get()[1] == pytest.approx((math.sqrt(1.25 / 3) + math.sqrt(5)) / 2)
    assert mse.num_inst == 2


def test_cross_entropy_and_nll():
    pred = nd([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]])
    label = nd([1, 0, 0])
    expect = -(math.log(0.8 + 1e-12) + math.log(0.6 + 1e-12) + math.log(0.5 + 1e-12)) / 3
    for name in ("ce", "CrossEntropy", "nll_loss", "negativeloglikelihood"):
        m = M.create(name)
        m.update([label], [pred])
        assert m.get()[1] == pytest.approx(expect, rel=1e-6)
    assert M.create("ce").name == "cross-entropy" and M.create("nll_loss").name == "nll-loss"


def test_pearson_macro_and_micro():
    a_l, a_p = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 2.5, 2.5, 5.0])
    b_l, b_p = np.array([0.0, 1.0, -1.0]), np.array([0.5, 0.7, -2.0])
    macro = M.PearsonCorrelation()
    micro = M.create("pearsonr", average="micro")
    for m in (macro, micro):
        m.update([nd(a_l)], [nd(a_p)])
        m.update([nd(b_l)], [nd(b_p)])
    r1 = np.corrcoef(a_p, a_l)[0, 1]
    r2 = np.corrcoef(b_p, b_l)[0, 1]
    assert macro.get()[1] == pytest.approx((r1 + r2) / 2, rel=1e-6)
    allp, alll = np.concatenate([a_p, b_p]), np.concatenate([a_l, b_l])
    assert micro.get()[1] == pytest.approx(np.corrcoef(allp, alll)[0, 1], rel=1e-6)


def test_loss_torch_caffe():
    for cls, name in ((M.Loss, "loss"), (M.Torch, "torch"), (M.Caffe, "caffe")):
        m = cls()
        m.update(None, [nd([1.0, 2.0]), nd([[3.0], [6.0]])])
        m.update(None, nd([3.0]))
        assert m.get() == (name, pytest.approx(15.0 / 5))


def test_custom_metric_and_np():
    def mean_abs(label, pred):
        return np.abs(label - pred).mean()

    m = M.np(mean_abs)
    assert m.name == "mean_abs"
    m.update([nd([1.0, 2.0])], [nd([2.0, 2.0])])
    m.update([nd([0.0])], [nd([3.0])])
    assert m.get()[1] == pytest.approx((0.5 + 3.0) / 2)
    pair = M.create(lambda l, p: ((l == p).sum(), l.size))  # (sum, count) form
    assert pair.name.startswith("custom(")
    pair.update([nd([1, 2, 3])], [nd([1, 0, 3])])
    assert pair.get()[1] == pytest.approx(2 / 3)
    with pytest.raises(NotImplementedError):
        pair.get_config()


def test_composite_create_config_and_dict_update():
    comp = M.create(["acc", "ce", M.MAE()])
    assert isinstance(comp, M.CompositeEvalMetric)
    pred, label = nd([[0.2, 0.8], [0.6, 0.4]]), nd([1, 1])
    comp.update([label], [pred])
    names, vals = comp.get()
    assert names == ["accuracy", "cross-entropy", "mae"]
    assert vals[0] == 0.5
    assert vals[1] == pytest.approx(-(math.log(0.8 + 1e-12) + math.log(0.4 + 1e-12)) / 2, rel=1e-6)
    assert comp.get_name_value()[0] == ("accuracy", 0.5)
    cfg = comp.get_config()
    assert cfg["metric"] == "CompositeEvalMetric" and cfg["metrics"][0]["metric"] == "Accuracy"
    acc = M.create(comp.get_config()["metrics"][0])
    assert isinstance(acc, M.Accuracy) and acc.axis == 1
    acc2 = M.create(json.dumps({"metric": "acc", "axis": 0}))
    assert acc2.axis == 0
    # update_dict selects by names
    m = M.Accuracy(output_names=["out"], label_names=["lab"])
    m.update_dict({"lab": nd([1, 0]), "other": nd([5, 5])}, {"out": nd([[0.1, 0.9], [0.8, 0.2]])})
    assert m.get()[1] == 1.0
    comp.reset()
    assert all(math.isnan(v) for v in comp.get()[1])
    assert comp.get_metric(0) is comp.metrics[0]


def test_create_registry_errors_and_passthrough():
    acc = M.Accuracy()
    assert M.create(acc) is acc
    assert isinstance(M.create("ACC"), M.Accuracy)
    assert isinstance(M.create("top_k_acc", top_k=3), M.TopKAccuracy)
    assert isinstance(M.create("composite"), M.CompositeEvalMetric)
    with pytest.raises(ValueError, match="not registered"):
        M.create("no_such_metric")
    with pytest.raises(ValueError):
        M.create(acc, 3)

    @M.register
    @M.alias("twice")
    class Twice(M.EvalMetric):
        def __init__(self, name="twice"):
            super().__init__(name)

        def update(self, labels, preds):
            self.sum_metric += 2
            self.num_inst += 1

    t = M.create("twice")
    t.update(None, None)
    assert t.get() == ("twice", 2.0) and str(t) == "EvalMetric: {'twice': 2.0}"
    assert t.get_global() == t.get()  # no global stats: falls back to local


def test_global_stats_survive_reset_local():
    m = M.Accuracy()
    m.update([nd([1, 1])], [nd([1, 0])])
    m.reset_local()
    m.update([nd([1])], [nd([1])])
    assert m.get()[1] == 1.0
    assert m.get_global()[1] == pytest.approx(2 / 3)
    assert m.get_global_name_value() == [("accuracy", pytest.approx(2 / 3))]
    m.reset()
    assert math.isnan(m.get_global()[1])
