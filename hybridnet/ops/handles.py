"""The operators that the compiler's rewrites build, or match by identity, as OpDef objects.

A pass that rewrites one pattern (BatchNorm folded into weights built from ``rsqrt`` and
``broadcast_mul``; a 2-D ``Convolution`` turned into ``_fused_conv``; ``-pick(log_softmax(x))``
turned into ``_fused_softmax_ce``) takes its operators from here, so that no compiler module
spells an operator's name (tests/compiler/test_no_op_names.py). Facts that hold for several
operators (views, identities, in-place writes, fusable activations...) are fields of OpDef.
"""
from __future__ import annotations

from .registry import get

# producers the oneDNN and layout passes rewrite
Convolution = get("Convolution")
FullyConnected = get("FullyConnected")
# additions a convolution absorbs (``_add_act``, ``_fused_conv``'s residual)
elemwise_add = get("elemwise_add")
broadcast_add = get("broadcast_add")
# BatchNorm folding's arithmetic on the parameters
rsqrt = get("rsqrt")
plus_scalar = get("_plus_scalar")
elemwise_mul = get("elemwise_mul")
elemwise_sub = get("elemwise_sub")
negative = get("negative")
broadcast_mul = get("broadcast_mul")
Reshape = get("Reshape")
# Gluon's SoftmaxCrossEntropyLoss: mean(-pick(log_softmax(x), label))
log_softmax = get("log_softmax")
pick = get("pick")
mul_scalar = get("_mul_scalar")
mean = get("mean")
# what the rewrites make
copy = get("_copy")
zeros = get("_zeros")
batchnorm_act = get("_batchnorm_act")
add_act = get("_add_act")
act = get("_act")
fused_conv = get("_fused_conv")
onednn_conv_weight = get("_onednn_conv_weight")
fused_linear = get("_fused_linear")
onednn_linear_weight = get("_onednn_linear_weight")
fused_softmax_ce = get("_fused_softmax_ce")
channels_last = get("_channels_last")
contiguous = get("_contiguous")
# the predict-mode int8 fusion (compiler/passes/int8.py) makes these of MXNet's quantized layers
int8_conv = get("_int8_conv")
int8_fully_connected = get("_int8_fully_connected")
