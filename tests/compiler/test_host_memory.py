"""static_alloc's host-memory policy (compiler/host_memory.py): once a block is hybridized with
static_alloc=True, big CPU buffers freed by one call are reused by the next without page
faults (glibc only)."""
from __future__ import annotations

import os
import platform
import resource
import subprocess
import sys

import pytest
import torch

import hybridnet as mx
from hybridnet.compiler import host_memory

glibc = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                           reason="the policy is glibc's mallopt")


def _faults_of(fn) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    fn()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@glibc
def test_static_alloc_turns_the_policy_on_and_big_buffers_stop_faulting():
    net = mx.gluon.nn.Dense(4)
    net.initialize()
    net.hybridize(static_alloc=True)
    net(mx.nd.ones((2, 3)))
    assert host_memory.keep_freed_memory() is True

    def churn():  # 64 MB buffers, written and freed, as a big network's activations are
        for _ in range(4):
            t = torch.empty(16 * 1024 * 1024)
            t.fill_(1.0)
            del t
    churn()  # the heap grows to fit (the first rounds may still fault while it settles)
    churn()
    # with glibc's default every 64 MB buffer is a fresh mmap: 4 x 16,384 pages faulted per round
    assert _faults_of(churn) < 2000


@glibc
def test_the_environment_can_turn_it_off():
    code = ("import hybridnet as mx; n = mx.gluon.nn.Dense(2); n.initialize(); "
            "n.hybridize(static_alloc=True); n(mx.nd.ones((1, 2))); "
            "from hybridnet.compiler import host_memory; print(host_memory.keep_freed_memory())")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, HYBRIDNET_STATIC_ALLOC_HEAP="0", PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


@glibc
def test_release_freed_memory_gives_the_heap_back():
    def churn():
        for _ in range(4):
            t = torch.empty(16 * 1024 * 1024)
            t.fill_(1.0)
            del t
    host_memory.keep_freed_memory()
    churn()
    assert host_memory.release_freed_memory() is True
    # given back: the next big buffer faults its pages in again (kept, it would not)
    assert _faults_of(churn) > 1000
