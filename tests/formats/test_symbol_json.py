"""MXNet 1.9.1 ``-symbol.json`` <-> IR (spec section B): exact text, loading, upgrades, errors."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import hybridnet.ops  # noqa: F401  (registers every operator family)
from hybridnet.base import MXNetError
from hybridnet.formats import params as P
from hybridnet.formats.symbol_json import graph_to_json, json_to_graph
from hybridnet.ir.graph import Graph, Node
from hybridnet.ops import registry
from hybridnet.ops.registry import OpDef

from fixture_paths import MXNET as _MXNET  # noqa: E402

FIXTURES = Path(_MXNET)
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "model-symbol.json").exists()) \
    if FIXTURES.is_dir() else []

op = registry.get


# -- test-only operators (kept out of the real registry by monkeypatch) -------------------------
def _bn_kernel(data, gamma, beta, moving_mean, moving_var, *, eps: float = 1e-3,
               momentum: float = 0.9, fix_gamma: bool = True):
    raise NotImplementedError


def _split_kernel(data, *, num_outputs: int, axis: int = 1):
    raise NotImplementedError


FAKE_BN = OpDef("_test_BatchNorm", _bn_kernel, aux=("moving_mean", "moving_var"), total_outputs=3)
FAKE_SPLIT = OpDef("_test_split", _split_kernel, num_outputs=lambda a: a["num_outputs"])


@pytest.fixture
def fake_ops(monkeypatch):
    monkeypatch.setitem(registry._BY_NAME, FAKE_BN.name, FAKE_BN)
    monkeypatch.setitem(registry._BY_NAME, FAKE_SPLIT.name, FAKE_SPLIT)


def var(name: str, **attrs: str) -> Node:
    return Node(None, name, attrs)


def small_graph() -> Graph:
    x = var("x")
    w = var("w", __shape__="(2, 3)", __lr_mult__="1.0")
    add = Node(op("broadcast_add"), "add0", {}, [(x, 0), (w, 0)])
    r = Node(op("relu"), "relu0", {}, [(add, 0)])
    s = Node(op("_plus_scalar"), "ps0", {"scalar": 1.5}, [(r, 0)])
    return Graph([(s, 0), (add, 0)])


SMALL_JSON = "\n".join([
    '{',
    '  "nodes": [',
    '    {',
    '      "op": "null", ',
    '      "name": "x", ',
    '      "inputs": []',
    '    }, ',
    '    {',
    '      "op": "null", ',
    '      "name": "w", ',
    '      "attrs": {',
    '        "__lr_mult__": "1.0", ',
    '        "__shape__": "(2, 3)"',
    '      }, ',
    '      "inputs": []',
    '    }, ',
    '    {',
    '      "op": "broadcast_add", ',
    '      "name": "add0", ',
    '      "inputs": [[0, 0, 0], [1, 0, 0]]',
    '    }, ',
    '    {',
    '      "op": "relu", ',
    '      "name": "relu0", ',
    '      "inputs": [[2, 0, 0]]',
    '    }, ',
    '    {',
    '      "op": "_plus_scalar", ',
    '      "name": "ps0", ',
    '      "attrs": {"scalar": "1.5"}, ',
    '      "inputs": [[3, 0, 0]]',
    '    }',
    '  ], ',
    '  "arg_nodes": [0, 1], ',
    '  "node_row_ptr": [0, 1, 2, 3, 4, 5], ',
    '  "heads": [[4, 0, 0], [2, 0, 0]], ',
    '  "attrs": {"mxnet_version": ["int", 10901]}',
    '}'])


# -- writer: exact layout ---------------------------------------------------------------------
def test_small_graph_exact_text():
    assert graph_to_json(small_graph()) == SMALL_JSON


def test_small_graph_loads_typed_and_round_trips():
    g = json_to_graph(SMALL_JSON)
    assert [n.name for n in g.nodes] == ["x", "w", "add0", "relu0", "ps0"]
    ps = g.nodes[4]
    assert ps.op is op("_plus_scalar") and ps.attrs == {"scalar": 1.5}
    assert isinstance(ps.attrs["scalar"], float)
    assert g.nodes[1].attrs == {"__lr_mult__": "1.0", "__shape__": "(2, 3)"}
    assert [(n.name, k) for n, k in g.outputs] == [("ps0", 0), ("add0", 0)]
    assert g.json_attrs == {"mxnet_version": 10901}
    assert graph_to_json(g) == SMALL_JSON
    assert json_to_graph(SMALL_JSON.encode()).text() == g.text()


def test_np_shape_graph_attrs_layout():
    text = graph_to_json(small_graph(), is_np_shape=True)
    assert text.endswith('  "attrs": {\n    "is_np_shape": ["int", 1], \n    "mxnet_version": ["int", 10901]\n  }\n}')
    assert json_to_graph(text).json_attrs == {"is_np_shape": 1, "mxnet_version": 10901}


def test_long_arrays_are_multiline_and_num_args_is_added():
    xs = [var(f"x{i}") for i in range(11)]
    s = Node(op("add_n"), "sum0", {}, [(x, 0) for x in xs])
    text = graph_to_json(Graph([(s, 0)]))
    assert '      "attrs": {"num_args": "11"}, \n      "inputs": [\n        [0, 0, 0], \n        [1, 0, 0], ' in text
    assert '        [10, 0, 0]\n      ]\n    }\n  ], \n  "arg_nodes": [\n    0, \n    1, ' in text
    assert '    10\n  ], \n  "node_row_ptr": [\n    0, \n' in text
    assert '    12\n  ], \n  "heads": [[11, 0, 0]], ' in text
    g = json_to_graph(text)
    assert g.nodes[-1].attrs == {"num_args": 11}
    assert graph_to_json(g) == text


def test_ten_items_stay_on_one_line():
    xs = [var(f"x{i}") for i in range(10)]
    s = Node(op("add_n"), "sum0", {"num_args": 10}, [(x, 0) for x in xs])
    text = graph_to_json(Graph([(s, 0)]))
    assert '"inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [4, 0, 0], [5, 0, 0], ' \
           '[6, 0, 0], [7, 0, 0], [8, 0, 0], [9, 0, 0]]' in text
    assert '"arg_nodes": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], ' in text
    assert '"node_row_ptr": [\n' in text  # 12 entries


def test_string_escaping_and_raw_characters():
    name = 'a"b\\c\nd\te\rf\x01g \u00e9\u4e2d'
    text = graph_to_json(Graph([(var(name, __init__='["zero", {}]'), 0)]))
    assert '"name": "a\\"b\\\\c\\nd\\te\\rf\x01g \u00e9\u4e2d", ' in text
    assert '"attrs": {"__init__": "[\\"zero\\", {}]"}, ' in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # MXNet writes raw control characters: strict parsers refuse them
    g = json_to_graph(text)
    assert g.nodes[0].name == name and g.nodes[0].attrs == {"__init__": '["zero", {}]'}
    assert graph_to_json(g) == text
    assert json_to_graph(text.encode("utf-8")).nodes[0].name == name


def test_aux_versions_and_total_outputs(fake_ops):
    x, g1, b1, mm, mv = (var(n) for n in ("data", "gamma", "beta", "mean", "var"))
    bn1 = Node(FAKE_BN, "bn1", {"eps": 1e-05}, [(x, 0), (g1, 0), (b1, 0), (mm, 0), (mv, 0)])
    bn2 = Node(FAKE_BN, "bn2", {}, [(bn1, 0), (g1, 0), (b1, 0), (mm, 0), (mv, 0)])
    use = Node(op("broadcast_add"), "use", {}, [(bn2, 0), (mm, 0)])
    graph = Graph([(use, 0)])
    text = graph_to_json(graph)
    d = json.loads(text)
    assert d["nodes"][5]["inputs"] == [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 1], [4, 0, 1]]
    assert d["nodes"][6]["inputs"] == [[5, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 2], [4, 0, 2]]
    assert d["nodes"][7]["inputs"] == [[6, 0, 0], [3, 0, 2]]  # a read after two mutations
    assert d["node_row_ptr"] == [0, 1, 2, 3, 4, 5, 8, 11, 12]
    assert d["nodes"][5]["attrs"] == {"eps": "1e-05"}
    g = json_to_graph(text)
    assert [v.name for v in g.aux_variables()] == ["mean", "var"]
    assert graph_to_json(g) == text


def test_multi_output_heads(fake_ops):
    x = var("x")
    sp = Node(FAKE_SPLIT, "split0", {"num_outputs": 3}, [(x, 0)])
    r = Node(op("relu"), "r", {}, [(sp, 1)])
    text = graph_to_json(Graph([(sp, 2), (r, 0), (sp, 0)]))
    d = json.loads(text)
    assert d["heads"] == [[1, 2, 0], [2, 0, 0], [1, 0, 0]]
    assert d["nodes"][2]["inputs"] == [[1, 1, 0]]
    assert d["node_row_ptr"] == [0, 1, 4, 5]
    g = json_to_graph(text)
    assert [(n.name, k) for n, k in g.outputs] == [("split0", 2), ("r", 0), ("split0", 0)]
    assert graph_to_json(g) == text


def test_duplicate_op_node_names_are_fine():
    x = var("x")
    a = Node(op("relu"), "same", {}, [(x, 0)])
    b = Node(op("relu"), "same", {}, [(a, 0)])
    text = graph_to_json(Graph([(b, 0)]))
    g = json_to_graph(text)
    assert [n.name for n in g.nodes] == ["x", "same", "same"]
    assert graph_to_json(g) == text


# -- MXNet fixtures -------------------------------------------------------------------------------
@pytest.mark.skipif(not CASES, reason="MXNet fixtures not available")
@pytest.mark.parametrize("case", CASES)
def test_fixture_json_round_trips_byte_for_byte(case):
    path = FIXTURES / case / "model-symbol.json"
    text = path.read_text(encoding="utf-8")
    g = json_to_graph(text)
    assert graph_to_json(g) == text
    meta = json.loads((FIXTURES / case / "case.json").read_text())
    # the export params file names its entries arg:/aux: + graph variable, in graph order
    inputs = set(meta["input_names"])
    params = [v for v in g.variables() if v.name not in inputs]
    aux = {v.name for v in g.aux_variables()}
    expected = [("aux:" if v.name in aux else "arg:") + v.name for v in params]
    assert expected == meta["params_file_names"]
    names, arrays = P.load(FIXTURES / case / "model-0000.params")
    assert names == expected
    assert len(g.outputs) == len(meta["outputs"])


@pytest.mark.skipif(not CASES, reason="MXNet fixtures not available")
def test_fixture_typed_attributes():
    text = (FIXTURES / "convbn" / "model-symbol.json").read_text()
    g = json_to_graph(text)
    conv = next(n for n in g.nodes if n.opname == "Convolution")
    assert tuple(conv.attrs["kernel"]) == (3, 3) and conv.attrs["no_bias"] is False
    bn = next(n for n in g.nodes if n.opname == "BatchNorm")
    assert bn.attrs["eps"] == 1e-05 and bn.attrs["momentum"] == 0.9
    assert [v.name.split("_")[-1] for v in g.aux_variables()] == ["mean", "var"]


# -- loading: legacy files and merging rules ----------------------------------------------------
LEGACY = """{"nodes": [
  {"op": "null", "name": "x", "param": {}, "inputs": [], "backward_source_id": -1},
  {"op": "null", "name": "w", "attr": {"lr_mult": "0.5", "foo_wd_mult": "2"}, "inputs": [],
   "backward_source_id": -1},
  {"op": "broadcast_add", "name": "add0", "param": {},
   "attr": {"ctx_group": "dev1", "rhs_wd_mult": "0.0"}, "inputs": [[0, 0], [1, 0]],
   "backward_source_id": -1},
  {"op": "_plus_scalar", "name": "ps", "param": {"scalar": "2"}, "attr": {"scalar": "3"},
   "inputs": [[2, 0]]}
 ],
 "arg_nodes": [0, 1],
 "heads": [[3, 0]]}"""


def test_legacy_file_without_version():
    g = json_to_graph(LEGACY)
    x, w, add, ps = g.nodes
    assert w.attrs == {"__lr_mult__": "0.5", "foo_wd_mult": "2", "__wd_mult__": "0.0"}
    assert add.attrs == {"__ctx_group__": "dev1"}
    assert ps.attrs == {"scalar": 3}  # 'param' never overwrites 'attr'
    d = json.loads(graph_to_json(g))  # saving upgrades the file
    assert d["attrs"] == {"mxnet_version": ["int", 10901]}
    assert d["nodes"][2]["inputs"] == [[0, 0, 0], [1, 0, 0]]
    assert d["heads"] == [[3, 0, 0]] and "node_row_ptr" in d


def test_legacy_hidden_key_with_unknown_input_prefix_stays_an_ignored_attribute():
    # elemwise_add has no attribute parser in MXNet: a key naming no input is kept, unused
    text = LEGACY.replace('"rhs_wd_mult"', '"foo_wd_mult"')
    assert "foo_wd_mult" in json_to_graph(text).nodes[2].attrs


def test_hidden_keys_are_not_renamed_in_current_files():
    d = json.loads(SMALL_JSON)
    d["nodes"][2]["attrs"] = {"lr_mult": "2.0"}
    assert json_to_graph(json.dumps(d)).nodes[2].attrs == {"lr_mult": "2.0"}
    d["nodes"][2]["attrs"] = {"__lr_mult__": "2.0"}
    assert json_to_graph(json.dumps(d)).nodes[2].attrs == {"__lr_mult__": "2.0"}


def test_attrs_and_attr_later_one_replaces():
    base = SMALL_JSON.replace('"attrs": {"scalar": "1.5"}, ', '{A}, ')
    g = json_to_graph(base.replace("{A}", '"attrs": {"scalar": "1"}, "attr": {"scalar": "2"}'))
    assert g.nodes[4].attrs == {"scalar": 2}
    g = json_to_graph(base.replace("{A}", '"attr": {"scalar": "2"}, "attrs": {"scalar": "1"}'))
    assert g.nodes[4].attrs == {"scalar": 1}
    g = json_to_graph(base.replace("{A}", '"attr": {"scalar": "2", "__x__": "y"}, "attrs": {"scalar": "1"}'))
    assert g.nodes[4].attrs == {"scalar": 1}  # replaced entirely, not merged
    g = json_to_graph(base.replace("{A}", '"param": {"scalar": "4", "__p__": "q"}, "attrs": {"scalar": "1"}'))
    assert g.nodes[4].attrs == {"scalar": 1, "__p__": "q"}


def _bn_file(version, n_inputs, extra_var_attrs=None):
    nodes = [{"op": "null", "name": "data", "inputs": []},
             {"op": "null", "name": "g", "inputs": []},
             {"op": "null", "name": "b", "inputs": []}]
    if n_inputs == 5:
        nodes += [{"op": "null", "name": "mm", "inputs": [], **(extra_var_attrs or {})},
                  {"op": "null", "name": "mv", "inputs": []}]
    nodes.append({"op": "_test_BatchNorm", "name": "bn0", "attrs": {"eps": "0.001"},
                  "inputs": [[i, 0] for i in range(n_inputs)]})
    top = {"nodes": nodes, "arg_nodes": list(range(n_inputs)), "heads": [[n_inputs, 0]]}
    if version is not None:
        top["attrs"] = {"mxnet_version": ["int", version]}
    return json.dumps(top)


def test_legacy_batchnorm_gets_its_aux_variables(fake_ops):
    g = json_to_graph(_bn_file(None, 3))
    aux = g.aux_variables()
    assert [v.name for v in aux] == ["bn0_moving_mean", "bn0_moving_var"]
    assert aux[0].attrs == {"eps": "0.001", "__init__": '["zero", {}]'}
    assert aux[1].attrs == {"eps": "0.001", "__init__": '["one", {}]'}
    d = json.loads(graph_to_json(g))
    assert d["nodes"][-1]["inputs"][3:] == [[3, 0, 1], [4, 0, 1]]
    with pytest.raises(MXNetError, match=r"node 3 \('bn0'\).*takes 5 input"):
        json_to_graph(_bn_file(900, 3))  # 0.9.0 files must have them


def test_legacy_batchnorm_aux_init(fake_ops):
    g = json_to_graph(_bn_file(903, 5, {"attrs": {"__init__": "zeros"}}))
    mm, mv = g.aux_variables()
    assert mm.attrs == {"__init__": "zeros"} and mv.attrs == {"__init__": '["one", {}]'}
    mm, mv = json_to_graph(_bn_file(904, 5)).aux_variables()
    assert mm.attrs == {} and mv.attrs == {}


@pytest.mark.parametrize("version,kept", [(904, False), (905, True), (10901, True)])
def test_legacy_argmax_axis(fake_ops, version, kept):
    text = json.dumps({"nodes": [{"op": "null", "name": "x", "inputs": []},
                                 {"op": "argmax", "name": "am", "attrs": {"axis": "-1"}, "inputs": [[0, 0, 0]]}],
                       "arg_nodes": [0], "heads": [[1, 0, 0]],
                       "attrs": {"mxnet_version": ["int", version]}})
    am = json_to_graph(text).nodes[1]
    assert ("axis" in am.attrs) == kept
    if kept:
        assert am.attrs["axis"] == -1


def test_newer_version_only_warns():
    text = SMALL_JSON.replace("10901", "20000")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = json_to_graph(text)
    assert any("newer MXNet" in str(w.message) for w in caught)
    assert graph_to_json(g) == SMALL_JSON


def test_optional_keys_are_accepted():
    d = json.loads(SMALL_JSON)
    del d["node_row_ptr"]
    d["nodes"][3]["control_deps"] = [2]
    d["nodes"][3]["subgraphs"] = []
    d["arg_nodes"] = []
    assert graph_to_json(json_to_graph(json.dumps(d))) == SMALL_JSON
    d["node_row_ptr"] = [7, 7]  # ignored on load
    assert graph_to_json(json_to_graph(json.dumps(d))) == SMALL_JSON


# -- loading: errors ------------------------------------------------------------------------------
def _mutate(fn):
    d = json.loads(SMALL_JSON)
    fn(d)
    return json.dumps(d)


def _set(path, value):
    def fn(d):
        obj = d
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
    return fn


def _delete(path):
    def fn(d):
        obj = d
        for k in path[:-1]:
            obj = obj[k]
        del obj[path[-1]]
    return fn


ERRORS = [
    (_set(["extra"], 1), "unknown top-level key 'extra'"),
    (_set(["nodes", 2, "color"], "red"), r"node 2 \('add0'\): unknown key 'color'"),
    (_delete(["heads"]), "required top-level key 'heads'"),
    (_delete(["nodes", 3, "inputs"]), r"node 3 \('relu0'\): required key 'inputs'"),
    (_delete(["nodes", 3, "name"]), r"node 3: required key 'name'"),
    (_set(["nodes", 3, "op"], "NoSuchOp"), r"node 3 \('relu0'\).*NoSuchOp"),
    (_set(["nodes", 3, "inputs"], [[2, 0, 0], [1, 0, 0]]), r"node 3 \('relu0'\).*takes 1 input"),
    (_set(["nodes", 2, "inputs"], [[0, 0, 0]]), r"node 2 \('add0'\).*takes 2 input"),
    (_set(["nodes", 3, "inputs"], [[4, 0, 0]]), r"node 3 \('relu0'\): input 0 refers to node 4, which comes later"),
    (_set(["nodes", 3, "inputs"], [[3, 0, 0]]), r"node 3 \('relu0'\): input 0 refers to itself"),
    (_set(["nodes", 3, "inputs"], [[9, 0, 0]]), r"node 3 \('relu0'\): input 0 refers to node 9, which does not exist"),
    (_set(["nodes", 3, "inputs"], [[2, 1, 0]]), r"node 3 \('relu0'\): input 0 selects output 1 of node 2 \('add0'\)"),
    (_set(["nodes", 3, "inputs"], [[2, -1, 0]]), r"node 3 \('relu0'\) input 0: invalid entry"),
    (_set(["nodes", 3, "inputs"], [[2]]), r"node 3 \('relu0'\) input 0: invalid entry"),
    (_set(["nodes", 3, "inputs"], [[2, 0, 0, 0]]), r"node 3 \('relu0'\) input 0: invalid entry"),
    (_set(["nodes", 3, "inputs"], [[2.0, 0, 0]]), r"node 3 \('relu0'\) input 0: invalid entry"),
    (_set(["nodes", 3, "inputs"], [[True, 0, 0]]), r"node 3 \('relu0'\) input 0: invalid entry"),
    (_set(["nodes", 1, "name"], "x"), r"node 1 \('x'\): duplicate variable name 'x' \(also node 0"),
    (_set(["nodes", 4, "attrs"], {"scalar": 1.5}), r"node 4 \('ps0'\) 'attrs': attribute 'scalar' has the non-string"),
    (_set(["nodes", 1, "attrs"], {"__shape__": [2, 3]}), r"node 1 \('w'\) 'attrs': attribute '__shape__'"),
    (_set(["nodes", 4, "attrs"], {"scalar": "abc"}), r"node 4 \('ps0'\).*scalar.*'abc'"),
    (_set(["nodes", 4, "attrs"], {"scalar": "1", "bogus": "1"}), r"node 4 \('ps0'\).*no attribute 'bogus'"),
    (_set(["nodes", 4, "attrs"], "scalar=1"), r"node 4 \('ps0'\) 'attrs': expected an object"),
    (_set(["nodes", 0, "inputs"], [[1, 0, 0]]), r"node 0 \('x'\): input 0 refers to node 1"),
    (_set(["nodes", 1, "inputs"], [[0, 0, 0]]), r"node 1 \('w'\): a variable \(op 'null'\) cannot have inputs"),
    (_set(["nodes", 3, "control_deps"], [5]), r"node 3 \('relu0'\): 'control_deps'"),
    (_set(["nodes", 3, "subgraphs"], [{"nodes": []}]), r"node 3 \('relu0'\): subgraphs"),
    (_set(["nodes", 3, "name"], 7), r"node 3: 'name' must be a string"),
    (_set(["nodes", 3, "op"], None), r"node 3 \('relu0'\): 'op' must be a string"),
    (_set(["nodes", 3], [1, 2]), r"node 3 must be an object"),
    (_set(["nodes"], {}), "'nodes' must be a list"),
    (_set(["arg_nodes"], [0, 2]), r"arg_nodes: node 2 \('add0'\) is an operator"),
    (_set(["arg_nodes"], [0, 17]), "arg_nodes: 17 is not a node id"),
    (_set(["heads"], [[5, 0, 0]]), r"heads\[0\] refers to node 5, which does not exist"),
    (_set(["heads"], [[4, 1, 0]]), r"heads\[0\] selects output 1 of node 4 \('ps0'\)"),
    (_set(["heads"], [[4]]), r"heads\[0\]: invalid entry"),
    (_set(["attrs"], {"mxnet_version": 10901}), "graph attribute 'mxnet_version' must be a \\[type, value\\] pair"),
    (_set(["attrs"], {"mxnet_version": ["str", "1.9.1"]}), "mxnet_version must be"),
    (_set(["attrs"], []), "top-level 'attrs' must be an object"),
]


@pytest.mark.parametrize("mutate,pattern", ERRORS, ids=[p for _, p in ERRORS])
def test_invalid_graphs(mutate, pattern):
    with pytest.raises(MXNetError, match=pattern):
        json_to_graph(_mutate(mutate))


@pytest.mark.parametrize("text,pattern", [
    ("", "invalid JSON"),
    ("[1, 2]", "top level must be an object"),
    ("{\"nodes\": [}", "invalid JSON"),
    ("[" * 100000 + "]" * 100000, "invalid JSON"),
    (b"\xff\xfe{}", "not valid UTF-8"),
])
def test_bad_json(text, pattern):
    with pytest.raises(MXNetError, match=pattern):
        json_to_graph(text)


def test_every_truncation_fails_cleanly():
    for n in range(len(SMALL_JSON)):
        with pytest.raises(MXNetError):
            json_to_graph(SMALL_JSON[:n])


def test_fuzz_byte_flips_raise_only_mxnet_errors(fake_ops):
    bases = [SMALL_JSON.encode(), _bn_file(None, 3).encode(), LEGACY.encode()]
    for case in ("mlp", "lenet"):
        p = FIXTURES / case / "model-symbol.json"
        if p.exists():
            bases.append(p.read_bytes())
    rng = np.random.RandomState(99)
    alphabet = b'{}[]",:0123456789-_ abcxyzTFN\\\n'
    for base in bases:
        for _ in range(250):
            m = bytearray(base)
            for _ in range(rng.randint(1, 4)):
                pos = rng.randint(0, len(m))
                m[pos] = alphabet[rng.randint(0, len(alphabet))] if rng.rand() < 0.8 else rng.randint(0, 256)
            try:
                g = json_to_graph(bytes(m))
            except MXNetError:
                continue
            graph_to_json(g)  # whatever loads must also save
