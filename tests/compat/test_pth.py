"""The environment-wide opt-in: ``python -m hybridnet.compat install-pth`` / ``uninstall-pth``."""
import os

from hybridnet.compat.pth import PTH_NAME

from .test_alias import _fake_mxnet


def _install(run_python, site_dir):
    proc = run_python(["-m", "hybridnet.compat", "install-pth", "--site-dir", site_dir])
    assert proc.returncode == 0, proc.stderr
    path = os.path.join(site_dir, PTH_NAME)
    assert proc.stdout.startswith(f"installed {path}")
    return path


AT_STARTUP = """
    import site, sys
    site.addsitedir({site!r})               # what the interpreter does with site-packages
    # start-up imports nothing heavy: hybridnet loads on the first `import mxnet`
    assert "hybridnet" not in sys.modules and "torch" not in sys.modules
    import mxnet
    print(getattr(mxnet, "REAL", False), mxnet.__version__)
    if not getattr(mxnet, "REAL", False):
        import hybridnet, mxnet.gluon.nn
        assert mxnet.gluon.nn is hybridnet.gluon.nn
"""


def test_pth_turns_the_alias_on_at_first_import(run_python, tmp_path):
    site_dir = str(tmp_path / "site")
    os.mkdir(site_dir)
    path = _install(run_python, site_dir)
    lines = open(path).read().splitlines()
    assert len(lines) == 1 and lines[0].startswith("import ")   # `site` executes such a line
    fake = _fake_mxnet(tmp_path)              # a real MXNet installed too is never used
    proc = run_python(code=AT_STARTUP.format(site=site_dir), extra_path=[fake])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "1.9.1"]


def test_env_var_opts_one_process_out(run_python, tmp_path):
    site_dir = str(tmp_path / "site")
    os.mkdir(site_dir)
    _install(run_python, site_dir)
    fake = _fake_mxnet(tmp_path)
    proc = run_python(code=AT_STARTUP.format(site=site_dir), extra_path=[fake],
                      HYBRIDNET_ALIAS_MXNET="0")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "1.9.1"]


def test_uninstall_and_status(run_python, tmp_path):
    site_dir = str(tmp_path / "site")
    os.mkdir(site_dir)
    path = _install(run_python, site_dir)
    status = run_python(["-m", "hybridnet.compat", "status", "--site-dir", site_dir])
    assert status.stdout.startswith(f"{path}: installed")
    proc = run_python(["-m", "hybridnet.compat", "uninstall-pth", "--site-dir", site_dir])
    assert proc.returncode == 0 and proc.stdout.strip() == f"removed {path}"
    assert not os.path.exists(path)
    proc = run_python(["-m", "hybridnet.compat", "uninstall-pth", "--site-dir", site_dir])
    assert proc.returncode == 0 and "was not installed" in proc.stdout
    status = run_python(["-m", "hybridnet.compat", "status", "--site-dir", site_dir])
    assert status.stdout.startswith(f"{path}: not installed")


def test_install_into_a_missing_directory_is_an_error(run_python, tmp_path):
    proc = run_python(["-m", "hybridnet.compat", "install-pth", "--site-dir",
                       str(tmp_path / "nowhere")])
    assert proc.returncode != 0 and "does not exist" in proc.stderr
