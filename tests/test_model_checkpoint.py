"""mx.model checkpoints: save_checkpoint/load_checkpoint round trips, the arg:/aux: split, and
real MXNet 1.9.1 checkpoints (../shared/fixtures/mxnet) loaded and run through Symbol.bind."""
import os

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import model, nd
from hybridnet.base import MXNetError

from fixture_paths import MXNET as FIXTURES, load_case  # noqa: E402
CASES = sorted(os.listdir(FIXTURES)) if os.path.isdir(FIXTURES) else []
needs_fixtures = pytest.mark.skipif(not CASES, reason="shared/fixtures/mxnet not found")


def _net():
    x = mx.sym.var("data")
    fc = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    bn = mx.sym.BatchNorm(fc, name="bn", fix_gamma=False)
    return mx.sym.Activation(bn, act_type="tanh", name="act")


def _params(rng):
    arg = {"fc_weight": nd.array(rng.randn(4, 3)), "fc_bias": nd.array(rng.randn(4)),
           "bn_gamma": nd.array(rng.rand(4) + 0.5), "bn_beta": nd.array(rng.randn(4))}
    aux = {"bn_moving_mean": nd.array(rng.randn(4)), "bn_moving_var": nd.array(rng.rand(4) + 0.5)}
    return arg, aux


def _forward(sym, arg, aux, x):
    args = dict(arg, data=nd.array(x))
    return sym.bind(mx.cpu(), args=args, aux_states=aux).forward(is_train=False)[0].asnumpy()


def _reference(arg, aux, x):
    a = {k: v.asnumpy().astype(np.float64) for k, v in arg.items()}
    m = {k: v.asnumpy().astype(np.float64) for k, v in aux.items()}
    h = x @ a["fc_weight"].T + a["fc_bias"]
    h = (h - m["bn_moving_mean"]) / np.sqrt(m["bn_moving_var"] + 1e-3) * a["bn_gamma"] + a["bn_beta"]
    return np.tanh(h)


