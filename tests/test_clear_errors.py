"""Common mistakes get errors that say what happened, with the values, and how to fix it."""
import re

import numpy as np
import pytest
import torch

import hybridnet as mx
from hybridnet import nd
from hybridnet.base import MXNetError
from hybridnet.gluon import nn

ACTIVATIONS = ["relu", "sigmoid", "softrelu", "softsign", "tanh"]


# ---- activation names ------------------------------------------------------------------------
def test_unknown_activation_in_eager_mode_lists_the_valid_names():
    with pytest.raises(MXNetError, match=r"unknown act_type 'foo'") as e:
        nd.Activation(nd.ones((2, 3)), act_type="foo")
    assert all(a in str(e.value) for a in ACTIVATIONS)


def test_unknown_activation_layer_fails_at_construction():
    with pytest.raises(ValueError, match=r"unknown activation 'rleu'") as e:
        nn.Activation("rleu")
    assert all(a in str(e.value) for a in ACTIVATIONS)
    with pytest.raises(ValueError, match=r"unknown activation 'foo'"):
        nn.Dense(3, activation="foo")
    for a in ACTIVATIONS:  # every valid name still builds and runs
        np.testing.assert_equal(nn.Activation(a)(nd.zeros((1, 2))).shape, (1, 2))


def test_unknown_leaky_relu_type_is_not_taken_for_rrelu():
    with pytest.raises(MXNetError, match=r"LeakyReLU: unknown act_type 'foo'.*'rrelu'"):
        nd.LeakyReLU(nd.ones((2, 3)), act_type="foo")


# ---- devices ---------------------------------------------------------------------------------
@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_gpu_context_without_cuda_fails_clearly_when_used():
    ctx = mx.gpu()  # creating it works, as in MXNet
    assert str(ctx) == "gpu(0)"
    net = nn.Dense(2, in_units=3)
    with pytest.raises(MXNetError, match=r"cannot use context gpu\(0\): no CUDA device.*mx\.cpu\(\)"):
        net.initialize(ctx=ctx)
    with pytest.raises(MXNetError, match=r"cannot use context gpu\(0\): no CUDA device"):
        nd.random.uniform(shape=(2,), ctx=ctx)
    with pytest.raises(MXNetError, match=r"cannot use context gpu\(3\)"):
        mx.context.gpu_memory_info(3)


# ---- convolution inputs ----------------------------------------------------------------------
def _conv(hybridize, **kw):
    net = nn.Conv2D(4, 3, in_channels=3, prefix="myconv_", **kw)
    net.initialize()
    if hybridize:
        net.hybridize()
    return net


@pytest.mark.parametrize("hybridize", [False, True])
def test_convolution_with_wrong_channels_names_layer_expected_and_got(hybridize):
    with pytest.raises(MXNetError) as e:
        _conv(hybridize)(nd.ones((1, 5, 8, 8)))
    msg = str(e.value)
    assert "myconv" in msg  # the layer (eager) or its node myconv_fwd (hybridized)
    assert "has 5 channels" in msg and "expects 3" in msg and "in_channels=3" in msg
    assert "(1, 5, 8, 8)" in msg


@pytest.mark.parametrize("hybridize", [False, True])
def test_convolution_with_wrong_rank_names_layer_expected_and_got(hybridize):
    with pytest.raises(MXNetError) as e:
        _conv(hybridize)(nd.ones((1, 3, 8)))
    msg = str(e.value)
    assert "myconv" in msg
    assert "2-D kernel (3, 3) needs 4-D input" in msg and "(1, 3, 8)" in msg


def test_channels_last_and_grouped_convolution_errors_count_channels_right():
    x = nd.ones((1, 6, 6, 5))  # NHWC with 5 channels, weight made for 3
    w = nd.ones((4, 3, 3, 3))
    with pytest.raises(MXNetError, match=r"has 5 channels \(axis 3 .*expects 3"):
        nd.Convolution(x, w, kernel=(3, 3), num_filter=4, no_bias=True, layout="NHWC")
    with pytest.raises(MXNetError, match=r"has 3 channels .*expects 4 \(in_channels=4, num_group=2\)"):
        nd.Convolution(nd.ones((1, 3, 5, 5)), nd.ones((4, 2, 3, 3)), kernel=(3, 3), num_filter=4,
                       num_group=2, no_bias=True)
    with pytest.raises(MXNetError, match=r"Deconvolution: the input has 5 channels .*expects 3"):
        nd.Deconvolution(nd.ones((1, 5, 4, 4)), nd.ones((3, 2, 3, 3)), kernel=(3, 3), num_filter=2)


