"""Channels-last activations for the 2-D convolutions of a hybridized graph, for predict-mode
calls of the default function (``CachedOp`` compiles it beside the NCHW one, which recording and
training keep: see ``cached_op.compile_predict_function``).

torch's oneDNN convolutions run faster on channels-last (NHWC-strided) inputs than on NCHW ones
(forward 1.2-2x, depthwise 2x on the zoo's layers; the first layer of an ImageNet network at
224x224 5x) and produce channels-last outputs, which the operators between convolutions
(BatchNorm, activations, pooling, additions) keep. MXNet's MKLDNN build gets the same effect by
keeping convolution outputs in oneDNN's blocked layout between operators.

Each 2-D NCHW Convolution with at least ``MIN_FILTERS`` filters, or grouped, reads its data
through ``_channels_last`` (a no-op where oneDNN does not run the convolution: not CPU float32,
or already channels-last). Narrower convolutions stay NCHW: on the seed LeNet (6 and 16 filters)
the layout's conversions cost more than its kernels save (3-4% slower, measured). Graph outputs
computed from a converted value leave through ``_contiguous``, so callers see row-major arrays
as before. Values are those of the NCHW kernels to float rounding (the accumulation order
differs); gradients would flow through both operators.
"""
from __future__ import annotations

from typing import Any

from ...ir.graph import Graph, Node, transform
from ...ops import handles
from .onednn import attr, is_conv2d_nchw, leave_channels_last

__all__ = ["channels_last_convolutions", "ENABLED", "MIN_FILTERS"]

#: Switch for the pass (``benchmarks/layout.py`` turns it off to time the NCHW function).
ENABLED = True
#: Convolutions with fewer filters (and one group) keep NCHW input.
MIN_FILTERS = 32


def _wants_channels_last(node: Node) -> bool:
    return is_conv2d_nchw(node) and (int(attr(node, "num_filter")) >= MIN_FILTERS
                                     or int(attr(node, "num_group")) > 1)


def channels_last_convolutions(graph: Graph) -> Graph:
    """``graph`` with the data of each wide or grouped 2-D NCHW Convolution read through
    ``_channels_last`` (one conversion per value, however many convolutions read it)."""
    if not ENABLED or not any(_wants_channels_last(n) for n in graph.nodes):
        return graph
    to_cl = handles.channels_last
    made: dict = {}  # (id(source node), output index) -> its _channels_last entry

    def visit(node: Node, inputs: tuple) -> Any:
        if not _wants_channels_last(node):
            return None
        src, k = inputs[0]
        if src.op is not to_cl:
            if (id(src), k) not in made:
                made[(id(src), k)] = (Node(to_cl, f"{src.name}_channels_last{k}", {}, ((src, k),)), 0)
            inputs = (made[(id(src), k)],) + tuple(inputs[1:])
        return [(node.with_inputs(inputs), 0)]

    return Graph(leave_channels_last(transform(graph.outputs, visit), to_cl))
