"""gluon.contrib.cnn: deformable convolution layers (MXNet's parameters, zero-initialized
offsets reduce them to Conv2D, eager == hybridized outputs and gradients)."""
from __future__ import annotations

import numpy as np
import pytest

import hybridnet as mx
from hybridnet import gluon, nd
from hybridnet.base import MXNetError
from hybridnet.gluon.contrib.cnn import DeformableConvolution, ModulatedDeformableConvolution


@pytest.mark.parametrize("cls, maps", [(DeformableConvolution, 2), (ModulatedDeformableConvolution, 3)])
def test_parameters_and_zero_offsets_give_conv2d(cls, maps):
    layer = cls(6, kernel_size=(3, 2), padding=(1, 0), num_deformable_group=2, in_channels=4)
    layer.initialize(mx.init.Xavier())
    shapes = {k: v.shape for k, v in layer.collect_params().items()}
    prefix = layer.prefix
    assert shapes[prefix + "offset_weight"] == (maps * 12, 4, 3, 2)
    assert shapes[prefix + "deformable_conv_weight"] == (6, 4, 3, 2)
    x = nd.array(np.random.RandomState(0).rand(2, 4, 5, 6))
    conv = gluon.nn.Conv2D(6, (3, 2), padding=(1, 0), in_channels=4)
    conv.initialize()
    conv.weight.set_data(layer.deformable_conv_weight.data())
    conv.bias.set_data(layer.deformable_conv_bias.data())
    # offsets 0 (zero init); the modulated layer's masks are 2 * sigmoid(0) = 1
    np.testing.assert_allclose(layer(x).asnumpy(), conv(x).asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [DeformableConvolution, ModulatedDeformableConvolution])
def test_eager_equals_hybridized_with_gradients(cls):
    def run(hybridize):
        mx.random.seed(1)
        net = gluon.nn.HybridSequential()
        net.add(cls(5, kernel_size=3, padding=1, activation="relu", offset_weight_initializer=mx.init.Normal(0.1)),
                cls(3, kernel_size=(1, 3), use_bias=False, offset_use_bias=False))
        net.initialize(mx.init.Xavier())
        if hybridize:
            net.hybridize()
        x = nd.array(np.random.RandomState(2).rand(2, 3, 6, 7))
        with mx.autograd.record():
            y = net(x)
        y.backward()
        return y.asnumpy(), [v.grad().asnumpy() for v in net.collect_params().values()]
    y0, g0 = run(False)
    y1, g1 = run(True)
    np.testing.assert_allclose(y0, y1, rtol=1e-5, atol=1e-6)
    assert len(g0) == len(g1) == 6
    for a, b in zip(g0, g1):
        assert a.any()
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_repr_and_layout_error():
    layer = ModulatedDeformableConvolution(8, kernel_size=3, padding=1, use_bias=False)
    assert repr(layer) == "ModulatedDeformableConvolution(None -> 8, kernel_size=(3, 3), stride=(1, 1), " \
                          "padding=(1, 1), bias=False)"
    assert hasattr(gluon.contrib.cnn, "ModulatedDeformableConvolution")
    with pytest.raises(MXNetError, match="NCHW"):
        DeformableConvolution(4, layout="NHWC")
