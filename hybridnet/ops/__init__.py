"""THE operator registry and every operator family (importing this registers them all)."""
from . import registry, attrs  # noqa: F401
from . import elementwise  # noqa: F401
from .registry import OpDef, Sample, register, get, find, all_ops  # noqa: F401

# Every operator family, in import order (a family may look up operators of earlier ones).
from . import creation, reduce, linalg, shape, index, nn, norm, rnn, random  # noqa: F401,E402
from . import contrib, image, optimizer_ops, misc, fused, quantization, deformable, custom, proposal, rroi_align, unique_zipfian  # noqa: F401,E402
from . import control_flow  # noqa: F401,E402
from . import quantized_ops  # noqa: F401,E402  (MXNet's int8 operators, on int8_kernels)
from . import numpy_ops  # noqa: F401,E402  (mx.np / mx.npx: new operators and MXNet's aliases)
from . import sparse  # noqa: F401,E402  (sparse rules of the operators above)
