"""``codegen.eager_layout``: a view handed on in the layout eager mode's copy of it has.

Eager operators return new memory (``NDArray`` clones a view; ``clone`` keeps the strides of a
view that covers its memory without gaps and packs any other). The compiled training function
must hand the next kernel the same strides, or reductions round differently; it copies only
where the copy's strides differ from the view's.
"""
from __future__ import annotations

import pytest
import torch

from hybridnet.compiler.codegen import eager_layout

BASE = torch.arange(4 * 6 * 5 * 3, dtype=torch.float32).reshape(4, 6, 5, 3)

VIEWS = {
    "contiguous slice": (lambda x: x[1:3], False),
    "reshape": (lambda x: x.reshape(24, 15), False),
    "transpose": (lambda x: x.transpose(1, 3), False),
    "channels-last permute": (lambda x: x.permute(0, 2, 3, 1), False),
    "slice with gaps": (lambda x: x[:, 1:4], True),
    "strided slice": (lambda x: x[:, :, ::2], True),
    "broadcast": (lambda x: x[:, :1].expand(4, 6, 5, 3), True),
    "transposed slice": (lambda x: x[:, 2:5].transpose(2, 3), True),
    "size-one axes": (lambda x: x[:1, :, :1, :], True),
    "leading size-one slice": (lambda x: x[2:3], False),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_layout_is_that_of_eager_modes_copy(name):
    make, copies = VIEWS[name]
    view = make(BASE)
    out = eager_layout(view)
    assert out.stride() == view.clone().stride()
    assert torch.equal(out, view)
    assert (out.data_ptr() != view.data_ptr()) is copies
