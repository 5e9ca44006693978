"""Distributed data-parallel training on torch.distributed (gloo, loopback only).

Two worker processes are started with ``python -m hybridnet.kvstore.launch`` running this file
as a script (see ``_worker_main``); each writes its results to ``rank<i>.npz`` and the tests
compare them with each other and with a single-process run on the concatenated batches.
MXNet's dist_sync semantics: gradients are SUMMED over workers and ``step(batch_size)``
rescales by 1/batch_size, so passing the global batch (per-worker batch x workers) reproduces
single-process training on the whole batch.
"""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NUM_WORKERS = 2
PER_WORKER = 4
STEPS = 3
S = (2, 3)

# (kvstore, optimizer, optimizer_params, update_on_kvstore argument, expected update_on_kvstore)
SCENARIOS = {
    # MXNet 1.9.1: a dist kvstore runs the optimizer by default, SGD included (MXNET_UPDATE_ON_KVSTORE=1)
    "sgd_momentum": ("dist_sync", "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}, None, True),
    "adam_on_kvstore": ("dist_sync", "adam", {"learning_rate": 0.01}, None, True),
    "sgd_on_kvstore": ("dist_device_sync", "sgd", {"learning_rate": 0.1, "aggregate_num": 1}, True, True),
    "adam_on_workers": ("dist", "adam", {"learning_rate": 0.01}, False, False),
    "horovod_adam": ("horovod", "adam", {"learning_rate": 0.01}, None, False),
}


def _dist_ok():
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    return dist.is_available() and dist.is_gloo_available()


# -- shared by the workers and the single-process reference -----------------------------------
def _make_net():
    from hybridnet import gluon
    from hybridnet.gluon import nn

    class MLP(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.hidden = nn.Dense(8, in_units=5)
                self.out = nn.Dense(3, in_units=8)

        def hybrid_forward(self, F, x):
            return self.out(F.tanh(self.hidden(x)))

    return MLP()


def _data():
    rng = np.random.RandomState(42)
    x = rng.randn(STEPS, NUM_WORKERS * PER_WORKER, 5).astype(np.float32)
    y = rng.randint(0, 3, size=(STEPS, NUM_WORKERS * PER_WORKER)).astype(np.float32)
    return x, y


def _train(scenario, init_seed, shard, single_process=False):
    """Train the MLP for STEPS steps on rows ``shard`` of each global batch (with the scenario's
    kvstore, or none for the single-process reference); returns the final parameters (in
    collect_params order), the trainer and the initial parameters."""
    import hybridnet as mx
    from hybridnet import gluon
    kind, optimizer, opt_params, uok, _ = SCENARIOS[scenario]
    net = _make_net()
    net.initialize()
    params = list(net.collect_params().values())
    rng = np.random.RandomState(init_seed)
    for p in params:
        p.set_data(mx.nd.array(rng.randn(*p.shape).astype(np.float32) * 0.5))
    init = [p.data().asnumpy().copy() for p in params]
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), optimizer, dict(opt_params),
                            kvstore=None if single_process else kind,
                            update_on_kvstore=None if single_process else uok)
    trainer.synced = [p.data().asnumpy().copy() for p in params]  # before the first forward
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    xs, ys = _data()
    for s in range(STEPS):
        x, y = mx.nd.array(xs[s][shard]), mx.nd.array(ys[s][shard])
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(NUM_WORKERS * PER_WORKER)  # the global batch size
    return [p.data().asnumpy() for p in params], trainer, init


