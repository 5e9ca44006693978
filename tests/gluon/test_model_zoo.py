"""gluon.model_zoo.vision: MXNet 1.9.1's parameter names/shapes, forward/hybridize/export, and
pretrained-file handling (no network)."""
import json
import os
import warnings

import numpy as np
import pytest

import hybridnet as mx
import hybridnet.name as _name
from hybridnet import autograd, gluon, nd
from hybridnet.gluon.model_zoo import model_store, vision

from fixture_paths import ROOT as FIX  # noqa: E402
ZOO = os.path.join(FIX, "mxnet-zoo", "params.json")
MOBILENET_CASE = os.path.join(FIX, "mxnet", "mobilenet0_25")


def _load_zoo():
    if not os.path.exists(ZOO):
        return {}
    with open(ZOO) as f:
        data = json.load(f)
    data.pop("_about", None)
    return data


ZOO_FIXTURE = _load_zoo()


@pytest.fixture(autouse=True)
def fresh_names(monkeypatch):
    monkeypatch.setattr(_name._local, "value", _name.NameManager(), raising=False)


@pytest.fixture(scope="module")
def zoo_nets():
    """Every fixture model built with classes=10 in the fixture's order in one fresh name
    manager (prefix counters depend on build order), shapes inferred without a forward pass."""
    old = getattr(_name._local, "value", None)
    _name._local.value = _name.NameManager()
    try:
        nets = {}
        for name, case in ZOO_FIXTURE.items():
            net = vision.get_model(name, classes=10)
            net.infer_shape(nd.zeros(tuple(case["input_shape"])))  # symbolic, meta-device shapes
            nets[name] = net
        return nets
    finally:
        _name._local.value = old


@pytest.mark.skipif(not ZOO_FIXTURE, reason="model zoo fixture missing")
@pytest.mark.parametrize("name", list(ZOO_FIXTURE))
def test_zoo_names_and_shapes_match_mxnet(zoo_nets, name):
    case = ZOO_FIXTURE[name]
    net = zoo_nets[name]
    assert net.prefix == case["prefix"]
    got = [[k, list(p.shape), p.grad_req, np.dtype(p.dtype).name] for k, p in net.collect_params().items()]
    want = [list(x) for x in case["params"]]
    assert len(got) == len(want)
    bad = [(g, w) for g, w in zip(got, want) if g != w]
    assert not bad, f"{name}: first mismatches (ours, MXNet's): {bad[:3]}"
    structural = [[k, list(p.shape)] for k, p in net._collect_params_with_prefix().items()]
    want_s = [list(x) for x in case["save_parameters_names"]]
    bad = [(g, w) for g, w in zip(structural, want_s) if g != w]
    assert len(structural) == len(want_s) and not bad, f"{name}: {bad[:3]}"


def test_get_model_names_and_errors():
    assert sorted(vision._models) == sorted(ZOO_FIXTURE) or not ZOO_FIXTURE
    net = vision.get_model("MobileNet0.25", classes=7)
    assert isinstance(net, vision.MobileNet) and net.output._units == 7
    with pytest.raises(ValueError, match="resnet18_v1"):
        vision.get_model("resnet19_v1")
    with pytest.raises(ValueError, match="Invalid number of layers"):
        vision.get_resnet(1, 19)
    with pytest.raises(ValueError, match="version"):
        vision.get_resnet(3, 18)
    with pytest.raises(ValueError, match="SqueezeNet"):
        vision.SqueezeNet("1.2")


def test_constructors_prefixes_in_fresh_process():
    # spec C.1: the hints MXNet's constructors give
    assert vision.mobilenet0_25().prefix == "mobilenet0_"
    assert vision.squeezenet1_1().prefix == "squeezenet0_"
    assert vision.resnet18_v1().prefix == "resnetv10_"
    assert vision.resnet18_v2().prefix == "resnetv20_"
    assert vision.inception_v3().prefix == "inception30_"
    assert vision.mobilenet_v2_0_25().prefix == "mobilenetv20_"
    assert vision.densenet121().prefix == "densenet0_"
    assert vision.vgg11_bn().prefix == "vgg0_"
    assert vision.alexnet().prefix == "alexnet0_"


