"""Process-group setup and a local launcher for data-parallel training (``mx.kv.launch``).

MXNet 1.9.1 starts distributed workers with ``tools/launch.py`` (ps-lite scheduler/servers,
``DMLC_*`` environment variables). hybridnet all-reduces with ``torch.distributed`` instead, so a
worker only needs the torchrun environment contract:

    RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT   (LOCAL_RANK optional)

``DMLC_NUM_WORKER``, ``DMLC_PS_ROOT_URI`` and ``DMLC_PS_ROOT_PORT`` are accepted in place of
``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``. ``HYBRIDNET_DIST_BACKEND`` picks the backend
(default ``gloo``), ``HYBRIDNET_DIST_TIMEOUT`` the collective timeout in seconds (default 1800).

Rendezvous: torch's TCP store, which rank 0 serves on ``MASTER_PORT`` on every network interface
without authentication. For a single-host job this module's launcher avoids it: it gives the
workers a file store in a private directory (``HYBRIDNET_DIST_STORE_FILE``), so nothing listens
for the rendezvous, and pins gloo to the loopback interface. Multi-host jobs (``--host`` not a
loopback address) use the TCP store: run them only on a network you trust.

``mx.kv.create('dist_sync')`` calls :func:`init_process_group` itself when the group is not
initialized yet, so a script started by ``torchrun`` or by this module's launcher needs no
setup code::

    python -m hybridnet.kvstore.launch -n 2 train.py --epochs 3
"""
from __future__ import annotations

import argparse
import atexit
import datetime
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

from ..base import MXNetError

__all__ = ["DistEnv", "dist_env", "is_available", "is_initialized", "init_process_group",
           "ensure_initialized", "destroy_process_group", "rank", "num_workers",
           "find_free_port", "worker_env", "launch", "main"]

DEFAULT_TIMEOUT_S = 1800.0
_created_here = False


@dataclass(frozen=True)
class DistEnv:
    """Where this worker sits in the job, as read from the environment."""
    rank: int
    num_workers: int
    master_addr: str
    master_port: int
    local_rank: int


def _first(environ: Mapping[str, str], *names: str) -> Optional[str]:
    for n in names:
        v = environ.get(n)
        if v not in (None, ""):
            return v
    return None