def _worker_main(outdir):
    """One worker: KVStore primitives, then every training scenario; results to rank<i>.npz."""
    import hybridnet as mx
    r = int(os.environ["RANK"])
    res = {}
    ones = mx.nd.ones(S)

    kv = mx.kv.create("dist_sync")
    res["rank"], res["num_workers"] = kv.rank, kv.num_workers
    res["type"] = kv.type
    kv.init("w", ones * (r + 1))  # rank 0's value wins
    out = mx.nd.zeros(S)
    kv.pull("w", out=out)
    res["init_pull"] = out.asnumpy()
    kv.push("w", [ones * (r + 1), ones * 10 * (r + 1)])  # two devices, two workers: summed
    kv.pull("w", out=out)
    res["push_pull"] = out.asnumpy()
    a = [ones * (r + 1), ones * (r + 1)]
    b = mx.nd.array(np.arange(5.0) * 10 ** r, dtype="float64")
    kv.pushpull(["a", "b"], [a, b])  # coalesced, two dtypes
    res["pushpull_a0"], res["pushpull_a1"] = a[0].asnumpy(), a[1].asnumpy()
    res["pushpull_b"] = b.asnumpy()
    res["pushpull_b_dtype"] = str(b.dtype.__name__ if hasattr(b.dtype, "__name__") else b.dtype)
    dst = [mx.nd.zeros(S), mx.nd.zeros(S)]
    kv.pushpull("w", ones * (r + 2), out=dst)
    res["pushpull_out"] = dst[0].asnumpy()

    flag = os.path.join(outdir, "before_barrier")
    if r == 1:
        time.sleep(0.5)
        with open(flag, "w") as f:
            f.write("1")
    kv.barrier()
    res["barrier_saw_flag"] = os.path.exists(flag)

    kv2 = mx.kv.create("dist_device_sync")
    w0 = np.arange(6.0, dtype=np.float32).reshape(S)
    kv2.init(0, mx.nd.array(w0 + 100 * r))
    kv2.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    kv2.push(0, ones * (r + 1))
    kv2.pull(0, out=out)
    res["updated"] = out.asnumpy()

    hv = mx.kv.create("horovod")
    res["hv_rank"], res["hv_num_workers"] = hv.rank, hv.num_workers
    o = mx.nd.zeros(S)
    hv.broadcast(0, ones * (r + 5), out=o)
    res["hv_broadcast"] = o.asnumpy()
    v = ones * (r + 1)
    hv.pushpull(1, v)
    res["hv_pushpull"] = v.asnumpy()

    shard = slice(r * PER_WORKER, (r + 1) * PER_WORKER)
    for name in SCENARIOS:
        final, trainer, init = _train(name, init_seed=r, shard=shard)
        for i, w in enumerate(final):
            res[f"{name}_p{i}"] = w
        for i, w in enumerate(init):
            res[f"{name}_init{i}"] = w
        for i, w in enumerate(trainer.synced):
            res[f"{name}_synced{i}"] = w
        res[f"{name}_uok"] = bool(trainer._update_on_kvstore)
        if name == "adam_on_kvstore":  # MXNet refuses a new batch size once the store runs Adam
            try:
                trainer.step(PER_WORKER)
                res["batch_change_raised"] = False
            except UserWarning:
                res["batch_change_raised"] = True
            trainer.save_states(os.path.join(outdir, f"adam{r}.states"))

    # deferred initialization: shapes are known only at the first forward, after the Trainer
    # was created, so the first gradients come from each worker's own values (warned about)
    from hybridnet import gluon
    mx.random.seed(r)
    net = gluon.nn.Dense(3)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore="dist_sync")
    x = mx.nd.ones((2, 4))
    with mx.autograd.record():
        y = net(x).sum()
    y.backward()
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.step(2 * NUM_WORKERS)
    res["deferred_warned"] = any("initialized after the Trainer" in str(w.message) for w in caught)
    res["deferred_weight"] = net.weight.data().asnumpy()
    np.savez(os.path.join(outdir, f"rank{r}.npz"), **res)


# -- the tests ----------------------------------------------------------------------------------
pytestmark = pytest.mark.skipif(not _dist_ok(), reason="torch.distributed with gloo is unavailable")


def _worker_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["HYBRIDNET_DIST_TIMEOUT"] = "60"  # a lost peer fails a collective instead of hanging
    env["OMP_NUM_THREADS"] = "1"
    return env


