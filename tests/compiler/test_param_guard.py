import torch

from hybridnet.compiler.param_guard import ParameterSnapshot


def test_snapshot_sees_in_place_writes_and_replacement():
    a, b = torch.ones(3), torch.zeros(2)
    snap = ParameterSnapshot([a, b])
    assert snap.matches([a, b])
    with torch.no_grad():
        a.mul_(2.0)
    assert not snap.matches([a, b])
    snap = ParameterSnapshot([a, b])
    assert not snap.matches([a, b.clone()])
    assert not snap.matches([a])
    b[0] = 5.0
    assert not snap.matches([a, b])