STORE_FILE_VAR = "HYBRIDNET_DIST_STORE_FILE"  # a file store path: the launcher's single-host rendezvous
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _int_var(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise MXNetError(f"environment variable {name}={value!r} is not an integer") from None


def dist_env(environ: Optional[Mapping[str, str]] = None) -> Optional[DistEnv]:
    """The worker's place in the job from torchrun's variables (or their ``DMLC_*`` spellings);
    ``None`` when no world size is set (not launched as a distributed worker)."""
    env = os.environ if environ is None else environ
    world = _first(env, "WORLD_SIZE", "DMLC_NUM_WORKER")
    if world is None:
        return None
    fields = {
        "RANK": _first(env, "RANK"),
        "MASTER_ADDR": _first(env, "MASTER_ADDR", "DMLC_PS_ROOT_URI"),
        "MASTER_PORT": _first(env, "MASTER_PORT", "DMLC_PS_ROOT_PORT"),
    }
    missing = [k for k, v in fields.items() if v is None]
    if missing:
        raise MXNetError(f"distributed worker environment is incomplete: WORLD_SIZE={world} is set "
                         f"but {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not. Start "
                         f"workers with torchrun or `python -m hybridnet.kvstore.launch -n N script.py`, "
                         f"which set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT")
    size = _int_var(world, "WORLD_SIZE")
    r = _int_var(fields["RANK"], "RANK")  # type: ignore[arg-type]
    if size < 1 or not 0 <= r < size:
        raise MXNetError(f"invalid distributed environment: RANK={r} must lie in [0, WORLD_SIZE={size})")
    port = _int_var(fields["MASTER_PORT"], "MASTER_PORT")  # type: ignore[arg-type]
    local = _int_var(_first(env, "LOCAL_RANK") or "0", "LOCAL_RANK")
    return DistEnv(r, size, fields["MASTER_ADDR"], port, local)  # type: ignore[arg-type]


def is_available() -> bool:
    """Whether this torch build has ``torch.distributed``."""
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch builds without distributed
        return False
    return bool(dist.is_available())


def is_initialized() -> bool:
    """Whether the default process group exists."""
    if not is_available():
        return False
    import torch.distributed as dist
    return bool(dist.is_initialized())


def _timeout_s(timeout: Optional[float]) -> float:
    if timeout is not None:
        return float(timeout)
    v = os.environ.get("HYBRIDNET_DIST_TIMEOUT")
    return float(v) if v else DEFAULT_TIMEOUT_S


def init_process_group(backend: Optional[str] = None, timeout: Optional[float] = None,
                       environ: Optional[Mapping[str, str]] = None) -> bool:
    """Create the default ``torch.distributed`` process group from the environment (see the
    module docstring). Returns False when one already exists (then nothing is changed)."""
    global _created_here
    if not is_available():
        raise MXNetError("torch.distributed is not available in this torch build; distributed "
                         "KVStore kinds ('dist_sync', 'horovod', ...) cannot be used")
    import torch.distributed as dist
    if dist.is_initialized():
        return False
    env = dist_env(environ)
    if env is None:
        raise MXNetError("no distributed environment: WORLD_SIZE (or DMLC_NUM_WORKER) is not set. "
                         "Start the workers with torchrun or `python -m hybridnet.kvstore.launch -n N "
                         "script.py`, or call torch.distributed.init_process_group yourself first")
    backend = backend or os.environ.get("HYBRIDNET_DIST_BACKEND") or "gloo"
    if backend == "gloo" and not dist.is_gloo_available():
        raise MXNetError("torch.distributed has no gloo backend in this build; set "
                         "HYBRIDNET_DIST_BACKEND to an available backend (e.g. nccl)")
    store_file = (os.environ if environ is None else environ).get(STORE_FILE_VAR)
    if store_file:
        init_method = f"file://{store_file}"
    else:
        host = env.master_addr
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        init_method = f"tcp://{host}:{env.master_port}"
    dist.init_process_group(backend, init_method=init_method, rank=env.rank,
                            world_size=env.num_workers,
                            timeout=datetime.timedelta(seconds=_timeout_s(timeout)))
    if not _created_here:
        atexit.register(destroy_process_group)
    _created_here = True
    return True


def ensure_initialized(who: str) -> None:
    """Initialize the process group from the environment unless it exists; errors name ``who``."""
    if is_initialized():
        return
    try:
        init_process_group()
    except MXNetError as e:
        raise MXNetError(f"{who} needs torch.distributed: {e}") from None


def destroy_process_group() -> None:
    """Tear down the default process group if this module created it."""
    global _created_here
    if _created_here and is_initialized():
        import torch.distributed as dist
        dist.destroy_process_group()
    _created_here = False


def rank() -> int:
    """This worker's rank (0 when not distributed), like ``KVStore.rank``."""
    if is_initialized():
        import torch.distributed as dist
        return int(dist.get_rank())
    return 0


def num_workers() -> int:
    """The number of workers (1 when not distributed), like ``KVStore.num_workers``."""
    if is_initialized():
        import torch.distributed as dist
        return int(dist.get_world_size())
    return 1


# -- the local launcher -------------------------------------------------------------------
def find_free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (for MASTER_PORT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _loopback_ifname() -> Optional[str]:
    try:
        names = [n for _, n in socket.if_nameindex()]
    except (OSError, AttributeError):  # pragma: no cover - platforms without if_nameindex
        return None
    for n in ("lo", "lo0"):
        if n in names:
            return n
    return None


def worker_env(rank: int, num_workers: int, master_addr: str, master_port: int,
               base: Optional[Mapping[str, str]] = None,
               store_file: Optional[str] = None) -> Dict[str, str]:
    """The environment of worker ``rank``: ``base`` (default ``os.environ``) plus torchrun's
    variables; with a loopback master, gloo is pinned to the loopback interface; ``store_file``
    makes the workers meet through a file store instead of rank 0's TCP store."""
    env = dict(os.environ if base is None else base)
    env.update(RANK=str(rank), WORLD_SIZE=str(num_workers), LOCAL_RANK=str(rank),
               LOCAL_WORLD_SIZE=str(num_workers), MASTER_ADDR=master_addr,
               MASTER_PORT=str(master_port))
    env.pop(STORE_FILE_VAR, None)
    if store_file is not None:
        env[STORE_FILE_VAR] = store_file
    if master_addr in _LOOPBACK and "GLOO_SOCKET_IFNAME" not in env:
        lo = _loopback_ifname()
        if lo is not None:
            env["GLOO_SOCKET_IFNAME"] = lo
    return env


def _kill(proc: subprocess.Popen, grace_s: float) -> None:
    """Stop one worker we started (and its process group): SIGTERM, then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGTERM)
        else:  # pragma: no cover
            proc.terminate()
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        try:
            if os.name == "posix":
                os.killpg(proc.pid, signal.SIGKILL)
            else:  # pragma: no cover
                proc.kill()
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()


def launch(command: Sequence[str], num_workers: int, *, master_addr: str = "127.0.0.1",
           master_port: Optional[int] = None, env: Optional[Mapping[str, str]] = None,
           timeout: Optional[float] = None, log_dir: Optional[str] = None,
           grace_s: float = 5.0) -> int:
    """Run ``command`` as ``num_workers`` local worker processes (MXNet ``tools/launch.py
    --launcher local``, torchrun ``--standalone``) and wait for them.

    Returns 0 when every worker exits with 0. When one fails, the others are stopped and its
    exit status is returned. After ``timeout`` seconds all are stopped and ``TimeoutError``
    names the workers still running. ``log_dir`` sends worker i's output to ``rank<i>.log``.
    With a loopback ``master_addr`` the workers meet through a file store in a private temporary
    directory (removed afterwards), so no rendezvous port is opened on any interface.
    """
    if isinstance(command, str):
        raise TypeError("launch: command must be a list of arguments, e.g. [sys.executable, "
                        "'train.py'], not a string")
    if not command:
        raise ValueError("launch: command is empty")
    if int(num_workers) < 1:
        raise ValueError(f"launch: num_workers must be >= 1, got {num_workers}")
    port = master_port or find_free_port(master_addr if master_addr != "localhost" else "127.0.0.1")
    procs: List[subprocess.Popen] = []
    logs: list = []
    deadline = None if timeout is None else time.monotonic() + float(timeout)
    store_dir = tempfile.mkdtemp(prefix="hybridnet-rendezvous-") if master_addr in _LOOPBACK else None
    store_file = None if store_dir is None else os.path.join(store_dir, "store")
    try:
        for r in range(int(num_workers)):
            out = None
            if log_dir is not None:
                os.makedirs(log_dir, exist_ok=True)
                out = open(os.path.join(log_dir, f"rank{r}.log"), "wb")
                logs.append(out)
            procs.append(subprocess.Popen(
                list(command), env=worker_env(r, int(num_workers), master_addr, port, env, store_file),
                stdout=out, stderr=subprocess.STDOUT if out is not None else None,
                start_new_session=(os.name == "posix")))
        while True:
            codes = [p.poll() for p in procs]
            failed = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                for p in procs:
                    _kill(p, grace_s)
                return int(failed[0][1])
            if all(c == 0 for c in codes):
                return 0
            if deadline is not None and time.monotonic() > deadline:
                running = [r for r, c in enumerate(codes) if c is None]
                for p in procs:
                    _kill(p, grace_s)
                raise TimeoutError(f"launch: workers {running} still running after {timeout} s; "
                                   f"all workers were stopped")
            time.sleep(0.02)
    finally:
        for p in procs:
            _kill(p, grace_s)
        for f in logs:
            f.close()
        if store_dir is not None:
            shutil.rmtree(store_dir, ignore_errors=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m hybridnet.kvstore.launch -n N [--host H] [--port P] [--timeout S] cmd ...``"""
    ap = argparse.ArgumentParser(
        prog="python -m hybridnet.kvstore.launch",
        description="Run N local data-parallel workers (torch.distributed).",
        epilog="Security: with the default loopback --host the workers meet through a file store in "
               "a private temporary directory and gloo talks over the loopback interface; nothing "
               "listens on other interfaces. A multi-host job (--host set to a routable address, or "
               "torchrun) uses torch's TCP store, which listens on MASTER_PORT on every interface "
               "without authentication: run such jobs only on a trusted network (a private subnet, "
               "firewall or VPN).")
    ap.add_argument("-n", "--num-workers", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1", help="MASTER_ADDR (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=None, help="MASTER_PORT (default: a free port)")
    ap.add_argument("--timeout", type=float, default=None, help="stop all workers after S seconds")
    ap.add_argument("--log-dir", default=None, help="write worker i's output to LOG_DIR/rank<i>.log")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="script.py [args] or a program")
    args = ap.parse_args(argv)
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        ap.error("missing the command to run")
    if cmd[0].endswith(".py"):
        cmd = [sys.executable] + cmd

    def _stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds through launch(), which stops the workers

    signal.signal(signal.SIGTERM, _stop)
    try:
        return launch(cmd, args.num_workers, master_addr=args.host, master_port=args.port,
                      timeout=args.timeout, log_dir=args.log_dir)
    except TimeoutError as e:
        print(str(e), file=sys.stderr)
        return 124


if __name__ == "__main__":
    sys.exit(main())
