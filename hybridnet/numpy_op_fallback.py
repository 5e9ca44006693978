"""``mx.numpy_op_fallback``: NumPy functions ``mx.np`` computes with official NumPy.

MXNet registers such fallbacks as custom operators; hybridnet's are plain wrappers in
:mod:`hybridnet.numpy.fallback` (the array goes to NumPy and comes back as an mx.np array,
recorded by autograd as not differentiable, as in MXNet). This module is MXNet's name for them.
"""
from __future__ import annotations

from .numpy.fallback import *  # noqa: F401,F403
from .numpy.fallback import __all__  # noqa: F401
