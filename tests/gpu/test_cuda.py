"""hybridnet on a CUDA device (skipped without one): the same results on mx.gpu() as on the CPU,
eager and hybridized, forward and gradients, training steps, fused RNNs, NumPy mode, export from
a GPU model to a CPU import, and to_torch. TF32 is off so float32 results compare at 1e-4."""
import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet import autograd, gluon, nd
from hybridnet.gluon import nn, rnn

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(autouse=True)
def exact_float32():
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def _close(a, b, tol=1e-4):
    a, b = a.asnumpy(), b.asnumpy()
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, float(np.abs(b).max())))


def _twin(make, shape, hybridize):
    """(cpu net, gpu net) with the same weights, and one input for each."""
    mx.random.seed(0)
    nets = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        net = make()
        net.initialize(mx.init.Xavier(), ctx=mx.cpu())
        nets.append(net)
    x = nd.array(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    nets[0](x)
    nets[1](x)
    for (k, a), b in zip(nets[0].collect_params().items(), nets[1].collect_params().values()):
        b.set_data(a.data())
    nets[1].collect_params().reset_ctx(mx.gpu(0))
    if hybridize:
        for n in nets:
            n.hybridize()
    return nets, x, x.as_in_context(mx.gpu(0))


def test_arrays_live_on_the_gpu():
    a = nd.array([1.0, 2.0, 3.0], ctx=mx.gpu(0))
    assert a.context == mx.gpu(0) and a._t.is_cuda
    b = (a * 2 + 1).sum()
    assert b.context == mx.gpu(0) and float(b.asscalar()) == 15.0
    assert mx.context.num_gpus() >= 1


@pytest.mark.parametrize("hybridize", [False, True])
def test_resnet_forward_and_gradients_match_the_cpu(hybridize):
    from hybridnet.gluon.model_zoo import vision
    (cpu, gpu), x, xg = _twin(lambda: vision.get_model("resnet18_v1", classes=10), (4, 3, 32, 32), hybridize)
    outs = []
    for net, inp in ((cpu, x), (gpu, xg)):
        with autograd.record():
            y = net(inp)
            loss = (y * y).sum()
        loss.backward()
        outs.append(y)
    assert outs[1].context == mx.gpu(0)
    _close(outs[1], outs[0])
    for a, b in zip(cpu.collect_params().values(), gpu.collect_params().values()):
        if a.grad_req != "null":
            _close(b.grad(mx.gpu(0)), a.grad(), 1e-3)


def test_training_steps_match_the_cpu():
    def mlp():
        net = nn.HybridSequential()
        net.add(nn.Dense(32, activation="relu"), nn.BatchNorm(), nn.Dense(5))
        return net
    (cpu, gpu), x, xg = _twin(mlp, (8, 12), True)
    label = nd.array(np.arange(8) % 5)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for net, inp, lab in ((cpu, x, label), (gpu, xg, label.as_in_context(mx.gpu(0)))):
        trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
        for _ in range(3):
            with autograd.record():
                loss = loss_fn(net(inp), lab)
            loss.backward()
            trainer.step(8)
    for a, b in zip(cpu.collect_params().values(), gpu.collect_params().values()):
        _close(b.data(mx.gpu(0)), a.data(), 1e-3)


def test_fused_lstm_matches_the_cpu():
    (cpu, gpu), x, xg = _twin(lambda: rnn.LSTM(16, num_layers=2, bidirectional=True), (5, 3, 8), True)
    _close(gpu(xg), cpu(x))


def test_numpy_mode_on_the_gpu():
    from hybridnet import np as mnp, npx
    npx.set_np()
    try:
        a = mnp.arange(6, ctx=npx.gpu(0)).reshape(2, 3)
        b = (a @ a.T + 1).sum(axis=0)
        assert b.ctx == npx.gpu(0)
        ref = np.arange(6.0).reshape(2, 3)
        np.testing.assert_allclose(b.asnumpy(), (ref @ ref.T + 1).sum(axis=0))
    finally:
        npx.reset_np()


def test_a_gpu_model_exports_and_imports_on_the_cpu(tmp_path):
    (cpu, gpu), x, xg = _twin(lambda: nn.Dense(3), (2, 4), True)
    ref = gpu(xg)
    gpu.export(str(tmp_path / "m"))
    back = gluon.SymbolBlock.imports(str(tmp_path / "m-symbol.json"), ["data"], str(tmp_path / "m-0000.params"))
    _close(back(x), ref.as_in_context(mx.cpu()))


def test_to_torch_runs_on_the_gpu():
    (cpu, gpu), x, xg = _twin(lambda: nn.Dense(3), (2, 4), True)
    mod = gpu.to_torch(xg)
    with torch.no_grad():
        got = mod(torch.from_numpy(x.asnumpy()).cuda())
    assert got.is_cuda
    np.testing.assert_allclose(got.cpu().numpy(), gpu(xg).asnumpy(), rtol=1e-5, atol=1e-6)
