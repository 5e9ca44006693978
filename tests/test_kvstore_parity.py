"""mx.kv API parity with MXNet 1.9.1: 2-bit gradient compression (values against a NumPy
reference with error feedback), registry names, and the kvstore.base / kvstore_server paths."""
import numpy as np
import pytest

import hybridnet as mx


def _quantize(grad, residual, threshold):
    total = grad + residual
    q = np.where(total >= threshold, threshold, np.where(total <= -threshold, -threshold, 0.0))
    return q.astype(np.float32), (total - q).astype(np.float32)


def test_two_bit_compression_matches_numpy_with_error_feedback():
    rng = np.random.default_rng(0)
    threshold = 0.4
    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": threshold})
    kv.init("w", mx.nd.zeros((6,)))
    residuals = [np.zeros(6, np.float32), np.zeros(6, np.float32)]
    for _ in range(4):
        grads = [rng.uniform(-0.6, 0.6, 6).astype(np.float32) for _ in range(2)]
        expected = np.zeros(6, np.float32)
        for d in range(2):
            q, residuals[d] = _quantize(grads[d], residuals[d], threshold)
            expected += q
        kv.push("w", [mx.nd.array(g) for g in grads])
        out = mx.nd.zeros((6,))
        kv.pull("w", out=out)
        np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-6, atol=1e-7)


def test_gradient_compression_errors():
    with pytest.raises(mx.MXNetError, match="not supported for this type"):
        mx.kv.create("local").set_gradient_compression({"type": "2bit"})
    kv = mx.kv.create("device")
    with pytest.raises(mx.MXNetError, match="'2bit'"):
        kv.set_gradient_compression({"type": "1bit"})
    with pytest.raises(mx.MXNetError, match="threshold"):
        kv.set_gradient_compression({"type": "2bit", "threshold": 0})
    with pytest.raises(mx.MXNetError, match="'type'"):
        kv.set_gradient_compression("2bit")


def test_registry_names_and_module_paths():
    assert {"horovod", "byteps", "teststore"} <= set(mx.kv.KVStoreBase.kv_registry)
    assert mx.kv.base.KVStoreBase is mx.kv.KVStoreBase and mx.kv.base.create is mx.kv.create
    assert mx.kv.kvstore.KVStore is mx.kv.KVStore

    @mx.kv.KVStoreBase.register
    class ParityStore(mx.kv.TestStore):
        pass

    store = mx.kv.create("ParityStore")
    assert isinstance(store, ParityStore)
    a, b = mx.nd.ones((2,)), mx.nd.ones((2,)) * 2
    store.pushpull("k", [a, b])
    np.testing.assert_array_equal(a.asnumpy(), [3, 3])
    del mx.kv.KVStoreBase.kv_registry["paritystore"]


def test_kvstore_server_is_refused_with_the_serverless_launch(monkeypatch):
    with pytest.raises(mx.MXNetError, match="hybridnet.kvstore.launch"):
        mx.kv.KVStoreServer(mx.kv.create("local"))
    from hybridnet.kvstore import kvstore_server
    monkeypatch.setenv("DMLC_ROLE", "server")
    with pytest.raises(mx.MXNetError, match="DMLC_ROLE='server'"):
        kvstore_server._init_kvstore_server_module()
    monkeypatch.setenv("DMLC_ROLE", "worker")
    kvstore_server._init_kvstore_server_module()