def test_round_trip(tmp_path):
    rng = np.random.RandomState(0)
    sym, (arg, aux) = _net(), _params(rng)
    prefix = str(tmp_path / "net")
    model.save_checkpoint(prefix, 7, sym, arg, aux)
    assert sorted(os.listdir(tmp_path)) == ["net-0007.params", "net-symbol.json"]  # no temp files left
    # names and order: every argument as arg:<name>, then every aux state as aux:<name>
    raw = nd.load(prefix + "-0007.params")
    assert list(raw) == ["arg:fc_weight", "arg:fc_bias", "arg:bn_gamma", "arg:bn_beta",
                         "aux:bn_moving_mean", "aux:bn_moving_var"]
    assert open(prefix + "-symbol.json").read() == sym.tojson()

    sym2, arg2, aux2 = model.load_checkpoint(prefix, 7)
    assert sym2.tojson() == sym.tojson()
    assert list(arg2) == list(arg) and list(aux2) == list(aux)
    for src, dst in ((arg, arg2), (aux, aux2)):
        for k in src:
            np.testing.assert_array_equal(dst[k].asnumpy(), src[k].asnumpy())
            assert dst[k].dtype == src[k].dtype
    x = rng.randn(5, 3)
    out = _forward(sym2, arg2, aux2, x)
    np.testing.assert_allclose(out, _reference(arg, aux, x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out, _forward(sym, arg, aux, x), rtol=0, atol=0)

    arg3, aux3 = model.load_params(prefix, 7)
    assert list(arg3) == list(arg) and list(aux3) == list(aux)


def test_epoch_file_names_and_no_symbol(tmp_path):
    arg = {"w": nd.array(np.arange(6.0).reshape(2, 3), dtype="float64")}
    prefix = str(tmp_path / "m")
    model.save_checkpoint(prefix, 12345, None, arg, {})
    model.save_checkpoint(prefix, 0, None, arg, None)
    assert sorted(os.listdir(tmp_path)) == ["m-0000.params", "m-12345.params"]
    a, x = model.load_params(prefix, 12345)
    assert x == {} and a["w"].dtype == np.float64
    np.testing.assert_array_equal(a["w"].asnumpy(), np.arange(6.0).reshape(2, 3))
    with pytest.raises(TypeError, match="epoch"):
        model.save_checkpoint(prefix, "1", None, arg, {})


def test_save_is_atomic_and_validates(tmp_path):
    prefix = str(tmp_path / "m")
    arg = {"w": nd.ones((2,))}
    model.save_checkpoint(prefix, 1, None, arg, {})
    before = open(prefix + "-0001.params", "rb").read()
    with pytest.raises(TypeError, match="aux_params"):
        model.save_checkpoint(prefix, 1, None, {"w": nd.zeros((2,))}, {"m": np.zeros(2)})
    assert open(prefix + "-0001.params", "rb").read() == before
    assert os.listdir(tmp_path) == ["m-0001.params"]


def test_load_params_errors(tmp_path):
    prefix = str(tmp_path / "m")
    with pytest.raises(MXNetError, match="m-0003.params"):
        model.load_params(prefix, 3)
    with pytest.raises(MXNetError, match="symbol"):
        model.load_checkpoint(prefix, 3)
    nd.save(prefix + "-0001.params", {"arg:w": nd.ones((1,)), "0.weight": nd.ones((1,))})
    with pytest.raises(ValueError, match="0.weight"):
        model.load_params(prefix, 1)
    nd.save(prefix + "-0002.params", [nd.ones((1,))])
    with pytest.raises(ValueError, match="unnamed"):
        model.load_params(prefix, 2)
    nd.save(prefix + "-0004.params", {})
    assert model.load_params(prefix, 4) == ({}, {})
    # a name may itself contain ':' after the prefix
    nd.save(prefix + "-0005.params", {"aux:a:b": nd.ones((1,))})
    assert list(model.load_params(prefix, 5)[1]) == ["a:b"]


def _case(name):
    d, case, inputs, outputs = load_case(name)
    tol = case.get("suggested_tolerance", {})
    return d, case, inputs, outputs, dict(rtol=tol.get("rtol", 1e-4), atol=tol.get("atol", 1e-5))


@needs_fixtures
@pytest.mark.parametrize("name", CASES)
def test_load_mxnet_checkpoint_and_run(name, tmp_path):
    d, case, inputs, outputs, tol = _case(name)
    sym, arg, aux = model.load_checkpoint(os.path.join(d, "model"), 0)
    names = case["params_file_names"]
    assert list(arg) == [n[4:] for n in names if n.startswith("arg:")]
    assert list(aux) == [n[4:] for n in names if n.startswith("aux:")]
    assert sorted(sym.list_auxiliary_states()) == sorted(aux)
    assert set(sym.list_arguments()) == set(arg) | set(case["input_names"])

    args = dict(arg)
    args.update({n: nd.array(x, dtype=x.dtype) for n, x in zip(case["input_names"], inputs)})
    outs = sym.bind(mx.cpu(), args=args, aux_states=aux).forward(is_train=False)
    assert len(outs) == len(outputs)
    for o, ref in zip(outs, outputs):
        np.testing.assert_allclose(o.asnumpy(), ref, **tol)

    # re-saved through save_checkpoint it loads back identically; without aux states (whose
    # names MXNet's export interleaves with the arguments) the params file is byte-identical
    prefix = str(tmp_path / "again")
    model.save_checkpoint(prefix, 0, sym, arg, aux)
    assert open(prefix + "-symbol.json").read() == open(os.path.join(d, "model-symbol.json")).read()
    if not aux:
        assert open(prefix + "-0000.params", "rb").read() == open(os.path.join(d, "model-0000.params"), "rb").read()
    sym2, arg2, aux2 = model.load_checkpoint(prefix, 0)
    for src, dst in ((arg, arg2), (aux, aux2)):
        assert list(dst) == list(src)
        for k in src:
            np.testing.assert_array_equal(dst[k].asnumpy(), src[k].asnumpy())


@needs_fixtures
def test_fixture_with_aux_states_splits_them():
    name = "convbn" if "convbn" in CASES else None
    if name is None:
        pytest.skip("convbn fixture missing")
    _, arg, aux = model.load_checkpoint(os.path.join(FIXTURES, name, "model"), 0)
    assert sorted(aux) == ["hybridsequential0_batchnorm0_running_mean", "hybridsequential0_batchnorm0_running_var"]
    assert "hybridsequential0_batchnorm0_gamma" in arg and not any("running" in k for k in arg)
    # MXNet trained these for 3 SGD steps: the running statistics are not the initial 0 / 1
    assert not np.allclose(aux["hybridsequential0_batchnorm0_running_mean"].asnumpy(), 0)


@pytest.mark.parametrize("name, shape", [("fc_bias", (1,)), ("fc_weight", (4, 1)), ("bn_moving_var", (2,))])
def test_module_checkpoint_with_a_wrong_shape_is_refused_at_bind(tmp_path, name, shape):
    # a (1,) bias used to be broadcast into every element: wrong outputs, no error
    rng = np.random.RandomState(0)
    sym, (arg, aux) = _net(), _params(rng)
    (arg if name in arg else aux)[name] = nd.array(rng.randn(*shape))
    prefix = str(tmp_path / "net")
    model.save_checkpoint(prefix, 3, sym, arg, aux)
    mod = mx.mod.Module.load(prefix, 3, label_names=None)
    kind = "argument" if name in arg else "auxiliary state"
    with pytest.raises(MXNetError, match=(
            rf"net-0003\.params: copy_params_from: {kind} '{name}' has shape \({shape[0]},{'' if len(shape) == 1 else ' 1'}\), "
            rf"but the bound graph expects \(4,{'' if len(shape) == 1 else ' 3'}\)")):
        mod.bind(data_shapes=[("data", (2, 3))], for_training=False)


def test_module_set_params_and_executor_refuse_a_wrong_shape():
    rng = np.random.RandomState(0)
    sym, (arg, aux) = _net(), _params(rng)
    mod = mx.mod.Module(sym, label_names=None)
    mod.bind(data_shapes=[("data", (2, 3))], for_training=False)
    mod.init_params(arg_params=arg, aux_params=aux)
    bad = dict(arg, fc_bias=nd.array([1.0]))
    with pytest.raises(MXNetError, match=r"'fc_bias' has shape \(1,\), the module expects \(4,\)"):
        mod.set_params(bad, aux)
    exe = sym.simple_bind(mx.cpu(), data=(2, 3))
    with pytest.raises(MXNetError, match=r"auxiliary state 'bn_moving_mean' has shape \(5,\)"):
        exe.copy_params_from(arg, dict(aux, bn_moving_mean=nd.zeros((5,))))
    exe.copy_params_from(arg, aux)  # right shapes still copy (dtype cast as MXNet's astype)
    np.testing.assert_array_equal(exe.arg_dict["fc_bias"].asnumpy(), arg["fc_bias"].asnumpy())