def _run_group(cmd, timeout):
    """Run ``cmd`` in its own process group; on timeout stop the whole group (SIGTERM, then
    SIGKILL) so no worker outlives the test. Returns (exit status, output)."""
    proc = subprocess.Popen(cmd, env=_worker_env(), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        out, _ = proc.communicate()
        pytest.fail(f"{cmd[:4]} did not finish in {timeout} s:\n{out.decode(errors='replace')[-3000:]}")
    return proc.returncode, out.decode(errors="replace")


@pytest.fixture(scope="module")
def dist_run(tmp_path_factory):
    """Run the workers once: (output folder, [rank 0 results, rank 1 results])."""
    outdir = str(tmp_path_factory.mktemp("dist"))
    logdir = os.path.join(outdir, "logs")
    cmd = [sys.executable, "-m", "hybridnet.kvstore.launch", "-n", str(NUM_WORKERS),
           "--timeout", "120", "--log-dir", logdir, os.path.abspath(__file__), outdir]
    rc, output = _run_group(cmd, timeout=180)
    logs = ""
    for r in range(NUM_WORKERS):
        path = os.path.join(logdir, f"rank{r}.log")
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                logs += f"--- rank {r} ---\n{f.read()[-4000:]}\n"
    assert rc == 0, f"launcher exit {rc}\n{output[-2000:]}\n{logs}"
    out = []
    for r in range(NUM_WORKERS):
        with np.load(os.path.join(outdir, f"rank{r}.npz")) as z:
            out.append({k: z[k] for k in z.files})
    return outdir, out


@pytest.fixture(scope="module")
def results(dist_run):
    return dist_run[1]


def test_rank_and_num_workers(results):
    assert [int(r["rank"]) for r in results] == list(range(NUM_WORKERS))
    for r in results:
        assert int(r["num_workers"]) == NUM_WORKERS
        assert str(r["type"]) == "dist_sync"
        assert int(r["hv_num_workers"]) == NUM_WORKERS
    assert [int(r["hv_rank"]) for r in results] == list(range(NUM_WORKERS))


def test_kvstore_primitives_sum_across_workers(results):
    for r in results:
        np.testing.assert_array_equal(r["init_pull"], np.full(S, 1.0))  # rank 0's init
        np.testing.assert_array_equal(r["push_pull"], np.full(S, 11.0 * (1 + 2)))
        np.testing.assert_array_equal(r["pushpull_a0"], np.full(S, 2.0 * (1 + 2)))
        np.testing.assert_array_equal(r["pushpull_a1"], np.full(S, 2.0 * (1 + 2)))
        np.testing.assert_array_equal(r["pushpull_b"], np.arange(5.0) * 11)
        np.testing.assert_array_equal(r["pushpull_out"], np.full(S, 2.0 + 3.0))
        assert bool(r["barrier_saw_flag"])
        # rank 0's initial weight, SGD on the summed gradient (1 + 2)
        np.testing.assert_allclose(r["updated"], np.arange(6.0).reshape(S) - 0.1 * 3, rtol=1e-6)
        np.testing.assert_array_equal(r["hv_broadcast"], np.full(S, 5.0))
        np.testing.assert_array_equal(r["hv_pushpull"], np.full(S, 3.0))


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_workers_match_each_other_and_single_process(results, scenario):
    n = len([k for k in results[0] if k.startswith(f"{scenario}_p")])
    assert n == 4
    # the workers started from different weights: the Trainer broadcast rank 0's
    assert not np.array_equal(results[0][f"{scenario}_init0"], results[1][f"{scenario}_init0"])
    for r in results:
        assert bool(r[f"{scenario}_uok"]) is SCENARIOS[scenario][4]
    for i in range(n):  # ... before their first forward
        np.testing.assert_array_equal(results[1][f"{scenario}_synced{i}"], results[0][f"{scenario}_init{i}"])
        np.testing.assert_array_equal(results[0][f"{scenario}_synced{i}"], results[0][f"{scenario}_init{i}"])
    for i in range(n):
        np.testing.assert_array_equal(results[0][f"{scenario}_p{i}"], results[1][f"{scenario}_p{i}"])
    ref, trainer, init = _train(scenario, init_seed=0, shard=slice(None), single_process=True)
    assert trainer._kvstore is None
    for i in range(n):
        np.testing.assert_array_equal(init[i], results[0][f"{scenario}_init{i}"])
        assert not np.allclose(ref[i], init[i])  # training moved the weights
        np.testing.assert_allclose(results[0][f"{scenario}_p{i}"], ref[i], rtol=1e-5, atol=1e-6)


def test_batch_size_change_refused_with_dist_update_on_kvstore(results):
    for r in results:
        assert bool(r["batch_change_raised"])


def test_workers_save_identical_optimizer_states(dist_run):
    outdir, blobs = dist_run[0], []
    for r in range(NUM_WORKERS):
        with open(os.path.join(outdir, f"adam{r}.states"), "rb") as f:
            blobs.append(f.read())
    assert len(blobs[0]) > 100 and blobs[0] == blobs[1]


def test_deferred_parameters_are_synchronized_at_first_step(results):
    np.testing.assert_array_equal(results[0]["deferred_weight"], results[1]["deferred_weight"])
    # rank 1 had other values before the step; rank 0 kept its own
    assert [bool(r["deferred_warned"]) for r in results] == [False, True]


# -- the launcher stops everything it started ---------------------------------------------------
def test_launcher_stops_peers_when_a_worker_fails(tmp_path):
    from hybridnet.kvstore import launch
    script = ("import os, sys, time\n"
              "if os.environ['RANK'] == '1':\n    sys.exit(3)\n"
              "time.sleep(60)\n")
    t0 = time.monotonic()
    rc = launch.launch([sys.executable, "-c", script], 2, timeout=50, log_dir=str(tmp_path))
    assert rc == 3
    assert time.monotonic() - t0 < 30


def test_launcher_timeout_kills_hung_workers(tmp_path):
    from hybridnet.kvstore import launch
    pid_file = tmp_path / "pids"
    script = (f"import os, time\nopen({str(pid_file)!r} + os.environ['RANK'], 'w')"
              f".write(str(os.getpid()))\ntime.sleep(60)\n")
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match=r"workers \[0, 1\] still running"):
        launch.launch([sys.executable, "-c", script], 2, timeout=2.5, grace_s=2)
    assert time.monotonic() - t0 < 20
    for r in range(2):
        pid = int((tmp_path / f"pids{r}").read_text())
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