def test_fully_connected_with_wrong_features_says_how_many():
    with pytest.raises(MXNetError, match=r"has 6 features .*expects 5 \(in_units=5\)"):
        nd.FullyConnected(nd.ones((2, 3, 2)), nd.ones((4, 5)), nd.ones((4,)), num_hidden=4)


# ---- dtypes ----------------------------------------------------------------------------------
def _layers():
    return [("Dense", lambda: nn.Dense(3, in_units=4), (2, 4)),
            ("Conv2D", lambda: nn.Conv2D(3, 3, in_channels=2), (1, 2, 5, 5))]


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("layer", ["Dense", "Conv2D"])
def test_float64_input_into_float32_layer_hints_astype_and_cast(layer, hybridize):
    make, shape = {n: (m, s) for n, m, s in _layers()}[layer]
    net = make()
    net.initialize()
    if hybridize:
        net.hybridize()
    with pytest.raises(MXNetError) as e:
        net(nd.ones(shape, dtype="float64"))
    msg = str(e.value)
    assert net.name in msg
    assert "float64" in msg and "float32" in msg
    assert "x.astype('float32')" in msg and "net.cast('float64')" in msg
    net.cast("float64")  # the suggested fix works
    assert net(nd.ones(shape, dtype="float64")).dtype == np.float64


@pytest.mark.parametrize("hybridize", [False, True])
def test_integer_input_into_float_layer_hints_astype_only(hybridize):
    net = nn.Dense(3, in_units=4)
    net.initialize()
    if hybridize:
        net.hybridize()
    with pytest.raises(MXNetError) as e:
        net(nd.ones((2, 4), dtype="int32"))
    msg = str(e.value)
    assert net.name in msg and "int32" in msg and "x.astype('float32')" in msg
    assert "net.cast('int32')" not in msg


def test_deferred_init_with_float64_input_names_node_and_fix():
    net = nn.Conv2D(3, 3)
    net.initialize()
    with pytest.raises(MXNetError, match=re.escape(f"'{net.name}_fwd'") + r".*float64.*x\.astype\('float32'\)"):
        net(nd.ones((1, 2, 5, 5), dtype="float64"))


# ---- zero-size batches -----------------------------------------------------------------------
@pytest.mark.parametrize("hybridize", [False, True])
def test_zero_size_batch_flows_through_flatten_and_dense(hybridize):
    net = nn.HybridSequential()
    net.add(nn.Flatten(), nn.Dense(5, in_units=12))
    net.initialize()
    if hybridize:
        net.hybridize()
    out = net(nd.array(np.ones((0, 3, 4))))  # nd.ones((0, ...)) needs mx.np_shape, as in MXNet
    assert out.shape == (0, 5)
    assert nd.Flatten(nd.array(np.ones((0, 3, 4)))).shape == (0, 12)
    assert nd.Flatten(nd.array(np.ones((2, 0, 3)))).shape == (2, 0)
    np.testing.assert_array_equal(nd.Flatten(nd.arange(24).reshape((2, 3, 4))).asnumpy(),
                                  np.arange(24).reshape(2, 12))


