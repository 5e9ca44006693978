"""The `hybridnet` command (hybridnet/cli.py): run, inspect, convert, bench on real MXNet 1.9.1
exports, each checked by its output; a corrupt file ends with the loader's message and status
1; every subcommand has --help; pyproject declares the script. Two runs go through a
subprocess (the entry point, its exit status, `run`'s mxnet alias); the rest call main() here,
as a subprocess costs seconds of imports each."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from fixture_paths import MXNET as FIXTURES

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LENET = os.path.join(FIXTURES, "lenet")
MLP = os.path.join(FIXTURES, "mlp")
needs_fixtures = pytest.mark.skipif(not os.path.isdir(LENET) or not os.path.isdir(MLP),
                                    reason="shared MXNet fixtures not found")


def hybridnet(*args, cwd=None):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "hybridnet.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd or REPO, timeout=300)


def cli(capsys, *args):
    """(status, stdout, stderr) of `hybridnet ARGS` run in this process (a subprocess costs
    seconds of imports; the subprocess tests cover the entry point itself)."""
    from hybridnet.cli import main
    with pytest.raises(SystemExit) as e:
        main(list(args))
    out, err = capsys.readouterr()
    return e.value.code, out, err


def lenet(name):
    return os.path.join(LENET, name)


def test_pyproject_declares_the_console_script():
    import tomllib
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    assert scripts["hybridnet"] == "hybridnet.cli:main"
    from hybridnet.cli import main
    assert callable(main)


@pytest.mark.parametrize("command", ["inspect", "convert", "bench"])
def test_every_subcommand_has_help(command, capsys):
    from hybridnet.cli import main
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: hybridnet {command}") and "--shape" in out


def test_run_help_and_usage_errors(capsys):
    from hybridnet.cli import main
    with pytest.raises(SystemExit) as e:
        main(["run", "--help"])
    assert e.value.code == 0 and "usage: hybridnet run" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["inspect", "x-symbol.json", "--shape", "data"])
    assert e.value.code == 1 and "expected NAME=D1,D2" in capsys.readouterr().err


def test_run_runs_an_mxnet_program(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import sys, mxnet as mx\nprint(mx.nd.ones((2,)).sum().asscalar(), sys.argv[1:])\n")
    r = hybridnet("run", str(script), "a", "b")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "2.0 ['a', 'b']"


@needs_fixtures
def test_inspect_a_real_mxnet_export(capsys):
    code, out, err = cli(capsys, "inspect", lenet("model-symbol.json"), lenet("model-0000.params"),
                         "--shape", "data=16,1,28,28")
    assert code == 0, err
    assert "written by MXNet 1.9.1" in out
    assert "outputs: " in out and "16x10" in out
    assert "unsupported operators: none" in out
    # the json form: every node, its shape, the parameter total equals the .params file's
    code, out, err = cli(capsys, "inspect", lenet("model-symbol.json"), lenet("model-0000.params"),
                         "--shape", "data=16,1,28,28", "--json")
    info = json.loads(out)
    from hybridnet import nd
    saved = nd.load(lenet("model-0000.params"))
    assert info["parameters"]["elements"] == sum(v.size for v in saved.values())
    assert sum(n["params"] for n in info["nodes"]) == info["parameters"]["elements"]
    conv = [n for n in info["nodes"] if n["op"] == "Convolution"]
    assert conv and conv[0]["output_shapes"][0][0] == 16
    assert info["inputs"] == [{"name": "data", "shape": [16, 1, 28, 28]}]
    assert info["outputs"][0]["shape"] == [16, 10]
    assert info["mxnet_version"] == "1.9.1"


def test_inspect_lists_unsupported_operators(tmp_path, capsys):
    from hybridnet.cli import main
    f = tmp_path / "m-symbol.json"
    f.write_text(json.dumps({"nodes": [{"op": "null", "name": "data", "inputs": []},
                                       {"op": "NoSuchOp", "name": "mystery", "inputs": [[0, 0, 0]]}],
                             "arg_nodes": [0], "heads": [[1, 0, 0]], "attrs": {"mxnet_version": ["int", 10700]}}))
    with pytest.raises(SystemExit) as e:
        main(["inspect", str(f)])
    err = capsys.readouterr().err
    assert e.value.code == 1
    assert "MXNet 1.7.0" in err and "NoSuchOp (nodes mystery)" in err


def test_corrupt_files_give_the_loaders_error_and_status_1(tmp_path):
    bad = tmp_path / "bad-symbol.json"
    bad.write_text('{"nodes": [')
    r = hybridnet("inspect", str(bad))
    assert r.returncode == 1
    assert r.stderr.startswith("hybridnet inspect: error: ") and "Traceback" not in r.stderr
    assert str(bad) in r.stderr


@needs_fixtures
def test_corrupt_params_in_process(tmp_path, capsys):
    from hybridnet.cli import main
    params = tmp_path / "bad-0000.params"
    params.write_bytes(open(lenet("model-0000.params"), "rb").read()[:100])
    with pytest.raises(SystemExit) as e:
        main(["convert", lenet("model-symbol.json"), str(params), "--to", "params"])
    err = capsys.readouterr().err
    assert e.value.code == 1 and err.startswith("hybridnet convert: error: ") and str(params) in err


def _difference(stdout):
    line = next(l for l in stdout.splitlines() if l.startswith("largest difference: "))
    return float(line.split()[2])


@needs_fixtures
def test_convert_to_torch_export_with_check(tmp_path, capsys):
    pt2 = str(tmp_path / "lenet.pt2")
    code, out, err = cli(capsys, "convert", lenet("model-symbol.json"), lenet("model-0000.params"), "--to",
                         "torch", "--shape", "data=1,1,28,28", "-o", pt2, "--check")
    assert code == 0, err
    assert _difference(out) < 1e-4 and f"wrote {pt2}" in out
    # the archive runs at another batch size and gives MXNet 1.9.1's outputs
    import torch
    program = torch.export.load(pt2).module()
    x = np.load(lenet("input.npy"))
    with torch.no_grad():
        got = program(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, np.load(lenet("output.npy")), rtol=1e-4, atol=1e-5)


@needs_fixtures
def test_convert_to_onnx_with_check(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    onnx_file = str(tmp_path / "mlp.onnx")
    code, out, err = cli(capsys, "convert", os.path.join(MLP, "model-symbol.json"),
                         os.path.join(MLP, "model-0000.params"), "--to", "onnx", "--shape", "data=1,512",
                         "-o", onnx_file, "--check")
    assert code == 0, err
    assert _difference(out) < 1e-4 and os.path.getsize(onnx_file) > 100_000


@needs_fixtures
def test_convert_params_resaves_them(tmp_path, capsys):
    from hybridnet import nd
    out = str(tmp_path / "re-0000.params")
    code, text, err = cli(capsys, "convert", lenet("model-symbol.json"), lenet("model-0000.params"), "--to",
                          "params", "-o", out, "--check")
    assert code == 0, err
    assert "largest difference: 0 " in text
    a, b = nd.load(lenet("model-0000.params")), nd.load(out)
    assert sorted(a) == sorted(b)
    for k in a:
        np.testing.assert_array_equal(a[k].asnumpy(), b[k].asnumpy())


@needs_fixtures
def test_bench_times_every_variant(capsys):
    code, out, err = cli(capsys, "bench", os.path.join(MLP, "model-symbol.json"), "--shape", "data=1,512",
                         "--batch", "1,4", "--static", "--tiers", "MKLDNN", "--repeat", "3", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [(x["variant"], x["batch"]) for x in rows] == [
        (v, b) for b in (1, 4) for v in ("eager", "hybridized", "static", "tier MKLDNN")]
    for x in rows:
        assert x["latency_ms"] > 0 and abs(x["throughput"] - x["batch"] / x["latency_ms"] * 1e3) < 1e-6 * x["throughput"]


@needs_fixtures
def test_bench_takes_the_params_file_as_inspect_does(capsys):
    code, out, err = cli(capsys, "bench", lenet("model-symbol.json"), lenet("model-0000.params"),
                         "--shape", "data=1,1,28,28", "--tiers", "", "--repeat", "2", "--json")
    assert code == 0, err
    assert [x["variant"] for x in json.loads(out)] == ["eager", "hybridized"]
    code, _, err = cli(capsys, "bench", lenet("model-symbol.json"), lenet("model-0000.params"),
                       "--params", lenet("params_saved.params"), "--shape", "data=1,1,28,28")
    assert code == 1 and "two parameter files" in err


@needs_fixtures
def test_each_subcommand_as_a_subprocess_on_a_real_mxnet_export(tmp_path):
    """The entry point itself, once per subcommand (run: test_run_runs_an_mxnet_program)."""
    sym, params = lenet("model-symbol.json"), lenet("model-0000.params")
    r = hybridnet("inspect", sym, params, "--shape", "data=2,1,28,28", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"][0]["shape"] == [2, 10]
    out = str(tmp_path / "re-0000.params")
    r = hybridnet("convert", sym, params, "--to", "params", "-o", out, "--check")
    assert r.returncode == 0, r.stderr
    assert "largest difference: 0 " in r.stdout and os.path.getsize(out) == os.path.getsize(params)
    r = hybridnet("bench", sym, params, "--shape", "data=1,1,28,28", "--tiers", "", "--repeat", "2", "--json")
    assert r.returncode == 0, r.stderr
    assert [x["variant"] for x in json.loads(r.stdout)] == ["eager", "hybridized"]
    r = hybridnet("bench", sym, str(tmp_path / "missing-0000.params"), "--shape", "data=1,1,28,28")
    assert r.returncode == 1 and "missing-0000.params" in r.stderr and "Traceback" not in r.stderr