def test_resnet_thumbnail_and_blocks():
    net = vision.ResNetV1(vision.BasicBlockV1, [1, 1], [8, 8, 16], classes=3, thumbnail=True)
    net.initialize()
    y = net(nd.array(np.random.RandomState(0).randn(2, 3, 8, 8)))
    assert y.shape == (2, 3)
    assert net.features[0].weight.shape == (8, 3, 3, 3)
    with pytest.raises(ValueError, match="one more entry"):
        vision.ResNetV2(vision.BottleneckV2, [1, 1], [8, 16], classes=3)


# ---- small models: eager == hybridized == exported, training step ---------------------------
SMALL = [("mobilenet0.25", (2, 3, 32, 32)), ("resnet18_v1", (2, 3, 32, 32)),
         ("squeezenet1.1", (1, 3, 224, 224))]


def _init(net, seed=0):
    mx.random.seed(seed)
    net.initialize(mx.init.Xavier())


@pytest.mark.parametrize("name,shape", SMALL)
def test_small_models_eager_hybrid_export_agree(name, shape, tmp_path):
    net = vision.get_model(name, classes=10)
    _init(net)
    x = nd.array(np.random.RandomState(1).randn(*shape))
    eager = net(x).asnumpy()
    assert eager.shape == (shape[0], 10) and np.isfinite(eager).all()
    net.hybridize()
    hyb = net(x).asnumpy()
    np.testing.assert_allclose(hyb, eager, rtol=1e-4, atol=1e-5)
    prefix = str(tmp_path / name)
    net.export(prefix)
    sym_file, params_file = f"{prefix}-symbol.json", f"{prefix}-0000.params"
    graph = json.load(open(sym_file))
    assert graph["nodes"][0]["name"] == "data"
    loaded = nd.load(params_file)
    assert sorted(k.split(":", 1)[1] for k in loaded) == sorted(net.collect_params().keys())
    imported = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    np.testing.assert_allclose(imported(x).asnumpy(), eager, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,shape", SMALL)
def test_small_models_hybridized_training_step(name, shape):
    net = vision.get_model(name, classes=10)
    _init(net)
    net.hybridize()
    params = net.collect_params()
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x = nd.array(np.random.RandomState(2).randn(*shape))
    label = nd.array(np.arange(shape[0]) % 10)
    net(x)  # completes deferred initialization
    first = params[list(params.keys())[0]]
    before = first.data().asnumpy().copy()
    bns = [p for k, p in params.items() if k.endswith("running_mean")]
    mean_before = [p.data().asnumpy().copy() for p in bns]
    with autograd.record():
        loss = loss_fn(net(x), label)
    loss.backward()
    grads = {k: p.grad().asnumpy() for k, p in params.items() if p.grad_req != "null"}
    assert all(np.isfinite(g).all() for g in grads.values())
    assert np.abs(grads[first.name]).sum() > 0
    nonzero = sum(np.abs(g).sum() > 0 for g in grads.values())
    assert nonzero >= 0.9 * len(grads)
    trainer.step(shape[0])
    assert not np.allclose(first.data().asnumpy(), before)
    for bn, before_mean in zip(bns[:1], mean_before):  # BatchNorm statistics updated
        assert not np.allclose(bn.data().asnumpy(), before_mean)
    assert bool(bns) == (name != "squeezenet1.1")


def test_squeezenet_fire_modules_are_transparent():
    net = vision.squeezenet1_1(classes=10)
    _init(net)
    net.hybridize()
    net(nd.zeros((1, 3, 224, 224)))
    sym = net._cached_graph[1]
    names = [n["name"] for n in json.loads(sym.tojson())["nodes"]]
    assert "squeezenet0_conv3_fwd" in names and "squeezenet0_concat0" in names


# ---- real MXNet export of mobilenet0_25 --------------------------------------------------------
@pytest.mark.skipif(not os.path.isdir(MOBILENET_CASE), reason="mobilenet0_25 fixture missing")
@pytest.mark.parametrize("hybridize", [False, True])
def test_mobilenet0_25_loads_mxnet_export_and_reproduces_output(hybridize):
    case = json.load(open(os.path.join(MOBILENET_CASE, "case.json")))
    net = vision.mobilenet0_25(classes=10)
    assert list(net.collect_params().keys()) == case["collect_params_keys"]
    net.initialize()
    params = net.collect_params()
    loaded = nd.load(os.path.join(MOBILENET_CASE, "model-0000.params"))
    assert list(loaded.keys()) == case["params_file_names"]
    for key, value in loaded.items():
        kind, pname = key.split(":", 1)
        assert (kind == "aux") == (params[pname].grad_req == "null")
        params[pname].set_data(value)
    if hybridize:
        net.hybridize()
    x = nd.array(np.load(os.path.join(MOBILENET_CASE, "input.npy")))
    ref = np.load(os.path.join(MOBILENET_CASE, "output.npy"))
    tol = case["suggested_tolerance"]
    np.testing.assert_allclose(net(x).asnumpy(), ref, rtol=tol["rtol"], atol=tol["atol"])


# ---- pretrained files ---------------------------------------------------------------------------
def test_model_store_file_names():
    assert model_store.short_hash("resnet18_v1") == "e54b379f"
    assert model_store.short_hash("mobilenetv2_0.25") == "ae8f9392"
    with pytest.raises(ValueError, match="not available"):
        model_store.short_hash("resnet19_v1")


def test_pretrained_missing_file_names_file_and_folder(tmp_path):
    root = str(tmp_path / "models")
    with pytest.raises(model_store.PretrainedFileNotFoundError) as info:
        vision.resnet18_v1(pretrained=True, root=root)
    msg = str(info.value)
    assert "resnet18_v1-e54b379f.params" in msg and root in msg
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(FileNotFoundError, match="mobilenetv2_0.5-aabd26cd.params"):
        vision.get_model("mobilenetv2_0.5", pretrained=True, root=root)


def test_pretrained_wrong_classes_is_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"1000 classes.*classes=10 "):
        vision.mobilenet0_25(pretrained=True, classes=10, root=str(tmp_path))


