"""``python -m hybridnet``: run an unchanged MXNet program on hybridnet.

    python -m hybridnet script.py [args...]    # like `python script.py args...`
    python -m hybridnet -m package.module [args...]
    python -m hybridnet -c "import mxnet as mx; print(mx.nd.ones(2))"
    python -m hybridnet --no-numpy1-names script.py   # leave NumPy 2 as it is

``import mxnet`` inside the program (and inside any library it uses) gives hybridnet's modules
(:func:`hybridnet.compat.alias_mxnet`), and the NumPy 1.x names NumPy 2 removed (``np.NaN``,
``np.float``, ``np.product``...) are served again, each with one warning (off with
``--no-numpy1-names`` or ``HYBRIDNET_NUMPY1_NAMES=0``).
The program sees what plain ``python`` would give it:
``sys.argv``, ``__name__ == "__main__"``, ``sys.path[0]`` (the script's directory, or the
current directory for ``-m`` / ``-c``), its exit status, and a traceback without this runner's
frames when it raises.
"""
from __future__ import annotations

import builtins
import os
import runpy
import sys
import types
import zipfile
from typing import List

USAGE = """usage: python -m hybridnet script.py [args...]
       python -m hybridnet -m module [args...]
       python -m hybridnet -c command [args...]
       python -m hybridnet --no-numpy1-names ...   (leave out NumPy 1.x's removed names)
Runs an MXNet program unchanged with `import mxnet` resolved to hybridnet."""


def _exec_as_main(code: types.CodeType, **attrs: object) -> None:
    """Run ``code`` in a fresh ``__main__`` module, as the interpreter runs a program."""
    program = types.ModuleType("__main__")
    program.__dict__.update(__builtins__=builtins, __spec__=None, **attrs)
    sys.modules["__main__"] = program
    exec(code, program.__dict__)


def _run(argv: List[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr)
        raise SystemExit(0 if argv else 2)
    if argv[0] in ("-m", "-c"):
        if len(argv) < 2:
            print(f"python -m hybridnet: argument expected for {argv[0]}\n{USAGE}",
                  file=sys.stderr)
            raise SystemExit(2)
        if argv[0] == "-m":
            sys.path[0] = os.getcwd()
            sys.argv = [argv[1]] + argv[2:]  # run_module replaces [0] with the module's file
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = ""
            sys.argv = ["-c"] + argv[2:]
            _exec_as_main(compile(argv[1], "<string>", "exec"))
        return
    script = os.path.abspath(argv[0])  # python >= 3.9 gives __main__ an absolute __file__
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(script)
    if os.path.isdir(script) or zipfile.is_zipfile(script):  # holding a __main__.py
        runpy.run_path(script, run_name="__main__")
        return
    try:
        with open(script, "rb") as f:
            source = f.read()
    except OSError as err:
        print(f"python -m hybridnet: can't open file {script!r}: [Errno {err.errno}] "
              f"{err.strerror}", file=sys.stderr)
        raise SystemExit(2) from None
    _exec_as_main(compile(source, script, "exec"), __file__=script, __cached__=None)


def _report_without_runner_frames(exc: BaseException) -> None:
    """Hand ``exc`` to ``sys.excepthook`` as plain ``python`` would: the program's frames only."""
    tb = exc.__traceback__
    while tb is not None and (tb.tb_frame.f_globals.get("__name__") == "runpy"
                              or tb.tb_frame.f_code.co_filename == __file__):
        tb = tb.tb_next
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)


def main(argv: List[str]) -> None:
    """Alias ``mxnet`` to hybridnet, then run the program named by ``argv``."""
    import hybridnet.compat

    numpy1_names = True
    if argv and argv[0] == "--no-numpy1-names":
        numpy1_names, argv = False, argv[1:]
    hybridnet.compat.alias_mxnet(numpy1_names=numpy1_names)
    try:
        _run(argv)
    except Exception as exc:  # report as python would, then exit with its status 1
        _report_without_runner_frames(exc)
        sys.stdout.flush()
        raise SystemExit(1) from None


if __name__ == "__main__":
    main(sys.argv[1:])
