"""gluon.loss: each loss vs a NumPy formula (incl. sample_weight), eager == hybridized, errors."""
import numpy as np
import pytest

import hybridnet as mx
from hybridnet import autograd, gluon, nd

rng = np.random.RandomState(0)
N, C = 4, 5


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _mean_nonbatch(x):
    return x.reshape(x.shape[0], -1).mean(axis=1)


def _sum_nonbatch(x):
    return x.reshape(x.shape[0], -1).sum(axis=1)


pred = rng.randn(N, C)
label_dense = rng.randn(N, C)
label_cls = rng.randint(0, C, size=N).astype(np.float64)
label_pm1 = np.where(rng.rand(N, C) > 0.5, 1.0, -1.0)
label_01 = (rng.rand(N, C) > 0.5).astype(np.float64)
prob = rng.uniform(0.05, 0.95, size=(N, C))
sw = rng.uniform(0.5, 1.5, size=(N, 1))
pred3 = rng.randn(N, 2, C)
label3 = _softmax(rng.randn(N, 2, C))
label_soft = rng.uniform(-1, 1, size=(N, C))  # not +-1: MXNet's formula is linear in the label


def softplus(x):
    return np.log1p(np.exp(x))


CASES = {
    "L2": (lambda: gluon.loss.L2Loss(), (pred, label_dense), lambda p, l: _mean_nonbatch(0.5 * (l - p) ** 2)),
    "L2w": (lambda: gluon.loss.L2Loss(weight=3.0), (pred, label_dense), lambda p, l: _mean_nonbatch(1.5 * (l - p) ** 2)),
    "L1": (lambda: gluon.loss.L1Loss(), (pred, label_dense), lambda p, l: _mean_nonbatch(np.abs(l - p))),
    "SigmoidBCE": (lambda: gluon.loss.SigmoidBinaryCrossEntropyLoss(), (pred, label_01),
                   lambda p, l: _mean_nonbatch(-(l * np.log(1 / (1 + np.exp(-p))) + (1 - l) * np.log(1 - 1 / (1 + np.exp(-p)))))),
    "SigmoidBCE_prob": (lambda: gluon.loss.SigmoidBCELoss(from_sigmoid=True), (prob, label_01),
                        lambda p, l: _mean_nonbatch(-(l * np.log(p + 1e-12) + (1 - l) * np.log(1 - p + 1e-12)))),
    "SoftmaxCE": (lambda: gluon.loss.SoftmaxCrossEntropyLoss(), (pred, label_cls),
                  lambda p, l: -np.log(_softmax(p)[np.arange(N), l.astype(int)])),
    "SoftmaxCE_dense": (lambda: gluon.loss.SoftmaxCELoss(sparse_label=False), (pred, _softmax(label_dense)),
                        lambda p, l: -(np.log(_softmax(p)) * l).sum(axis=1)),
    # MXNet 1.9.1 SUMS KLDiv over every non-batch axis (a mean would be C times too small)
    "KLDiv": (lambda: gluon.loss.KLDivLoss(from_logits=False), (pred, _softmax(label_dense)),
              lambda p, l: _sum_nonbatch(l * (np.log(l + 1e-12) - np.log(_softmax(p))))),
    "KLDiv_3d_logprob": (lambda: gluon.loss.KLDivLoss(), (np.log(_softmax(pred3)), label3),
                         lambda p, l: _sum_nonbatch(l * (np.log(l + 1e-12) - p))),
    "Huber": (lambda: gluon.loss.HuberLoss(rho=0.7), (pred, label_dense),
              lambda p, l: _mean_nonbatch(np.where(np.abs(l - p) > 0.7, np.abs(l - p) - 0.35, 0.5 / 0.7 * (l - p) ** 2))),
    "Hinge": (lambda: gluon.loss.HingeLoss(), (pred, label_pm1), lambda p, l: _mean_nonbatch(np.maximum(0, 1 - p * l))),
    "SquaredHinge": (lambda: gluon.loss.SquaredHingeLoss(margin=0.5), (pred, label_pm1),
                     lambda p, l: _mean_nonbatch(np.maximum(0, 0.5 - p * l) ** 2)),
    "Logistic": (lambda: gluon.loss.LogisticLoss(), (pred, label_pm1), lambda p, l: _mean_nonbatch(softplus(-p * l))),
    "Logistic_binary": (lambda: gluon.loss.LogisticLoss(label_format="binary"), (pred, label_01),
                        lambda p, l: _mean_nonbatch(softplus(-p * (2 * l - 1)))),
    "Logistic_soft_label": (lambda: gluon.loss.LogisticLoss(), (pred, label_soft),
                            lambda p, l: _mean_nonbatch(softplus(p) - p * (l + 1) / 2)),
    "PoissonNLL": (lambda: gluon.loss.PoissonNLLLoss(), (pred, np.abs(label_dense)),
                   lambda p, l: np.array(np.mean(np.exp(p) - l * p))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_matches_formula_eager_and_hybridized(name):
    make, inputs, ref = CASES[name]
    expected = ref(*inputs)
    for hybrid in (False, True):
        loss = make()
        if hybrid:
            loss.hybridize()
        out = loss(*[nd.array(a, dtype="float64") for a in inputs])
        np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["L2", "L1", "SoftmaxCE", "Hinge", "Huber"])
def test_sample_weight(name):
    make, inputs, ref = CASES[name]
    out = make()(*[nd.array(a, dtype="float64") for a in inputs], nd.array(sw, dtype="float64"))
    np.testing.assert_allclose(out.asnumpy(), ref(*inputs) * sw[:, 0], rtol=1e-6)


def test_triplet_loss():
    pos, neg = rng.randn(N, C), rng.randn(N, C)
    out = gluon.loss.TripletLoss(margin=0.5)(nd.array(pred), nd.array(pos), nd.array(neg))
    expected = np.maximum(0, ((pos - pred) ** 2 - (neg - pred) ** 2).sum(axis=1) + 0.5)
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5)


