"""Every test here starts and ends in MXNet 1.x semantics (the switches are per thread)."""
import pytest

import hybridnet as mx


@pytest.fixture(autouse=True)
def _legacy_semantics_around_each_test():
    mx.npx.reset_np()
    yield
    mx.npx.reset_np()
