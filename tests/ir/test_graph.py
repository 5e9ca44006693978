"""hybridnet/ir/graph.py: node order, the cycle error, transform, replace_inputs, the stable
text form and every kind of broken graph ``Graph.lint`` claims to catch."""
from __future__ import annotations

import pytest

import hybridnet.ops  # noqa: F401  (registers every operator family)
from hybridnet.ir.graph import MAX_SUBGRAPH_DEPTH, Graph, GraphError, Node, replace_inputs, topo_order, transform
from hybridnet.ops.registry import get as op


def var(name: str) -> Node:
    return Node(None, name)


def relu(name: str, src: Node, k: int = 0) -> Node:
    return Node(op("relu"), name, {}, [(src, k)])


def add(name: str, a: Node, b: Node) -> Node:
    return Node(op("elemwise_add"), name, {}, [(a, 0), (b, 0)])


def split(name: str, src: Node, n: int = 2) -> Node:
    return Node(op("SliceChannel"), name, {"num_outputs": n, "axis": 1}, [(src, 0)])


def names(nodes) -> list:
    return [n.name for n in nodes]


def _foreach(name: str, data: Node, init: Node, body: Graph, **over) -> Node:
    """A ``_foreach`` over ``data`` with one state ``init``: body inputs (data, state), outputs
    (one per-step output, the new state)."""
    attrs = {"in_data_locs": [0], "in_state_locs": [1], "remain_locs": [], "num_args": 3,
             "num_out_data": 1, "num_outputs": 2}
    attrs.update(over)
    return Node(op("_foreach"), name, attrs, [(data, 0), (init, 0)], [body])


def _body() -> Graph:
    a, s = var("a"), var("s")
    return Graph([(add("step", a, s), 0), (Node(op("_mul_scalar"), "twice", {"scalar": 2.0}, [(a, 0)]), 0)])


# -- node order -----------------------------------------------------------------------------------
def test_order_is_depth_first_post_order_inputs_in_order_shared_nodes_once():
    x, y = var("x"), var("y")
    a = relu("a", x)
    b = add("b", y, a)          # y before a: the inputs' order, not creation order
    c = add("c", b, a)          # a reached twice, listed once
    g = Graph([(c, 0), (x, 0)])
    assert names(g.nodes) == ["y", "x", "a", "b", "c"]
    assert names(g.variables()) == ["y", "x"]
    assert names(topo_order([a, c])) == ["x", "a", "y", "b", "c"]   # heads in order


def test_order_of_a_deep_chain_does_not_recurse():
    n = var("x")
    for i in range(20000):
        n = relu(f"r{i}", n)
    order = Graph([(n, 0)]).nodes
    assert len(order) == 20001 and order[0].name == "x" and order[-1] is n


def test_cycle_is_an_error_naming_a_node_on_it():
    x = var("x")
    a = relu("a", x)
    b = relu("b", a)
    a.inputs = ((b, 0),)  # nodes are immutable by convention only: build the cycle a -> b -> a
    with pytest.raises(GraphError, match=r"^cycle through node 'b'$"):
        topo_order([b])
    with pytest.raises(GraphError, match=r"^cycle through node 'a'$"):
        Graph([(a, 0)]).nodes


def test_self_loop_is_a_cycle():
    a = relu("a", var("x"))
    a.inputs = ((a, 0),)
    with pytest.raises(GraphError, match=r"^cycle through node 'a'$"):
        topo_order([a])


def test_duplicate_names_are_distinct_nodes():
    x = var("x")
    first = relu("same", x)
    second = relu("same", first)
    g = Graph([(second, 0)])
    assert g.nodes == [x, first, second]
    g.lint()


def test_users_and_aux_variables():
    x = var("x")
    s = split("s", x)
    r0, r1 = relu("r0", s, 0), relu("r1", s, 1)
    g = Graph([(add("sum", r0, r1), 0)])
    users = g.users()
    assert [(n.name, k) for n, k in users[id(s)]] == [("r0", 0), ("r1", 0)]
    assert users[id(g.outputs[0][0])] == []
    gamma, beta, mean, var_ = var("gamma"), var("beta"), var("mean"), var("var")
    bn = Node(op("BatchNorm"), "bn", {}, [(x, 0), (gamma, 0), (beta, 0), (mean, 0), (var_, 0)])
    g = Graph([(bn, 0)])
    assert names(g.aux_variables()) == ["mean", "var"]
    assert names(g.arguments()) == ["x", "gamma", "beta"]
    assert bn.aux_slots() == (3, 4)


# -- transform and replace_inputs -----------------------------------------------------------------
def test_transform_keeping_every_node_returns_the_same_nodes():
    x = var("x")
    c = add("c", relu("a", x), relu("b", x))
    seen = []
    out = transform([(c, 0)], lambda n, ins: seen.append(n.name))
    assert out == [(c, 0)] and out[0][0] is c
    assert seen == ["a", "b", "c"]  # operator nodes only, bottom-up


