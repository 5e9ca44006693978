"""MXNet 1.9.1's SequentialModule / PythonModule / PythonLossModule, SVRGModule and the
detection augmenters and ImageDetIter (mx.image.detection), with numbers."""
import random

import numpy as np
import pytest

import hybridnet as mx
from hybridnet.contrib.svrg_optimization import SVRGModule
from hybridnet.image import detection as det


def _blobs(n=60, seed=0):
    rng = np.random.RandomState(seed)
    centers = np.array([[3, 0, 0, 0], [0, 3, 0, 0], [0, 0, 3, 0]], dtype="f")
    y = rng.randint(0, 3, size=n)
    return centers[y] + rng.randn(n, 4).astype("f") * 0.5, y.astype("f")


def _params(seed=1):
    rng = np.random.RandomState(seed)
    shapes = {"fc1_weight": (8, 4), "fc1_bias": (8,), "fc2_weight": (3, 8), "fc2_bias": (3,)}
    return {k: mx.nd.array(rng.randn(*s) * 0.3) for k, s in shapes.items()}


def _train(mod, it, epochs=2):
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(arg_params=_params(), allow_missing=False)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.2})
    metric = mx.metric.Accuracy()
    for _ in range(epochs):
        it.reset()
        for batch in it:
            mod.forward_backward(batch)
            mod.update()
            mod.update_metric(metric, batch.label)
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}, metric.get()[1]


def test_sequential_module_trains_exactly_like_one_module():
    x, y = _blobs()
    it = mx.io.NDArrayIter(x, y, batch_size=10)
    data = mx.sym.var("data")
    hidden = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name="fc1"), act_type="relu")
    head = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(hidden, num_hidden=3, name="fc2"), name="softmax")
    whole, whole_acc = _train(mx.mod.Module(head), it)

    part1 = mx.mod.Module(hidden, data_names=["data"], label_names=None)
    part2 = mx.mod.Module(mx.sym.SoftmaxOutput(mx.sym.FullyConnected(
        mx.sym.var("data"), num_hidden=3, name="fc2"), name="softmax"))
    seq = mx.mod.SequentialModule().add(part1).add(part2, take_labels=True, auto_wiring=True)
    chained, chained_acc = _train(seq, it)
    assert sorted(chained) == sorted(whole)
    for k in whole:
        np.testing.assert_allclose(chained[k], whole[k], rtol=1e-5, atol=1e-6)
    assert chained_acc == whole_acc
    assert seq.output_shapes == part2.output_shapes and seq.label_shapes is not None
    with pytest.raises(ValueError, match="unknown meta"):
        mx.mod.SequentialModule().add(part1, take_label=True)


def test_python_loss_module_gives_the_gradient_of_its_loss():
    rng = np.random.RandomState(0)
    x = rng.randn(40, 3).astype("f")
    y = (x @ np.array([1.0, -2.0, 0.5], dtype="f") + 0.3).reshape(-1, 1)
    it = mx.io.NDArrayIter(x, y, batch_size=10, label_name="lro_label")
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, name="fc")
    init = {"fc_weight": mx.nd.zeros((1, 3)), "fc_bias": mx.nd.zeros((1,))}

    def train(mod):
        mod.bind(it.provide_data, it.provide_label)
        mod.init_params(arg_params=init)
        mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
        for _ in range(3):
            it.reset()
            for batch in it:
                mod.forward_backward(batch)
                mod.update()
        return mod.get_params()[0]

    ref = train(mx.mod.Module(mx.sym.LinearRegressionOutput(fc, name="lro"),
                              label_names=["lro_label"]))
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(fc, label_names=None))
    loss = mx.mod.PythonLossModule(label_names=["lro_label"],
                                   grad_func=lambda scores, labels: scores - labels)
    seq.add(loss, take_labels=True, auto_wiring=True)
    got = train(seq)
    for k in ref:
        np.testing.assert_allclose(got[k].asnumpy(), ref[k].asnumpy(), rtol=1e-5, atol=1e-6)
    assert loss.output_shapes == [("pyloss_output", (10, 1))]
    with pytest.raises(ValueError, match="out_grads"):
        loss.backward(out_grads=[mx.nd.ones((10, 1))])


def _regression(seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(40, 3).astype("f")
    y = (x @ np.array([1.0, -2.0, 0.5], dtype="f") + 0.3).astype("f")
    return x, y


def test_svrg_full_gradient_and_first_step_by_hand():
    x, y = _regression()
    it = mx.io.NDArrayIter(x, y, batch_size=10, label_name="lro_label")
    sym = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1,
                                                              name="fc"), name="lro")
    mod = SVRGModule(sym, label_names=["lro_label"], update_freq=2)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Zero())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    mod.update_full_grads(it)
    # at w = 0 every prediction is 0: the batch-sum gradient is -sum(y_i x_i); mu averages 4 batches
    mu = -(y @ x) / 4
    np.testing.assert_allclose(mod._param_dict[0]["fc_weight"].asnumpy().ravel(), mu, rtol=1e-5)
    it.reset()
    mod.forward_backward(it.next())
    mod.update()
    # weights == snapshot, so g - g_snapshot = 0 and the step is -lr * rescale_grad * mu
    np.testing.assert_allclose(mod.get_params()[0]["fc_weight"].asnumpy().ravel(),
                               -0.1 / 10 * mu, rtol=1e-5)
    with pytest.raises(ValueError):
        SVRGModule(sym, label_names=["lro_label"], update_freq=0)


