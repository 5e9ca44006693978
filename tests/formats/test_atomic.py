"""Atomic saves: umask permissions, no partial files, stale temp files from killed saves removed."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import hybridnet as mx
from hybridnet.formats import atomic


def test_written_file_gets_the_umask(tmp_path):
    for mask, mode in ((0o022, 0o644), (0o077, 0o600), (0o002, 0o664)):
        old = os.umask(mask)
        try:
            atomic.write_atomic(tmp_path / "f.bin", b"x")
            mx.nd.save(str(tmp_path / "a.params"), {"w": mx.nd.ones(2)})
        finally:
            os.umask(old)
        assert os.stat(tmp_path / "f.bin").st_mode & 0o777 == mode
        assert os.stat(tmp_path / "a.params").st_mode & 0o777 == mode


def test_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")

    def chunks():
        yield b"new"
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic.write_atomic(target, chunks())
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f.bin"]


def test_temp_file_of_a_killed_save_is_removed_by_the_next_save(tmp_path):
    target = tmp_path / "model.params"
    # a real process that creates the temp file and is killed before renaming it
    code = ("import os, sys; from hybridnet.formats import atomic; fd, tmp = atomic.make_temp(sys.argv[1]); "
            "os.write(fd, b'half'); print(tmp, flush=True); os._exit(9)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, env=env)
    tmp = out.stdout.strip()
    assert out.returncode == 9 and os.path.basename(tmp).startswith(".model.params.") and os.path.exists(tmp)
    other_target = tmp_path / ".other.params.1-0123456789ab.tmp"  # another file's temp: untouched
    other_target.write_bytes(b"x")
    mine = tmp_path / f".model.params.{os.getpid()}-0123456789ab.tmp"  # a live writer's temp: untouched
    mine.write_bytes(b"x")
    mx.nd.save(str(target), {"w": mx.nd.ones(2)})
    assert not os.path.exists(tmp)
    assert sorted(os.listdir(tmp_path)) == sorted(["model.params", other_target.name, mine.name])
    assert mx.nd.load(str(target))["w"].shape == (2,)



def _save_parameters(path: str) -> None:
    net = mx.gluon.nn.Dense(2, in_units=2)
    net.initialize()
    net.save_parameters(path)


@pytest.mark.parametrize("save", [lambda p: atomic.write_atomic(p, b"x"),
                                  lambda p: mx.nd.save(p, [mx.nd.ones((2,))]),
                                  _save_parameters], ids=["write_atomic", "nd.save", "save_parameters"])
def test_saving_into_a_missing_directory_names_the_target(tmp_path, save):
    target = str(tmp_path / "missing" / "model.params")
    with pytest.raises(FileNotFoundError) as info:
        save(target)
    assert info.value.filename == target  # not the hidden temporary file
    assert str(info.value) == f"[Errno 2] No such file or directory: {target!r}"
