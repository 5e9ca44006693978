"""Shape rules shared by operator families.

Backward rules give input shapes from known output shapes (MXNet infers in both directions;
Gluon's fused RNN layers rely on it for a deferred ``input_size``). Forward rules
(``infer_shape=``) give output shapes from fully known input shapes, so that inference need not
run the kernel on torch's "meta" device: the first meta run of most kernels imports torch's
Python decompositions (and sympy, torch._dynamo...), over a second once per process. A forward
rule returns None for inputs that do not fit the operator; inference then makes the meta run,
which raises the kernel's own error.
"""
from __future__ import annotations

from typing import Any, Optional

__all__ = ["concat_inputs", "rnn_param_concat_inputs", "reshape_input", "same_shape_inputs",
           "unknown_until_inputs_known", "unknown_along_unknown_axes", "creation_shape",
           "first_input_shape", "first_input_dtype", "concat_shape", "broadcast_shape", "broadcast_shapes",
           "torch_spatial"]


def _merged(shapes: list) -> Optional[tuple]:
    """What partial shapes (None: unknown rank, 0: unknown dim) of one value say together;
    None when they disagree (the caller's shape check reports it)."""
    out: Optional[list] = None
    for s in shapes:
        if s is None:
            continue
        if out is None:
            out = list(s)
            continue
        if len(s) != len(out):
            return None
        for i, d in enumerate(s):
            if d and out[i] and d != out[i]:
                return None
            out[i] = out[i] or d
    return None if out is None else tuple(out)


def same_shape_inputs(attrs: dict, ins: list, outs: list) -> list:
    """Elementwise operators on equal shapes (MXNet's elemwise_*): every input has the shape
    all inputs and the output say together."""
    merged = _merged(list(ins) + list(outs))
    return ins if merged is None else [merged] * len(ins)


def concat_inputs(attrs: dict, ins: list, outs: list) -> list:
    """Concat: the axes other than ``dim`` are the output's; one input whose size along
    ``dim`` is unknown gets the remainder."""
    out = outs[0]
    dim = attrs.get("dim", 1)
    if out is None:
        return ins
    d = dim % len(out)
    ins = [s if s is None or len(s) != len(out) else
           tuple(o if i != d and not v else v for i, (v, o) in enumerate(zip(s, out))) for s in ins]
    unknown = [i for i, s in enumerate(ins) if s is None or 0 in s]
    if len(unknown) != 1 or not out[d]:
        return ins
    known = sum(s[d] for i, s in enumerate(ins) if i != unknown[0] and len(s) == len(out))
    shape = list(out)
    shape[d] = out[d] - known
    res = list(ins)
    res[unknown[0]] = tuple(shape)
    return res


def rnn_param_concat_inputs(attrs: dict, ins: list, outs: list) -> list:
    """_rnn_param_concat: like Concat, but several unknown inputs share the remainder equally
    (they are the i2h weights of the first layer, one per direction: MXNet's rule too)."""
    out = outs[0]
    unknown = [i for i, s in enumerate(ins) if s is None or 0 in s]
    if out is None or len(out) != 1 or not unknown or any(len(s) != 1 for s in ins if s is not None):
        return concat_inputs(attrs, ins, outs)
    rest = out[0] - sum(s[0] for i, s in enumerate(ins) if i not in unknown)
    if rest <= 0 or rest % len(unknown):
        return ins
    return [(rest // len(unknown),) if i in unknown else s for i, s in enumerate(ins)]


def reshape_input(attrs: dict, ins: list, outs: list) -> list:
    """Reshape: a partially known input (one 0 dim) takes the size the output implies."""
    src: Optional[tuple] = ins[0]
    out = outs[0]
    if src is None or out is None or list(src).count(0) != 1:
        return ins
    total = 1
    for d in out:
        total *= d
    known = 1
    for d in src:
        if d:
            known *= d
    if known == 0 or total % known:
        return ins
    return [tuple(total // known if d == 0 else d for d in src)] + list(ins[1:])


# ---- partial forward rules (``partial_outputs``): what MXNet reports for partial inputs -------
def unknown_until_inputs_known(attrs: dict, ins: list, outs: list) -> list:
    """Nothing is known of the outputs until every input shape is (MXNet's ``where``)."""
    return [None] * len(outs)


def unknown_along_unknown_axes(attrs: dict, ins: list, outs: list) -> list:
    """An output dimension along an axis whose input size is unknown stays unknown, even where
    the slice bounds would fix it (MXNet's ``slice``/``slice_axis``)."""
    data = ins[0]
    return [o if o is None or data is None or len(o) != len(data)
            else tuple(0 if d == 0 else x for d, x in zip(data, o)) for o in outs]


def creation_shape(attrs: dict, shapes: list) -> list:
    """Output shape of an array-creating operator: a ``shape`` attribute dimension <= 0 is
    unknown and left to inference (MXNet: ``sym.zeros((L, 0, H))`` as an RNN begin state,
    ``sym.ones((-1, -1))`` sized by its consumer)."""
    shape = attrs.get("shape", ())
    if isinstance(shape, int):
        shape = (shape,)
    return [tuple(int(d) if int(d) > 0 else 0 for d in shape)]


def first_input_shape(attrs: dict, shapes: list) -> list:
    """The output has the (first) input's shape: elementwise operators. An explicit rule also
    spares inference torch's meta run, whose first use of an elementwise kernel imports torch's
    Python decompositions (about a second, once per process)."""
    return [tuple(shapes[0])]


def broadcast_shape(a: tuple, b: tuple) -> Optional[tuple]:
    """NumPy/torch broadcasting of two shapes; None when they do not broadcast."""
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def broadcast_shapes(attrs: dict, shapes: list) -> Optional[list]:
    """Binary operators (broadcast_* and elemwise_*, which broadcast too): the inputs' shapes
    broadcast together."""
    out = broadcast_shape(shapes[0], shapes[1])
    return None if out is None else [out]


def torch_spatial(value: Any, n: int, default: int) -> Optional[tuple]:
    """An n-tuple from a stride/pad/dilate attribute as torch's convolutions read it (empty:
    ``default``; one value: repeated); None for any other length. An n-tuple (what the attribute
    parser makes) comes back as it is: kernels call this on every call."""
    if type(value) is tuple and len(value) == n:
        return value
    if isinstance(value, int):
        return (value,) * n
    if not value:
        return (default,) * n
    t = tuple(int(v) for v in value)
    if len(t) == 1:
        return t * n
    return t if len(t) == n else None


def first_input_dtype(attrs: dict, dtypes: list) -> list:
    """The output has the first input's dtype whatever the others' (an optimizer update returns
    the weight's dtype; boolean_mask the data's)."""
    return [dtypes[0]]


def concat_shape(attrs: dict, shapes: list) -> Optional[list]:
    """Concat (and _rnn_param_concat): the inputs joined along ``dim``; its sizes add up and
    every other axis must agree."""
    if not shapes:
        return None
    first = tuple(shapes[0])
    d = int(attrs["dim"])
    d = d + len(first) if d < 0 else d
    if not 0 <= d < len(first):
        return None
    total = 0
    for s in shapes:
        if len(s) != len(first) or any(a != b for i, (a, b) in enumerate(zip(s, first)) if i != d):
            return None
        total += s[d]
    return [first[:d] + (total,) + first[d + 1:]]
