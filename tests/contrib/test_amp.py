"""mx.contrib.amp: the flag libraries read works; every function says AMP is not supported."""
import inspect

import pytest

import hybridnet as mx
from hybridnet.contrib import amp
from hybridnet.contrib.amp import amp as amp_module


def test_flag_libraries_read_is_false():
    assert amp_module._amp_initialized is False
    assert mx.contrib.amp is amp


@pytest.mark.parametrize("name", amp.__all__)
def test_every_function_raises_a_clear_error(name):
    with pytest.raises(mx.MXNetError, match=rf"mx.contrib.amp.{name} is not supported by "
                                            rf"hybridnet.*Train in float32"):
        function = getattr(amp, name)
        required = [p for p in inspect.signature(function).parameters.values()
                    if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
        function(*([None] * len(required)))


def test_contrib_operator_namespaces_are_the_nd_and_sym_ones():
    assert mx.contrib.nd is mx.contrib.ndarray is mx.nd.contrib
    assert mx.contrib.sym is mx.contrib.symbol is mx.sym.contrib
