"""``python -m hybridnet``: an unchanged MXNet program sees what plain ``python`` gives it."""
import json
import os
import textwrap

PROGRAM = textwrap.dedent("""
    import json, os, sys
    import mxnet as mx
    from mxnet.gluon import nn

    def fail():
        raise ValueError("bad value from the program")

    if __name__ == "__main__":
        if sys.argv[1:2] == ["raise"]:
            fail()
        if sys.argv[1:2] == ["exit"]:
            sys.exit(int(sys.argv[2]))
        import hybridnet
        print(json.dumps({"argv": sys.argv, "name": __name__, "file": __file__,
                          "path0": sys.path[0], "version": mx.__version__,
                          "main_is_program": sys.modules["__main__"].__dict__ is globals(),
                          "nn_is_ours": nn is hybridnet.gluon.nn,
                          "sum": float(mx.nd.ones((2, 3)).sum().asscalar())}))
""")


def _write(tmp_path, name="prog.py", text=PROGRAM):
    (tmp_path / "sub").mkdir(exist_ok=True)
    path = tmp_path / "sub" / name
    path.write_text(text)
    return path


def test_script_sees_argv_name_and_path(run_python, tmp_path):
    path = _write(tmp_path)
    proc = run_python(["-m", "hybridnet", "sub/prog.py", "a", "--flag", "b c"])
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["argv"] == ["sub/prog.py", "a", "--flag", "b c"]
    assert seen["name"] == "__main__" and seen["main_is_program"]
    assert seen["file"] == str(path) and seen["path0"] == str(path.parent)
    assert seen["version"] == "1.9.1" and seen["nn_is_ours"] and seen["sum"] == 6.0


def test_exit_status_is_the_programs(run_python, tmp_path):
    _write(tmp_path)
    assert run_python(["-m", "hybridnet", "sub/prog.py", "exit", "3"]).returncode == 3
    assert run_python(["-m", "hybridnet", "sub/prog.py", "exit", "0"]).returncode == 0


def test_exception_gives_status_1_and_the_programs_traceback(run_python, tmp_path):
    path = _write(tmp_path)
    proc = run_python(["-m", "hybridnet", "sub/prog.py", "raise"])
    assert proc.returncode == 1
    err = proc.stderr
    assert err.startswith("Traceback (most recent call last):")
    assert err.rstrip().endswith("ValueError: bad value from the program")
    assert f'File "{path}", line' in err and "in fail" in err
    # only the program's frames, as with plain python
    assert "runpy" not in err and "hybridnet/__main__.py" not in err


def test_module_mode(run_python, tmp_path):
    _write(tmp_path)
    proc = run_python(["-m", "hybridnet", "-m", "sub.prog", "x", "y"])
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["argv"] == [os.path.join(str(tmp_path), "sub", "prog.py"), "x", "y"]
    assert seen["name"] == "__main__" and seen["path0"] == str(tmp_path)
    assert seen["version"] == "1.9.1"


def test_command_mode(run_python):
    proc = run_python(["-m", "hybridnet", "-c",
                       "import sys, mxnet as mx; print(__name__, sys.argv, mx.__version__)", "q"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "__main__ ['-c', 'q'] 1.9.1"


def test_usage_errors(run_python):
    proc = run_python(["-m", "hybridnet"])
    assert proc.returncode == 2 and "usage: python -m hybridnet script.py" in proc.stderr
    proc = run_python(["-m", "hybridnet", "missing.py"])
    assert proc.returncode == 2 and "can't open file" in proc.stderr and "missing.py" in proc.stderr
    proc = run_python(["-m", "hybridnet", "-m"])
    assert proc.returncode == 2 and "argument expected for -m" in proc.stderr