def test_transform_replaces_a_node_and_copies_only_its_consumers():
    x = var("x")
    a = relu("a", x)
    side = relu("side", x)
    b = add("b", a, side)
    top = relu("top", b)
    new_a = Node(op("sigmoid"), "a2", {}, [(x, 0)])
    (out, k), = transform([(top, 0)], lambda n, ins: [(new_a, 0)] if n is a else None)
    assert k == 0 and out is not top and out.name == "top" and out.attrs == top.attrs
    new_b = out.inputs[0][0]
    assert new_b is not b and new_b.name == "b" and new_b.op is b.op
    assert new_b.inputs[0] == (new_a, 0)
    assert new_b.inputs[1][0] is side            # untouched input shared, not copied
    assert top.inputs[0][0] is b and b.inputs[0][0] is a   # the old graph is unchanged
    Graph([(out, 0)]).lint()


def test_transform_replaces_every_output_of_a_multi_output_node():
    x = var("x")
    s = split("s", x)
    r = relu("r", s, 1)
    a, b = relu("a", x), relu("b", x)
    out = transform([(r, 0), (s, 0)], lambda n, ins: [(a, 0), (b, 0)] if n is s else None)
    assert out[1] == (a, 0)
    assert out[0][0].inputs == ((b, 0),)   # output 1 of the split now reads b


def test_transform_hands_visit_the_new_inputs():
    x, y = var("x"), var("y")
    a = relu("a", x)
    b = relu("b", a)
    got = {}

    def visit(n, ins):
        got[n.name] = ins
        return [(y, 0)] if n is a else None
    transform([(b, 0)], visit)
    assert got["a"] == ((x, 0),) and got["b"] == ((y, 0),)


def test_replace_inputs_substitutes_variables():
    x, w, z = var("x"), var("w"), var("z")
    left = relu("left", x)
    right = relu("right", w)
    c = add("c", left, right)
    pre = relu("pre", z)
    (out, _), = replace_inputs([(c, 0)], {id(x): (pre, 0)})
    assert out is not c and out.name == "c"
    new_left = out.inputs[0][0]
    assert new_left is not left and new_left.inputs == ((pre, 0),)
    assert out.inputs[1][0] is right  # nothing under it changed: shared
    assert names(Graph([(out, 0)]).variables()) == ["z", "w"]
    # an empty mapping changes nothing
    assert replace_inputs([(c, 0)], {})[0][0] is c


def test_replace_inputs_with_an_output_of_a_multi_output_node():
    x, y = var("x"), var("y")
    s = split("s", y)
    r = relu("r", x)
    (out, _), = replace_inputs([(r, 0)], {id(x): (s, 1)})
    assert out.inputs == ((s, 1),)


# -- the stable text form -------------------------------------------------------------------------
def test_text_form():
    x, w = var("x"), var("w")
    fc = Node(op("FullyConnected"), "fc", {"num_hidden": 3, "no_bias": True}, [(x, 0), (w, 0)])
    s = split("split", fc)
    g = Graph([(relu("act", s, 1), 0), (s, 0)])
    assert g.text() == (
        "%0 = var x\n"
        "%1 = var w\n"
        "%2 = FullyConnected(%0, %1; no_bias=True, num_hidden=3)  # fc\n"
        "%3 = SliceChannel(%2; axis=1, num_outputs=2)  # split\n"
        "%4 = relu(%3.1)  # act\n"
        "return %4, %3.0")
    assert str(g) == g.text()


def test_text_form_indents_subgraphs_under_their_node():
    data, init = var("data"), var("init")
    loop = _foreach("loop", data, init, _body())
    g = Graph([(loop, 0), (loop, 1)])
    assert g.text() == (
        "%0 = var data\n"
        "%1 = var init\n"
        "%2 = _foreach(%0, %1; in_data_locs=[0], in_state_locs=[1], num_args=3, num_out_data=1, "
        "num_outputs=2, remain_locs=[])  # loop\n"
        "  subgraph 0:\n"
        "    %0 = var a\n"
        "    %1 = var s\n"
        "    %2 = elemwise_add(%0, %1)  # step\n"
        "    %3 = _mul_scalar(%0; scalar=2.0)  # twice\n"
        "    return %2, %3\n"
        "return %2.0, %2.1")
    g.lint()


def test_text_form_is_the_same_for_equal_graphs_built_twice():
    def build():
        x = var("x")
        return Graph([(add("c", relu("a", x), Node(op("_plus_scalar"), "p", {"scalar": 1.5}, [(x, 0)])), 0)])
    assert build().text() == build().text()


# -- lint: each kind of broken graph --------------------------------------------------------------
def _lint_error(g: Graph) -> str:
    with pytest.raises(GraphError) as info:
        g.lint()
    return str(info.value)


def test_lint_accepts_well_formed_graphs():
    x, w, b = var("x"), var("w"), var("b")
    fc = Node(op("FullyConnected"), "fc", {"num_hidden": 3}, [(x, 0), (w, 0), (b, 0)])
    fc_nb = Node(op("FullyConnected"), "fc2", {"num_hidden": 3, "no_bias": True}, [(fc, 0), (w, 0)])
    Graph([(fc_nb, 0)]).lint()