# ---- layer arguments that cannot work --------------------------------------------------------
@pytest.mark.parametrize("make, pattern", [
    (lambda: nn.Dense(-2), r"Dense: units must be an integer >= 0, got -2"),
    (lambda: nn.Dense(2.5), r"Dense: units must be an integer >= 0, got 2.5"),
    (lambda: nn.Dense(3, in_units=-1), r"Dense: in_units must be an integer >= 0, got -1"),
    (lambda: nn.Conv2D(4, 0), r"Conv2D: kernel_size must be positive integers, got \(0, 0\)"),
    (lambda: nn.Conv2D(4, (3, -1)), r"Conv2D: kernel_size must be positive integers, got \(3, -1\)"),
    (lambda: nn.Conv2D(0, 3), r"Conv2D: channels must be a positive integer, got 0"),
    (lambda: nn.Conv2D(4, 3, strides=0), r"Conv2D: strides must be positive integers, got \(0, 0\)"),
    (lambda: nn.Conv1D(4, 3, dilation=0), r"Conv1D: dilation must be positive integers, got \(0,\)"),
    (lambda: nn.Conv2D(4, 3, padding=-1), r"Conv2D: padding must be integers >= 0, got \(-1, -1\)"),
    (lambda: nn.Conv2DTranspose(4, 3, output_padding=-1), r"output_padding must be integers >= 0"),
    (lambda: nn.Conv3DTranspose(4, (2, 0, 2)), r"Conv3DTranspose: kernel_size must be positive"),
    (lambda: nn.MaxPool2D(pool_size=0), r"MaxPool2D: pool_size must be positive integers, got \(0, 0\)"),
    (lambda: nn.AvgPool1D(strides=0), r"AvgPool1D: strides must be positive integers, got \(0,\)"),
    (lambda: nn.MaxPool2D(padding=-1), r"MaxPool2D: padding must be integers >= 0"),
    (lambda: nn.Embedding(0, 4), r"Embedding: input_dim must be a positive integer, got 0"),
    (lambda: nn.Embedding(10, -4), r"Embedding: output_dim must be a positive integer, got -4"),
])
def test_impossible_layer_arguments_fail_at_construction(make, pattern):
    with pytest.raises(ValueError, match=pattern):
        make()


@pytest.mark.parametrize("hybridize", [False, True])
def test_dense_with_zero_units_builds_but_fails_clearly_at_the_first_call(hybridize):
    """MXNet code makes Dense(0) placeholders (MXNet's own test_block_attr_list_of_block does),
    so building one works; using it is the mistake, and no longer yields an empty output."""
    net = nn.Dense(0, in_units=3)
    net.initialize()
    if hybridize:
        net.hybridize()
    with pytest.raises(MXNetError, match=re.escape(f"Dense '{net.name}' was built with units=0")):
        net(nd.ones((2, 3)))


def test_valid_layer_arguments_still_build():
    nn.Dense(np.int64(3), in_units=0)
    nn.Conv2D(4, (3, 1), strides=(2, 1), padding=(1, 0), dilation=2, in_channels=2)
    nn.Conv1DTranspose(2, 3, output_padding=1, strides=2)
    nn.MaxPool2D(pool_size=(2, 3), strides=1, padding=1)
    nn.GlobalAvgPool2D()
    nn.Embedding(5, 2)


# ---- hybridize flags -------------------------------------------------------------------------
def test_misspelled_hybridize_flag_is_rejected_with_the_valid_ones():
    net = nn.Dense(2, in_units=3)
    with pytest.raises(TypeError, match=r"unknown flag\(s\) \['static_aloc'\] \(did you mean "
                                        r"'static_alloc'\?\); valid flags are .*'static_shape'"):
        net.hybridize(static_aloc=True)
    seq = nn.HybridSequential()
    seq.add(nn.Dense(2))
    with pytest.raises(TypeError, match=r"HybridSequential.hybridize\(\) got unknown flag\(s\) \['static_shap'\]"):
        seq.hybridize(static_shap=True)
    plain = nn.Sequential()  # a non-hybrid container checks too, even without hybrid children
    with pytest.raises(TypeError, match=r"Sequential.hybridize\(\) got unknown flag\(s\) \['fast'\]"):
        plain.hybridize(fast=True)


def test_every_mxnet_hybridize_flag_is_accepted_and_clear_false_keeps_the_graph():
    net = nn.Dense(2, in_units=3)
    net.initialize()
    net.hybridize(active=True, backend=None, backend_opts=None, static_alloc=True, static_shape=True,
                  inline_limit=2, forward_bulk_size=15, backward_bulk_size=15, partition_if_dynamic=True)
    x = nd.ones((1, 3))
    net(x)
    op = net._cached_op
    net.hybridize(clear=False, static_alloc=True)
    assert net._cached_op is op
    net.hybridize()
    assert net._cached_op is None
    net(x)
    assert net._cached_op is not None