def test_pretrained_loads_mxnet_named_file(tmp_path):
    src = vision.mobilenet0_25()
    _init(src, seed=3)
    src(nd.zeros((1, 3, 32, 32)))
    root = tmp_path / "models"
    root.mkdir()
    exact = root / "mobilenet0.25-9f83e440.params"
    src.save_parameters(str(exact))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        net = vision.get_model("mobilenet0.25", pretrained=True, root=str(root))
    assert any("SHA-1" in str(x.message) for x in w)  # our file is not MXNet's published one
    for (k1, p1), (k2, p2) in zip(src._collect_params_with_prefix().items(),
                                  net._collect_params_with_prefix().items()):
        assert k1 == k2
        np.testing.assert_array_equal(p1.data().asnumpy(), p2.data().asnumpy())
    # any <name>-*.params is accepted
    os.replace(str(exact), str(root / "mobilenet0.25-custom.params"))
    assert model_store.get_model_file("mobilenet0.25", root=str(root)).endswith("mobilenet0.25-custom.params")
    net2 = vision.mobilenet0_25(pretrained=True, root=str(root))
    x = nd.array(np.random.RandomState(0).randn(1, 3, 32, 32))
    np.testing.assert_allclose(net2(x).asnumpy(), src(x).asnumpy(), rtol=1e-5, atol=1e-6)
    model_store.purge(str(root))
    assert not os.listdir(str(root))
