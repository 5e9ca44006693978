"""MXNet 1.9.1 behaviours its own unit tests rely on (issue 25, the last peer failures)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import hybridnet as mx


# ---- util._NumpyArrayScope ----------------------------------------------------------------------
def test_numpy_array_scope_switches_np_array_per_thread():
    from hybridnet.util import _NumpyArrayScope
    assert not mx.util.is_np_array()
    with _NumpyArrayScope(True) as scope:
        assert scope._is_np_array and mx.util.is_np_array()
        seen = []
        t = threading.Thread(target=lambda: seen.append(mx.util.is_np_array()))
        t.start()
        t.join()
        assert seen == [False]  # another thread keeps its own switch
        with _NumpyArrayScope(False):
            assert not mx.util.is_np_array()
        assert mx.util.is_np_array()
    assert not mx.util.is_np_array()


def test_numpy_array_scope_current_may_be_replaced():
    from hybridnet.util import _NumpyArrayScope
    old = _NumpyArrayScope._current
    try:
        _NumpyArrayScope._current = _NumpyArrayScope(True)  # what MXNet's thread-local test does
        with mx.util.np_array(False):
            assert not mx.util.is_np_array()
        with _NumpyArrayScope(True):
            assert mx.util.is_np_array()
    finally:
        _NumpyArrayScope._current = old
    assert not mx.util.is_np_array()


# ---- runtime --------------------------------------------------------------------------------------
def test_runtime_unknown_feature_raises():
    with pytest.raises(RuntimeError, match="unknown"):
        mx.runtime.Features().is_enabled("this girl is on fire")