def test_lint_variable_with_inputs():
    x = var("x")
    bad = Node(None, "v", inputs=[(x, 0)])
    assert _lint_error(Graph([(relu("r", bad), 0)])) == "variable 'v' has inputs"


def test_lint_two_variables_with_one_name():
    assert _lint_error(Graph([(add("c", var("x"), var("x")), 0)])) == "two different variables are named 'x'"


def test_lint_variable_with_subgraphs():
    v = Node(None, "v", subgraphs=[_body()])
    assert _lint_error(Graph([(relu("r", v), 0)])) == "variable 'v' has subgraphs"


def test_lint_wrong_number_of_inputs():
    x = var("x")
    assert _lint_error(Graph([(Node(op("relu"), "r", {}, [(x, 0), (x, 0)]), 0)])) == \
        "node 'r' (relu) has 2 inputs, expected 1 (data)"
    assert _lint_error(Graph([(Node(op("elemwise_add"), "a", {}, [(x, 0)]), 0)])) == \
        "node 'a' (elemwise_add) has 1 inputs, expected 2 (lhs, rhs)"
    # an operator whose active inputs depend on attributes: no_bias=False needs the bias
    fc = Node(op("FullyConnected"), "fc", {"num_hidden": 3}, [(x, 0), (var("w"), 0)])
    assert _lint_error(Graph([(fc, 0)])) == "node 'fc' (FullyConnected) has 2 inputs, expected 3 (data, weight, bias)"


def test_lint_missing_output_of_an_input():
    x = var("x")
    s = split("s", x)
    assert _lint_error(Graph([(relu("r", s, 2), 0)])) == "node 'r' uses output 2 of 's', which has 2 outputs"
    assert _lint_error(Graph([(relu("r", x, 1), 0)])) == "node 'r' uses output 1 of 'x', which has 1 outputs"


def test_lint_missing_graph_output():
    s = split("s", var("x"))
    assert _lint_error(Graph([(s, 2)])) == "graph output 2 of 's' does not exist"
    assert _lint_error(Graph([(relu("r", var("x")), -1)])) == "graph output -1 of 'r' does not exist"


def test_lint_node_list_out_of_order():
    """A node list that is not a topological order (as a pass editing ``Graph._nodes`` could
    leave it) is caught: the consumer names its input."""
    x = var("x")
    a = relu("a", x)
    b = relu("b", a)
    g = Graph([(b, 0)])
    g._nodes = [x, b, a]
    assert _lint_error(g) == "node 'b' uses 'a', which does not come before it"
    g._nodes = [x, b]
    assert _lint_error(g) == "node 'b' uses 'a', which does not come before it"


def test_lint_subgraph_count_and_type():
    x = var("x")
    r = Node(op("relu"), "r", {}, [(x, 0)], [_body()])
    assert _lint_error(Graph([(r, 0)])) == "node 'r' (relu) has 1 subgraphs, expected 0"
    loop = Node(op("_foreach"), "loop", {"in_data_locs": [0], "in_state_locs": [], "remain_locs": [],
                                         "num_out_data": 1, "num_outputs": 1}, [(x, 0)])
    assert _lint_error(Graph([(loop, 0)])) == "node 'loop' (_foreach) has 0 subgraphs, expected 1"
    loop = Node(op("_foreach"), "loop", loop.attrs, [(x, 0)], ["not a graph"])
    assert _lint_error(Graph([(loop, 0)])) == "node 'loop' (_foreach): subgraph 0 is not a Graph"


def test_lint_subgraph_that_does_not_fit_the_node():
    data, init = var("data"), var("init")
    loop = _foreach("loop", data, init, _body(), num_outputs=3)
    assert _lint_error(Graph([(loop, 0)])) == (
        "node 'loop' (_foreach): num_outputs=3, num_out_data=1 and 1 states do not fit a body with 2 outputs")


def test_lint_names_the_path_to_a_broken_node_inside_a_subgraph():
    a, s = var("a"), var("s")
    broken = Graph([(Node(op("relu"), "bad", {}, [(a, 0), (s, 0)]), 0),
                    (Node(op("_mul_scalar"), "twice", {"scalar": 2.0}, [(a, 0)]), 0)])
    inner = _foreach("inner", var("a"), var("s"), broken)
    outer_body = Graph([(inner, 0), (inner, 1)])
    outer = _foreach("outer", var("data"), var("init"), outer_body)
    assert _lint_error(Graph([(outer, 0)])) == (
        "_foreach node 'outer' subgraph 0: _foreach node 'inner' subgraph 0: "
        "node 'bad' (relu) has 2 inputs, expected 1 (data)")


def test_lint_refuses_subgraphs_nested_too_deep():
    body = _body()
    for i in range(MAX_SUBGRAPH_DEPTH + 1):
        loop = _foreach(f"l{i}", var("a"), var("s"), body)
        body = Graph([(loop, 0), (loop, 1)])
    msg = _lint_error(body)
    assert msg.endswith(f"subgraphs are nested more than {MAX_SUBGRAPH_DEPTH} deep")
    assert msg.startswith(f"_foreach node 'l{MAX_SUBGRAPH_DEPTH}' subgraph 0: ")
