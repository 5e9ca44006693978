"""Known-library fixes (hybridnet/compat/fixes.py), on a tiny fake GluonCV that mimics 0.10.5's
import-time checks, so this runs without GluonCV installed."""
import textwrap

GLUONCV_INIT = '''
from .check import _require_mxnet_version, _require_pytorch_version
_found_mxnet = _found_pytorch = False
try:
    _require_mxnet_version('1.4.0', '2.0.0')
    from . import data
    from . import model_zoo
    from . import nn
    from . import utils
    from . import loss
    _found_mxnet = True
except ImportError:
    pass
try:
    _require_pytorch_version('1.4.0', '2.0.0')
    _found_pytorch = True
except ImportError:
    pass
if not any((_found_mxnet, _found_pytorch)):
    raise ImportError('Unable to import modules due to missing `mxnet` & `torch`.')
'''

# GluonCV 0.10.5's check.py, with distutils' LooseVersion replaced by a numeric compare
GLUONCV_CHECK = '''
def _version(text):
    return tuple(int(p) for p in text.split('+')[0].split('.')[:3])

def _require_mxnet_version(mx_version, max_mx_version='2.0.0'):
    try:
        import mxnet as mx
        if not _version(mx_version) <= _version(mx.__version__) < _version(max_mx_version):
            raise RuntimeError('Legacy mxnet==%s detected' % mx.__version__)
    except ImportError as ex:
        raise ImportError('Unable to import dependency mxnet.') from ex

def _require_pytorch_version(torch_version, max_torch_version='2.0.0'):
    try:
        import torch
        if not _version(torch_version) <= _version(torch.__version__) < _version(max_torch_version):
            raise RuntimeError('Legacy torch==%s detected, torch>=%s,<%s is required'
                               % (torch.__version__, torch_version, max_torch_version))
    except ImportError as ex:
        raise ImportError('Unable to import dependency pytorch.') from ex
'''


def _fake_gluoncv(tmp_path, data_source="import mxnet as mx\nfrom mxnet.gluon import nn\n"):
    root = tmp_path / "libs"
    package = root / "gluoncv"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(GLUONCV_INIT)
    (package / "check.py").write_text(GLUONCV_CHECK)
    (package / "data.py").write_text(data_source)
    for sub in ("model_zoo", "nn", "utils", "loss"):
        (package / f"{sub}.py").write_text("import mxnet as mx\n")
    return str(root)


def test_fake_gluoncv_has_the_trap(run_python, tmp_path):
    """Without the fixes (alias only), the fake fails exactly as GluonCV 0.10.5 does."""
    proc = run_python(extra_path=[_fake_gluoncv(tmp_path)], code="""
        import hybridnet.compat.alias
        hybridnet.compat.alias.install()
        import gluoncv
    """)
    assert proc.returncode == 1
    assert "RuntimeError: Legacy torch==" in proc.stderr


def test_gluoncv_imports_through_the_alias(run_python, tmp_path):
    proc = run_python(extra_path=[_fake_gluoncv(tmp_path)], code="""
        import hybridnet, hybridnet.compat
        hybridnet.compat.alias_mxnet()
        import gluoncv, gluoncv.check
        assert gluoncv._found_mxnet and not gluoncv._found_pytorch
        assert gluoncv.data.nn is hybridnet.gluon.nn and gluoncv.data.mx.__version__ == "1.9.1"
        # the fixed check says why torch is not GluonCV's back end here
        try:
            gluoncv.check._require_pytorch_version("1.4.0")
        except ImportError as err:
            print(err)
    """)
    assert proc.returncode == 0, proc.stderr
    assert "its PyTorch back end is not used" in proc.stdout


def test_gluoncv_import_error_is_not_swallowed(run_python, tmp_path):
    """GluonCV hides why its MXNet side failed; under the fix the real cause is reported."""
    libs = _fake_gluoncv(tmp_path, data_source="from mxnet import no_such_name\n")
    proc = run_python(["-m", "hybridnet", "-c", "import gluoncv"], extra_path=[libs])
    assert proc.returncode == 1
    assert "RuntimeError: gluoncv.data cannot be imported on hybridnet: cannot import name " \
           "'no_such_name' from 'mxnet'" in proc.stderr


def test_fix_applies_to_a_module_imported_before_the_alias(run_python, tmp_path):
    """A failed ``import gluoncv`` leaves the unfixed ``gluoncv.check`` in sys.modules; turning
    the alias on afterwards (a notebook's next cell) fixes it, and the retry imports."""
    proc = run_python(extra_path=[_fake_gluoncv(tmp_path)], code="""
        import sys
        try:
            import gluoncv
        except RuntimeError as err:
            print("first:", err)
        assert "gluoncv.check" in sys.modules and "gluoncv" not in sys.modules
        import hybridnet.compat
        hybridnet.compat.alias_mxnet()
        import gluoncv
        print("second:", gluoncv._found_mxnet)
    """)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first.startswith("first: Legacy torch==") and second == "second: True"
