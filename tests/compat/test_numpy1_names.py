"""NumPy 1.x names that NumPy 2 removed: served (one warning each) under the alias and the
runner, switchable off, and never touched by a plain ``import hybridnet``."""
import json
import textwrap


def _ok(proc):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_plain_import_leaves_numpy_untouched(run_python):
    out = _ok(run_python(code="""
        import numpy as np
        getattr_before = np.__dict__.get("__getattr__")
        import hybridnet
        import hybridnet.compat.numpy1 as n1
        assert np.__dict__.get("__getattr__") is getattr_before
        assert not n1.is_installed()
        missing = [n for n in ("NaN", "product", "asscalar", "float", "alltrue") if hasattr(np, n)]
        print(missing)
    """))
    assert out.strip() == "[]"


def test_alias_serves_removed_names_with_one_warning_each(run_python):
    out = _ok(run_python(code="""
        import json, math, warnings
        import numpy as np
        import hybridnet.compat
        from hybridnet.compat.numpy1 import NumPy1NameWarning
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            hybridnet.compat.alias_mxnet()
            got = {
                "nan": math.isnan(np.NaN), "nan_again": math.isnan(np.NaN),
                "inf": np.Inf == float("inf"), "float": np.float is float, "int": np.int is int,
                "object": np.object is object, "product": int(np.product([2, 3, 4])),
                "cumproduct": np.cumproduct([1, 2, 3]).tolist(),
                "alltrue": bool(np.alltrue([True, False])), "sometrue": bool(np.sometrue([0, 1])),
                "asscalar": np.asscalar(np.array([7.5])), "float_": np.float_ is np.float64,
                "bool_is_numpys": np.bool is np.bool_,
            }
        from numpy import NINF  # from-imports are served as well
        names = [str(w.message).split()[0] for w in caught if w.category is NumPy1NameWarning]
        print(json.dumps({"got": got, "warned": names, "ninf": NINF}))
    """))
    res = json.loads(out.strip().splitlines()[-1])
    assert all(v is True for k, v in res["got"].items()
               if isinstance(v, bool) and k != "alltrue"), res["got"]
    assert res["got"]["product"] == 24 and res["got"]["cumproduct"] == [1, 2, 6]
    assert res["got"]["asscalar"] == 7.5 and res["got"]["alltrue"] is False
    assert res["ninf"] == float("-inf")
    warned = res["warned"]
    assert len(warned) == len(set(warned))                        # once per name
    assert set(warned) == {f"numpy.{n}" for n in ("NaN", "Inf", "float", "int", "object",
                                                  "product", "cumproduct", "alltrue",
                                                  "sometrue", "asscalar", "float_")}


def test_switched_off_by_flag_and_env(run_python):
    code = """
        import numpy as np
        import hybridnet.compat
        hybridnet.compat.alias_mxnet(numpy1_names={flag})
        try:
            np.NaN
        except AttributeError:
            print("absent")
        else:
            print("present")
    """
    assert _ok(run_python(code=code.format(flag=False))).strip() == "absent"
    assert _ok(run_python(code=code.format(flag=True),
                          HYBRIDNET_NUMPY1_NAMES="0")).strip() == "absent"
    assert _ok(run_python(code=code.format(flag=True))).strip() == "present"


def test_runner_runs_numpy1_code(run_python, tmp_path):
    prog = tmp_path / "old.py"
    prog.write_text(textwrap.dedent("""
        import numpy as np
        import mxnet as mx
        x = mx.nd.array([1.0, np.NaN, 3.0])
        print(int(np.product(x.shape)), np.isnan(x.asnumpy()).sum(), np.asscalar(np.array([4])))
    """))
    proc = run_python(["-m", "hybridnet", str(prog)])
    assert _ok(proc).split() == ["3", "1", "4"]
    assert proc.stderr.count("NumPy1NameWarning") == 3
    off = run_python(["-m", "hybridnet", "--no-numpy1-names", str(prog)])
    assert off.returncode == 1 and "NaN" in off.stderr