def test_svrg_fit_converges():
    x, y = _regression()
    it = mx.io.NDArrayIter(x, y, batch_size=10, label_name="lro_label")
    sym = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1,
                                                              name="fc"), name="lro")
    mod = SVRGModule(sym, label_names=["lro_label"], update_freq=2)
    passes = []
    full_grads = mod.update_full_grads
    mod.update_full_grads = lambda data: (passes.append(len(passes)), full_grads(data))
    mod.fit(it, eval_metric="mse", optimizer="sgd", optimizer_params={"learning_rate": 0.5},
            initializer=mx.init.Zero(), num_epoch=30)
    assert len(passes) == 15  # epochs 0, 2, ..., 28
    (_, mse), = mod.score(it, "mse")
    assert mse < 1e-3
    np.testing.assert_allclose(mod.get_params()[0]["fc_weight"].asnumpy().ravel(),
                               [1.0, -2.0, 0.5], atol=0.02)


def test_detection_flip_crop_and_pad_keep_boxes_on_objects():
    img = mx.nd.array(np.arange(4 * 6 * 3).reshape(4, 6, 3))
    label = np.array([[1, 0.1, 0.25, 0.5, 0.75]], dtype="f")
    out, flipped = det.DetHorizontalFlipAug(1.0)(img, label.copy())
    np.testing.assert_allclose(flipped, [[1, 0.5, 0.25, 0.9, 0.75]], rtol=1e-6)
    np.testing.assert_array_equal(out.asnumpy(), img.asnumpy()[:, ::-1])

    random.seed(3)
    crop = det.DetRandomCropAug(min_object_covered=0.1, area_range=(0.3, 0.9))
    x, y, w, h, new = crop._random_crop_proposal(label, 40, 60)
    box = label[0, 1:] * [60, 40, 60, 40]
    want = np.clip((box - [x, y, x, y]) / [w, h, w, h], 0, 1)
    np.testing.assert_allclose(new[0, 1:], want, rtol=1e-5)
    assert new[0, 0] == 1

    random.seed(4)
    pad = det.DetRandomPadAug(area_range=(1.5, 2.0), pad_val=(9, 9, 9))
    src = mx.nd.ones((40, 60, 3))
    out, new = pad(src, label.copy())
    H, W = out.shape[:2]
    assert H * W > 40 * 60 and out.asnumpy()[0, 0].tolist() in ([9, 9, 9], [1, 1, 1])
    ys, xs = np.nonzero(out.asnumpy()[:, :, 0] == 1)
    x0, y0 = xs.min(), ys.min()
    np.testing.assert_allclose(new[0, 1:], (box + [x0, y0, x0, y0]) / [W, H, W, H], rtol=1e-5)


def test_image_det_iter_pads_labels(tmp_path):
    from PIL import Image
    rng = np.random.RandomState(0)
    objects = [[[0, .1, .1, .5, .5]], [[1, .2, .2, .9, .8], [2, 0, 0, .3, .3]], [[0, .5, .5, 1, 1]]]
    imglist = []
    for i, objs in enumerate(objects):
        Image.fromarray(rng.randint(0, 255, (16, 16, 3), dtype=np.uint8)).save(tmp_path / f"{i}.png")
        imglist.append([2, 5] + [v for o in objs for v in o] + [f"{i}.png"])
    it = det.ImageDetIter(2, (3, 8, 8), imglist=imglist, path_root=str(tmp_path))
    assert it.provide_label[0].shape == (2, 2, 5)
    batches = list(it)
    assert len(batches) == 2 and batches[1].pad == 1
    lab = batches[0].label[0].asnumpy()
    np.testing.assert_allclose(lab[0], [[0, .1, .1, .5, .5], [-1] * 5], rtol=1e-6)
    np.testing.assert_allclose(lab[1], objects[1], rtol=1e-6)
    assert batches[0].data[0].shape == (2, 3, 8, 8)
    augs = det.CreateDetAugmenter((3, 8, 8), rand_crop=0.5, rand_pad=0.5, rand_mirror=True,
                                  mean=True, std=True)
    assert [type(a).__name__ for a in augs] == ["DetRandomSelectAug", "DetHorizontalFlipAug",
                                                "DetRandomSelectAug", "DetBorrowAug",
                                                "DetBorrowAug", "DetBorrowAug"]