_OPEN_PORTS = r"""
import os, sys
import numpy as np
import hybridnet as mx

def listening_beyond_loopback():
    # (address, port) of this process's listening TCP sockets not bound to a loopback address
    mine = set()
    for fd in os.listdir('/proc/self/fd'):
        try:
            link = os.readlink('/proc/self/fd/' + fd)
        except OSError:
            continue
        if link.startswith('socket:['):
            mine.add(link[8:-1])
    found = []
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        with open(table) as f:
            for line in list(f)[1:]:
                cols = line.split()
                addr, port = cols[1].split(':')
                if cols[3] != '0A' or cols[9] not in mine:
                    continue
                loopback = addr in ('0100007F', '00000000000000000000000001000000') \
                    or addr.endswith('0100007F') and addr.startswith('0000000000000000FFFF0000')
                if not loopback:
                    found.append((addr, int(port, 16)))
    return found

kv = mx.kv.create('dist_sync')
v = mx.nd.ones((2,))
kv.pushpull(0, v)
np.save(os.path.join(sys.argv[1], 'r%d.npy' % kv.rank), np.array(
    [len(listening_beyond_loopback()), bool(os.environ.get('HYBRIDNET_DIST_STORE_FILE')), v.asnumpy()[0]]))
"""


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux's /proc/net/tcp")
def test_local_launcher_opens_no_port_beyond_loopback(tmp_path):
    # rank 0's TCP rendezvous store would listen on every interface, unauthenticated
    script = tmp_path / "w.py"
    script.write_text(_OPEN_PORTS)
    rc, out = _run_group([sys.executable, "-m", "hybridnet.kvstore.launch", "-n", "2", "--timeout", "100",
                          str(script), str(tmp_path)], timeout=150)
    assert rc == 0, out[-3000:]
    for r in range(2):
        np.testing.assert_array_equal(np.load(tmp_path / f"r{r}.npy"), [0, 1, 2.0])


def test_launcher_store_directory_is_private_and_removed(tmp_path):
    from hybridnet.kvstore import launch
    script = (f"import os, stat\npath = os.environ['HYBRIDNET_DIST_STORE_FILE']\n"
              f"mode = stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode)\n"
              f"open({str(tmp_path)!r} + '/r' + os.environ['RANK'], 'w').write(path + ' ' + oct(mode))\n")
    assert launch.launch([sys.executable, "-c", script], 2, timeout=50) == 0
    seen = {(tmp_path / f"r{r}").read_text() for r in range(2)}
    assert len(seen) == 1  # one store for the job
    path, mode = seen.pop().split()
    assert mode == "0o700"
    assert not os.path.exists(os.path.dirname(path))
    env = launch.worker_env(0, 2, "10.0.0.1", 1234, {"HYBRIDNET_DIST_STORE_FILE": "/stale"})
    assert "HYBRIDNET_DIST_STORE_FILE" not in env  # a multi-host job uses the TCP store


def test_launcher_help_says_how_multi_host_jobs_are_secured(capsys):
    from hybridnet.kvstore import launch
    with pytest.raises(SystemExit):
        launch.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "without authentication" in text and "trusted network" in text


def test_torchrun_environment_is_picked_up(tmp_path):
    # torchrun sets RANK/WORLD_SIZE/MASTER_*; mx.kv.create('dist_sync') initializes from them
    try:
        import torch.distributed.run  # noqa: F401
    except ImportError:
        pytest.skip("torch.distributed.run (torchrun) is unavailable")
    script = tmp_path / "w.py"
    script.write_text(
        "import os, sys\n"
        "import numpy as np\n"
        "import hybridnet as mx\n"
        "kv = mx.kv.create('dist_sync')\n"
        "v = mx.nd.ones((3,)) * (kv.rank + 1)\n"
        "kv.pushpull(0, v)\n"
        f"np.save(os.path.join({str(tmp_path)!r}, 'r%d.npy' % kv.rank), "
        "np.concatenate([[kv.rank, kv.num_workers], v.asnumpy()]))\n")
    rc, out = _run_group([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc_per_node", "2", "--max_restarts", "0", str(script)], timeout=120)
    assert rc == 0, out[-3000:]
    for r in range(2):
        np.testing.assert_array_equal(np.load(tmp_path / f"r{r}.npy"), [r, 2, 3.0, 3.0, 3.0])


if __name__ == "__main__":
    _worker_main(sys.argv[1])
