"""Node names from a model file never become code (one test per hostile-name class).

Each case builds a graph whose node names are hostile, writes it as ``-symbol.json``, loads it
back the way a user would (``SymbolBlock.imports`` + forward, ``sym.eval``, ``simple_bind`` +
forward) and checks the numbers: a payload that ran, or two names folded into one variable,
would change them.
"""
import os

import numpy as np
import pytest

import hybridnet as mx
from hybridnet.compiler.codegen import compile_graph

PAYLOAD = "open({path!r}, 'w').write('pwned')"

HOSTILE = {
    "newline": "x\n{payload}\n#",
    "carriage_return": "x\r{payload}\r#",
    "crlf": "x\r\n{payload}\r\n#",
    "form_feed_and_line_separator": "x\x0c\u2028{payload}\u2029#",
    "nul": "a\x00b",
    "quotes": "x'\"\"\"'; {payload}; '",
    "keyword": "lambda",
    "leading_digit": "0abc",
    "dunder": "__builtins__",
    "superscript_digit": "x\u00b2",
    "fullwidth_digits": "\uff11\uff12",
    "backslash_continuation": "x\\\n{payload}",
}


def _name(kind, path):
    return HOSTILE[kind].format(payload=PAYLOAD.format(path=str(path)))


def _graph(name, path):
    """out = (a - b) * 2 with the subtraction node carrying the hostile name; a and b are
    names that NFKC folds together ("\ufb01" vs "fi")."""
    a = mx.sym.var("\ufb01")
    b = mx.sym.var("fi")
    d = mx.sym.elemwise_sub(a, b, name=name)
    return mx.sym.elemwise_mul(d, mx.sym.var(name + "_w"), name=name + "_out")


def _inputs():
    rng = np.random.RandomState(0)
    a, b, w = (rng.rand(2, 3).astype(np.float32) for _ in range(3))
    return a, b, w, (a - b) * w


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_symbolblock_imports_forward(kind, tmp_path):
    marker = tmp_path / "marker"
    name = _name(kind, marker)
    sym = _graph(name, marker)
    sym.save(str(tmp_path / "m-symbol.json"))
    a, b, w, want = _inputs()
    mx.nd.save(str(tmp_path / "m-0000.params"), {"arg:" + name + "_w": mx.nd.array(w)})
    net = mx.gluon.SymbolBlock.imports(str(tmp_path / "m-symbol.json"), ["\ufb01", "fi"],
                                       str(tmp_path / "m-0000.params"))
    out = net(mx.nd.array(a), mx.nd.array(b))
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    net.hybridize()
    out = net(mx.nd.array(a), mx.nd.array(b))
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    assert not marker.exists()


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_eval_and_simple_bind(kind, tmp_path):
    marker = tmp_path / "marker"
    name = _name(kind, marker)
    sym = mx.sym.load_json(_graph(name, marker).tojson())
    a, b, w, want = _inputs()
    feeds = {"\ufb01": mx.nd.array(a), "fi": mx.nd.array(b), name + "_w": mx.nd.array(w)}
    np.testing.assert_allclose(sym.eval(**feeds)[0].asnumpy(), want, rtol=1e-6)
    exe = sym.simple_bind(mx.cpu(), **{k: v.shape for k, v in feeds.items()})
    out = exe.forward(**feeds)[0]
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    assert not marker.exists()


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_source_is_ascii_and_names_only_in_comments(kind, tmp_path):
    name = _name(kind, tmp_path / "marker")
    cg = compile_graph(_graph(name, tmp_path).graph)
    src = cg.source
    assert src.isascii()
    for line in src.splitlines():
        code = line.split("#", 1)[0]
        assert "open(" not in code and "pwned" not in code
    # one source line per statement: a name can never add a line
    n_ops = sum(1 for n in cg.graph.nodes if n.op is not None)
    assert len(src.splitlines()) <= 1 + 2 * n_ops + 1


def test_identifiers_unique_after_sanitizing():
    names = ["a b", "a_b", "a-b", "a\nb", "a\u00e9b", "a" * 200, "a" * 201]
    xs = [mx.sym.var(n) for n in names]
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    feeds = {n: mx.nd.full((1,), float(2 ** i)) for i, n in enumerate(names)}
    assert out.eval(**feeds)[0].asscalar() == 2 ** len(names) - 1


def test_fn_name_must_be_identifier():
    g = mx.sym.var("x") + 1
    with pytest.raises(ValueError, match="ASCII identifier"):
        compile_graph(g.graph, fn_name="f():\n import os\ndef g")
