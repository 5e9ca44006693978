"""Sample references that are computed rather than written as NumPy one-liners are checked
against published values, so the registry tests compare the kernels with something right."""
from __future__ import annotations

import math

import numpy as np

from hybridnet.ops import registry
from hybridnet.ops.elementwise import _np_erfinv


def test_erfinv_reference_matches_published_values():
    # erfinv(x) = inverse_erf(x); values to 17 digits (e.g. Wolfram Alpha InverseErf)
    x = np.array([0.0, 0.1, 0.5, 0.9, -0.5, 0.999])
    want = np.array([0.0, 0.088855990494257687, 0.47693627620446987, 1.1630871536766741,
                     -0.47693627620446987, 2.3267537655135246])
    np.testing.assert_allclose(_np_erfinv(x), want, rtol=1e-14, atol=0)
    assert _np_erfinv(np.array([1.0, -1.0])).tolist() == [math.inf, -math.inf]
    assert np.isnan(_np_erfinv(np.array([1.5]))).all()


def test_erfinv_reference_inverts_math_erf():
    x = np.random.RandomState(0).uniform(-0.99, 0.99, 200)
    np.testing.assert_allclose(np.vectorize(math.erf)(_np_erfinv(x)), x, rtol=0, atol=2e-16)


def test_erfinv_samples_use_the_independent_reference():
    for s in registry.get("erfinv").samples():
        assert s.ref is _np_erfinv
