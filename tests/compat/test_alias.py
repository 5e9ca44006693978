"""The ``mxnet`` alias: one module object per name, MXNet's API version, never a real MXNet."""
import ast
import os

from .conftest import REPO


def _ok(proc):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_one_module_object_per_name(run_python):
    out = _ok(run_python(code="""
        import sys
        import hybridnet
        assert "hybridnet.compat" not in sys.modules          # importing hybridnet aliases nothing
        import hybridnet.compat
        assert not hybridnet.compat.is_mxnet_aliased()
        hybridnet.compat.alias_mxnet()
        hybridnet.compat.alias_mxnet()                          # idempotent
        assert hybridnet.compat.is_mxnet_aliased()

        import mxnet as mx
        import mxnet.gluon.nn as a
        from mxnet.gluon import nn as b
        import mxnet.ndarray.ndarray
        from mxnet.gluon.nn import Dense
        assert a is b is hybridnet.gluon.nn is sys.modules["mxnet.gluon.nn"]
        assert mx.gluon is hybridnet.gluon is sys.modules["mxnet.gluon"]
        assert sys.modules["mxnet.ndarray.ndarray"] is hybridnet.ndarray.ndarray
        assert mxnet.ndarray.ndarray is hybridnet.ndarray.ndarray
        assert Dense is hybridnet.gluon.nn.Dense
        # the modules keep their own identity: names, specs, files
        assert a.__name__ == "hybridnet.gluon.nn" and a.__spec__.name == "hybridnet.gluon.nn"
        assert mx.__name__ == "mxnet" and mx.__spec__.name == "mxnet"
        assert mx.__file__ == hybridnet.__file__
        # objects made through either name are the same classes
        x = mx.nd.ones((2, 3))
        assert isinstance(x, hybridnet.nd.NDArray) and type(x) is hybridnet.ndarray.NDArray
        assert isinstance(a.Dense(4), hybridnet.gluon.HybridBlock)
        assert mx.MXNetError is hybridnet.base.MXNetError

        # namespaces MXNet keeps as module attributes (mx.nd is mxnet.ndarray)
        import mxnet.nd, mxnet.nd.random, mxnet.sym, mxnet.kv, mxnet.init
        assert sys.modules["mxnet.nd"] is hybridnet.ndarray is mx.nd is mx.ndarray
        assert sys.modules["mxnet.nd.random"] is hybridnet.ndarray.random
        assert sys.modules["mxnet.sym"] is hybridnet.symbol
        assert sys.modules["mxnet.kv"] is hybridnet.kvstore
        assert sys.modules["mxnet.init"] is hybridnet.initializer
        from mxnet import registry, contrib
        assert registry is hybridnet.registry and contrib is hybridnet.contrib
        import mxnet.contrib.ndarray
        assert sys.modules["mxnet.contrib.ndarray"] is hybridnet.ndarray.contrib

        # attribute writes go to hybridnet (monkeypatching mx.x patches hybridnet.x)
        mx.compat_test_value = 7
        assert hybridnet.compat_test_value == 7
        del mx.compat_test_value
        assert not hasattr(hybridnet, "compat_test_value")
        assert "gluon" in dir(mx) and "__version__" in dir(mx)
        namespace = {}
        exec("from mxnet import *", namespace)
        assert namespace["gluon"] is hybridnet.gluon and namespace["nd"] is hybridnet.ndarray
        print("ok")
    """))
    assert out.strip() == "ok"


def test_versions(run_python):
    out = _ok(run_python(code="""
        import hybridnet, hybridnet.compat
        hybridnet.compat.alias_mxnet()
        import mxnet
        print(mxnet.__version__, hybridnet.__version__, hybridnet.MXNET_API_VERSION)
    """))
    mx_version, own_version, api = out.split()
    assert mx_version == api == "1.9.1"
    import hybridnet
    assert own_version == hybridnet.__version__ != "1.9.1"


def test_missing_submodule_names_both_names(run_python):
    out = _ok(run_python(code="""
        import hybridnet.compat
        hybridnet.compat.alias_mxnet()
        try:
            import mxnet.no_such_module
        except ModuleNotFoundError as err:
            print(err.name, "|", err)
    """))
    name, message = out.split("|")
    assert name.strip() == "mxnet.no_such_module"
    assert "'mxnet.no_such_module'" in message and "'hybridnet.no_such_module'" in message


def _fake_mxnet(tmp_path):
    root = tmp_path / "fake_site"
    (root / "mxnet").mkdir(parents=True)
    (root / "mxnet" / "__init__.py").write_text("__version__ = '1.9.1'\nREAL = True\n")
    (root / "mxnet" / "base.py").write_text("REAL = True\n")
    return str(root)


def test_refuses_when_a_real_mxnet_is_imported(run_python, tmp_path):
    site = _fake_mxnet(tmp_path)
    proc = run_python(extra_path=[site], code="""
        import mxnet
        assert mxnet.REAL
        import hybridnet.compat
        try:
            hybridnet.compat.alias_mxnet()
        except hybridnet.compat.AliasConflictError as err:
            print("refused:", err)
        assert not hybridnet.compat.is_mxnet_aliased()
    """)
    out = _ok(proc)
    assert out.startswith("refused:")
    assert os.path.join(site, "mxnet", "__init__.py") in out and "python -m hybridnet" in out


def test_refuses_when_only_a_real_submodule_is_imported(run_python, tmp_path):
    site = _fake_mxnet(tmp_path)
    proc = run_python(extra_path=[site], code="""
        import sys
        import mxnet.base
        del sys.modules["mxnet"]                   # only mxnet.base left behind
        import hybridnet.compat
        try:
            hybridnet.compat.alias_mxnet()
        except hybridnet.compat.AliasConflictError as err:
            print("refused:", err)
    """)
    out = _ok(proc)
    assert out.startswith("refused:") and "'mxnet.base'" in out


def test_an_installed_real_mxnet_is_never_mixed_in(run_python, tmp_path):
    site = _fake_mxnet(tmp_path)
    out = _ok(run_python(extra_path=[site], code="""
        import hybridnet, hybridnet.compat
        hybridnet.compat.alias_mxnet()
        import mxnet, mxnet.base
        assert not hasattr(mxnet, "REAL") and not hasattr(mxnet.base, "REAL")
        assert mxnet.base is hybridnet.base
        print(mxnet.__version__)
    """))
    assert out.strip() == "1.9.1"


def test_nothing_in_the_package_imports_compat():
    """ARCHITECTURE.md: the compat package is imported by nothing below it (only the runner uses it)."""
    package = os.path.join(REPO, "hybridnet")
    allowed = {os.path.join(package, "__main__.py")}
    offenders = []
    for dirpath, _, files in os.walk(package):
        if os.path.join(package, "compat") in os.path.join(dirpath, ""):
            continue
        for fname in files:
            path = os.path.join(dirpath, fname)
            if not fname.endswith(".py") or path in allowed:
                continue
            tree = ast.parse(open(path, encoding="utf-8").read())
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [(node.module or "")] + [a.name for a in node.names]
                if any(n == "compat" or n.endswith(".compat") or ".compat." in n for n in names):
                    offenders.append(os.path.relpath(path, REPO))
    assert offenders == []
