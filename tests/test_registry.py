"""mx.registry: the register / alias / create trio libraries (GluonNLP) build on it."""
import json
import warnings

import pytest

from hybridnet import registry


class Base:
    def __init__(self, size=1, scale=1.0):
        self.size, self.scale = size, scale


class Small(Base):
    pass


class Large(Base):
    pass


@pytest.fixture
def trio():
    class Root(Base):  # a fresh base class: a fresh registry
        pass

    class Leaf(Root):
        pass

    register = registry.get_register_func(Root, "thing")
    alias = registry.get_alias_func(Root, "thing")
    create = registry.get_create_func(Root, "thing")
    return Root, Leaf, register, alias, create


def test_register_and_create_by_name(trio):
    Root, Leaf, register, alias, create = trio
    assert register(Leaf) is Leaf
    made = create("LEAF", 3, scale=2.0)             # names are case-insensitive
    assert type(made) is Leaf and (made.size, made.scale) == (3, 2.0)
    assert registry.get_registry(Root) == {"leaf": Leaf}
    registry.get_registry(Root)["other"] = Leaf    # a copy: the registry itself is unchanged
    assert list(registry.get_registry(Root)) == ["leaf"]


def test_alias_registers_every_name(trio):
    Root, Leaf, register, alias, create = trio
    assert alias("first", "Second")(Leaf) is Leaf
    assert sorted(registry.get_registry(Root)) == ["first", "second"]
    assert type(create(thing="second")) is Leaf


def test_create_accepts_instances_dicts_and_json(trio):
    Root, Leaf, register, alias, create = trio
    register(Leaf)
    inst = Leaf(5)
    assert create(inst) is inst
    with pytest.raises(TypeError, match="already an instance"):
        create(inst, 1)
    assert create({"thing": "leaf", "size": 4}).size == 4
    assert create(json.dumps(["leaf", {"size": 6, "scale": 0.5}])).scale == 0.5
    assert create(json.dumps({"thing": "leaf", "size": 7})).size == 7


def test_errors_name_the_problem(trio):
    Root, Leaf, register, alias, create = trio
    register(Leaf)
    with pytest.raises(ValueError, match=r"'missing' is not a registered thing; registered: leaf"):
        create("missing")
    with pytest.raises(TypeError, match="can only register subclasses of Root"):
        register(Small)
    with pytest.raises(TypeError, match="needs the thing name"):
        create()
    with pytest.raises(TypeError, match="must be a name"):
        create(3)


def test_reregistering_warns_and_overrides():
    register = registry.get_register_func(Base, "base")
    create = registry.get_create_func(Base, "base")
    register(Small, "size")
    with pytest.warns(UserWarning, match="overriding existing base"):
        register(Large, "size")
    assert type(create("size")) is Large
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        register(Large, "size")                     # the same class again: no warning


def test_metric_and_initializer_are_built_on_the_registry():
    """As in MXNet, mx.metric and mx.init register into and create from mx.registry; arguments
    create cannot apply are both TypeError (the registry's) and ValueError (theirs before)."""
    import hybridnet as mx
    assert registry.get_registry(mx.metric.EvalMetric)["acc"] is mx.metric.Accuracy
    assert registry.get_registry(mx.init.Initializer)["zeros"] is mx.init.Zero
    acc, one = mx.metric.Accuracy(), mx.init.One()
    for create, inst in ((mx.metric.create, acc), (mx.init.create, one)):
        assert create(inst) is inst
        for error in (TypeError, ValueError):
            with pytest.raises(error, match="already an instance"):
                create(inst, 3)
    with pytest.raises(ValueError, match="takes no further arguments"):
        mx.init.create('["zero", {}]', 1)
    with pytest.raises(ValueError, match="cannot parse the JSON initializer config"):
        mx.init.create("[zero")
    assert isinstance(mx.init.create(("uniform", {"scale": 0.2})), mx.init.Uniform)  # hybridnet's pair form


def test_op_namespaces_hold_linalg_spellings():
    import numpy as np

    import hybridnet as mx
    a = mx.nd.array(np.arange(4.0).reshape(2, 2))
    for space in (mx.nd.op, mx.sym.op):
        assert space.linalg_gemm2 is getattr(space, "_linalg_gemm2")
    np.testing.assert_allclose(mx.nd.op.linalg_gemm2(a, a).asnumpy(), a.asnumpy() @ a.asnumpy())