def test_cosine_embedding_loss():
    a, b = rng.randn(N, C), rng.randn(N, C)
    lab = np.array([1, -1, 1, -1], dtype=np.float64)
    out = gluon.loss.CosineEmbeddingLoss(margin=0.1)(nd.array(a), nd.array(b), nd.array(lab))
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    expected = np.where(lab == 1, 1 - cos, np.maximum(0, cos - 0.1))
    np.testing.assert_allclose(out.asnumpy().ravel(), expected, rtol=1e-5)


def test_ctc_loss_matches_torch_reference():
    import torch
    T, B, V = 6, 2, 4
    logits = rng.randn(B, T, V).astype(np.float32)
    labels = np.array([[1, 2, 0], [2, 2, 1]], dtype=np.float32)  # blank = last class (3)
    out = gluon.loss.CTCLoss()(nd.array(logits), nd.array(labels))
    lp = torch.log_softmax(torch.from_numpy(logits).transpose(0, 1), -1)
    ref = torch.nn.functional.ctc_loss(lp, torch.from_numpy(labels).long(), torch.full((B,), T),
                                       torch.tensor([3, 3]), blank=V - 1, reduction="none")
    np.testing.assert_allclose(out.asnumpy(), ref.numpy(), rtol=1e-4)


def test_sdml_loss_value():
    x1, x2 = rng.randn(3, 2), rng.randn(3, 2)
    out = gluon.loss.SDMLLoss(smoothing_parameter=0.3)(nd.array(x1), nd.array(x2)).asnumpy()
    d = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1)
    logp = np.log(_softmax(-d, axis=1))
    lab = np.eye(3) * 0.7 + (1 - np.eye(3)) * 0.3 / 2
    expected = (lab * (np.log(lab + 1e-12) - logp)).sum(axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_kldiv_documented_example_sums_over_classes():
    # the 4-class example: KL(label || softmax(pred)) per sample, not divided by 4
    p = np.array([[1.0, 2.0, 3.0, 4.0]])
    lab = np.array([[0.1, 0.2, 0.3, 0.4]])
    out = gluon.loss.KLDivLoss(from_logits=False)(nd.array(p), nd.array(lab)).asnumpy()
    q = _softmax(p)
    np.testing.assert_allclose(out, [(lab * np.log(lab / q)).sum()], rtol=1e-5)


def test_label_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(3, 2\).*\(4, 5\)"):
        gluon.loss.L2Loss()(nd.array(pred), nd.ones((3, 2)))
    with pytest.raises(ValueError, match=r"\(3,\).*\(4, 5\)"):
        gluon.loss.SoftmaxCrossEntropyLoss()(nd.array(pred), nd.ones((3,)))


def test_loss_gradient_eager_vs_hybridized():
    grads = []
    for hybrid in (False, True):
        x = nd.array(pred)
        x.attach_grad()
        loss = gluon.loss.SoftmaxCrossEntropyLoss()
        if hybrid:
            loss.hybridize()
        with autograd.record():
            out = loss(x, nd.array(label_cls))
        out.backward()
        grads.append(x.grad.asnumpy())
    expected = _softmax(pred)
    expected[np.arange(N), label_cls.astype(int)] -= 1
    np.testing.assert_allclose(grads[0], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, atol=1e-7)
