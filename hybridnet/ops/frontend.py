"""Generates the Python functions of ``nd.*``, ``sym.*`` and ``F.*`` from OpDefs.

Each generated function has a real signature (inputs, then attributes, then ``out``/``name``/
``attr``) and the operator's docstring, so ``help()`` and IDEs work and a misspelt attribute
is a ``TypeError`` naming it. Attributes default to ``NotGiven``: only what the caller passed
is recorded in a graph (MXNet writes exactly the passed attributes); kernels apply defaults.
The generated body hands ``(op, inputs, attrs, out, name, hint, attr)`` to a front-end's
``dispatch``, which decides between eager execution and graph building.
"""
from __future__ import annotations

import keyword
from typing import Any, Callable, Optional

from ..base import NotGiven
from .registry import OpDef, get

__all__ = ["make_function", "signature_text", "dispatch_of", "set_dispatch", "function_by_name",
           "signature_line_by_name"]


def signature_text(op: OpDef) -> str:
    """Parameter list of the generated function (also used for stubs)."""
    params = []
    if op.dynamic_inputs:
        params.append("*inputs")
    elif op.variadic:
        params.append(f"*{op.inputs[0]}")
    else:
        params.extend(f"{i}=None" for i in op.inputs)
    params.extend(f"{a}=_N" for a in op.attrs if a != "num_args")
    if op.variadic and "num_args" in op.attrs:
        params.append("num_args=_N")  # accepted as in MXNet, checked against the inputs
    params.extend(["out=None", "name=None", "attr=None"])
    params.append("**kwargs" if op.open_attrs else "**_extra")
    return ", ".join(params)


_IGNORED_WARNED: set = set()
# Keywords every MXNet operator takes as node attributes (MXNet's hidden keys): lr_mult=0 on
# FullyConnected reaches the weight it creates, ctx_group places the node.
HIDDEN_KEYWORDS = frozenset(("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage",
                             "profiler_scope"))


def extra_keywords(op: OpDef, fname: str, extra: dict, attr: Any) -> Any:
    """Keyword arguments an operator does not declare, handled as MXNet 1.9.1 does.

    ``__name__``-style keys and MXNet's hidden keys (``lr_mult``, ``wd_mult``, ``ctx_group``...)
    are node attributes (``sym.FullyConnected(x, __layout__='NC', lr_mult=0)``): they join
    ``attr`` (ignored eagerly). Operators without attributes (``zeros_like``, ``broadcast_maximum``...)
    have no attribute parser in MXNet, which ignores whatever else is passed: so do we, with a
    warning once per name. Any other unknown keyword is a TypeError naming the valid ones.
    """
    hidden = {k: str(v) for k, v in extra.items()
              if (k.startswith("__") and k.endswith("__")) or k in HIDDEN_KEYWORDS}
    rest = [k for k in extra if k not in hidden]
    declared = [a for a in op.attrs if a != "num_args"]
    if rest and declared:
        raise TypeError(f"{fname}() got unexpected keyword argument(s) {rest}; "
                        f"its attributes are {declared}")
    for k in rest:
        if (op.name, k) not in _IGNORED_WARNED:
            _IGNORED_WARNED.add((op.name, k))
            import warnings
            warnings.warn(f"{fname}: operator {op.name} takes no attributes; {k}={extra[k]!r} is "
                          "ignored (as MXNet 1.9.1 ignores it)", UserWarning, stacklevel=3)
    if hidden:
        attr = {**(attr or {}), **hidden}
    return attr


def _doc(op: OpDef, fname: str) -> str:
    lines = [op.doc.strip() or f"MXNet operator {op.name}.", ""]
    if fname != op.name:
        lines.append(f"Alias of operator ``{op.name}``.")
    if op.inputs:
        lines.append("Inputs: " + ", ".join(
            (("*" if op.variadic else "") + i + (" (optional)" if i in op.optional_inputs else ""))
            for i in op.inputs))
    if op.attrs:
        lines.append("Attributes:")
        for a in op.attrs.values():
            if a.name == "num_args":
                continue
            default = "required" if a.required else f"default {a.default!r}"
            choices = f", one of {list(a.choices)}" if a.choices else ""
            lines.append(f"    {a.name} ({a.kind}{choices}): {default}")
    return "\n".join(lines)


def make_function(op: OpDef, fname: str, dispatch: Callable, hint: "str | None" = None) -> Callable:
    """A function named ``fname`` calling ``dispatch`` for operator ``op``."""
    for ident in (fname, *op.inputs, *op.attrs):
        if keyword.iskeyword(ident) or not (ident.isascii() and ident.isidentifier()):
            raise ValueError(f"operator {op.name!r}: {ident!r} is not an ASCII identifier; "
                             "generated functions take only such names")
    body = ["    _attrs = {}"]
    for a in op.attrs:
        if a == "num_args":
            continue
        body.append(f"    if {a} is not _N: _attrs[{a!r}] = {a}")
    if not op.open_attrs:
        body.append(f"    if _extra: attr = _extra_keywords(_op, {fname!r}, _extra, attr)")
    if op.prepare_call is not None:
        # open operators: the operator itself sorts keyword arguments into inputs and attributes
        body.append("    inputs, _attrs = _op.prepare_call(inputs, {**kwargs, **_attrs})")
        inputs = "inputs"
    elif op.variadic:
        inputs = op.inputs[0]
        if "num_args" in op.attrs:
            body.append(f"    if num_args is not _N and num_args != len({inputs}):")
            body.append(f"        raise TypeError(f'{fname}: num_args={{num_args}} but {{len({inputs})}} inputs were given')")
    else:
        inputs = "(" + "".join(f"{i}, " for i in op.inputs) + ")"
    body.append(f"    return _dispatch(_op, {inputs}, _attrs, out, name, _hint, attr)")
    src = f"def {fname}({signature_text(op)}):\n" + "\n".join(body) + "\n"
    namespace: dict[str, Any] = {"_N": NotGiven, "_op": op, "_dispatch": dispatch,
                                 "_extra_keywords": extra_keywords,
                                 "_hint": hint or fname.lower()}
    exec(compile(src, f"<hybridnet op {op.name}>", "exec"), namespace)  # noqa: S102 - generated from the registry
    fn = namespace[fname]
    fn.__doc__ = _doc(op, fname)
    fn.__source__ = src
    fn.opdef = op
    return fn


def dispatch_of(fn: Callable) -> Callable:
    """The ``dispatch`` a generated function hands its calls to."""
    return fn.__globals__["_dispatch"]


def set_dispatch(fn: Callable, dispatch: Callable) -> None:
    """Route one generated function (each has its own namespace) through ``dispatch``: how AMP
    casts the inputs of the operators on its lists at no cost to any other operator, and to none
    before ``amp.init()`` (MXNet wraps the same functions)."""
    fn.__globals__["_dispatch"] = dispatch


# Operators MXNet exposes as methods on both NDArray and Symbol (``x.relu()``, ``x.sum(axis=1)``).
OPERATOR_METHODS = (
    "abs arccos arccosh arcsin arcsinh arctan arctanh argmax argmax_channel argmin argsort "
    "broadcast_axes broadcast_like broadcast_to cbrt ceil clip cos cosh degrees depth_to_space "
    "diag exp expand_dims expm1 fix flatten flip floor log log10 log1p log2 log_softmax max mean "
    "min nanprod nansum norm one_hot ones_like pad pick prod radians rcbrt reciprocal relu repeat "
    "reshape_like rint round rsqrt shape_array sigmoid sign sin sinh size_array slice "
    "slice_axis slice_like softmax softmin sort space_to_depth split split_v2 sqrt square squeeze "
    "sum swapaxes take tan tanh tile topk transpose trunc zeros_like"
).split()


def method_from(fn: Callable, mname: str) -> Callable:
    """``x.mname(*a, **k)`` calling the generated function ``fn(x, *a, **k)``."""
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = mname
    method.__doc__ = fn.__doc__
    return method


# Operator-name prefixes that place a function in a sub-namespace (MXNet's convention).
SUBSPACES = (("_random_", "random"), ("_sample_", "random"), ("_linalg_", "linalg"),
             ("_contrib_", "contrib"), ("_image_", "image"), ("_sparse_", "sparse"))


# Operators MXNet also exposes in ``nd.sparse`` / ``sym.sparse`` (they accept sparse inputs).
SPARSE_NAMESPACE = (
    "ElementWiseSum Embedding FullyConnected LinearRegressionOutput LogisticRegressionOutput "
    "MAERegressionOutput abs adam_update add_n arccos arccosh arcsin arcsinh arctan arctanh "
    "broadcast_add broadcast_div broadcast_minus broadcast_mul broadcast_plus broadcast_sub "
    "cast_storage cbrt ceil clip concat cos cosh degrees dot elemwise_add elemwise_div elemwise_mul "
    "elemwise_sub exp expm1 fix floor ftrl_update gamma gammaln log log10 log1p log2 make_loss mean "
    "negative norm radians relu rint round rsqrt sgd_mom_update sgd_update sigmoid sign sin sinh slice "
    "sqrt square stop_gradient sum tan tanh trunc where zeros_like").split()


def placement(opname: str) -> tuple[str, str]:
    """(sub-namespace, function name) for an operator or alias name; '' is the top level."""
    for prefix, space in SUBSPACES:
        if opname.startswith(prefix):
            return space, opname[len(prefix):]
    if opname.startswith("_"):
        return "_internal", opname
    return "", opname


def populate(spaces: dict, dispatch: Callable, sparse_dispatch: "Callable | None" = None) -> dict:
    """Fill namespace modules/dicts with generated functions for every registered name.

    ``spaces`` maps '' / 'random' / 'linalg' / 'contrib' / '_internal' ... to module objects.
    Every name is also placed in ``_internal`` (MXNet's ``nd._internal`` holds them all).
    Existing hand-written attributes are not overwritten. Returns name -> function.
    ``sparse_dispatch`` (the imperative front-end's) is used instead of ``dispatch`` for operators
    whose sparse rule makes sparse arrays from dense inputs (``cast_storage``).
    """
    from .registry import names
    made: dict[str, Callable] = {}
    for opname, op in names().items():
        space, fname = placement(opname)
        if not fname.isidentifier() or keyword.iskeyword(fname):
            continue
        fn = make_function(op, fname, sparse_dispatch if sparse_dispatch is not None and
                           op.sparse_from_dense else dispatch)
        made[opname] = fn
        targets = [(space, fname), ("_internal", opname)]
        if opname.startswith("_linalg_"):
            targets.append(("", opname[1:]))  # MXNet also exposes nd.linalg_gemm2 & co.
        for target, tname in targets:
            mod = spaces.get(target)
            if mod is not None and not hasattr(mod, tname):
                setattr(mod, tname, fn)
    sparse_space = spaces.get("sparse")
    if sparse_space is not None:
        for n in SPARSE_NAMESPACE:
            if n in made and not hasattr(sparse_space, n):
                setattr(sparse_space, n, made[n])
    return made


def fill_op_module(op: Any, funcs: dict) -> None:
    """MXNet's ``nd.op``/``sym.op``: every operator under its registered name, plus the
    ``linalg_*`` spellings of the ``_linalg_*`` operators."""
    for name, fn in funcs.items():
        for alias in (name, name[1:]) if name.startswith("_linalg_") else (name,):
            if not hasattr(op, alias):
                setattr(op, alias, fn)


# Functions that take arrays or Python scalars on either side (``nd.maximum(x, 0)``), as
# MXNet's Python-level ``add``/``subtract``/... do: name -> (array op, scalar op, reflected op).
MIXED = {
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
    "subtract": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "multiply": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
    "divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "true_divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "modulo": ("broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    "power": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
    "maximum": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
    "minimum": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar"),
    "hypot": ("broadcast_hypot", "_hypot_scalar", "_hypot_scalar"),
    "equal": ("broadcast_equal", "_equal_scalar", "_equal_scalar"),
    "not_equal": ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar"),
    "greater": ("broadcast_greater", "_greater_scalar", "_lesser_scalar"),
    "greater_equal": ("broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar"),
    "lesser": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
    "lesser_equal": ("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar"),
    "logical_and": ("broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar"),
    "logical_or": ("broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar"),
    "logical_xor": ("broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar"),
}


def make_mixed(fname: str, funcs: dict, is_array: Callable[[Any], bool]) -> Callable:
    """``fname(lhs, rhs)`` choosing the array, scalar or reflected-scalar operator."""
    array_op, scalar_op, rscalar_op = (funcs[n] for n in MIXED[fname])
    import operator as _pyop
    py_ops: dict[str, Callable[[Any, Any], Any]] = {
        "add": _pyop.add, "subtract": _pyop.sub, "multiply": _pyop.mul, "divide": _pyop.truediv,
        "true_divide": _pyop.truediv, "modulo": _pyop.mod, "power": _pyop.pow, "maximum": max,
        "minimum": min, "equal": _pyop.eq, "not_equal": _pyop.ne, "greater": _pyop.gt,
        "greater_equal": _pyop.ge, "lesser": _pyop.lt, "lesser_equal": _pyop.le}
    py = py_ops.get(fname)

    def fn(lhs: Any, rhs: Any) -> Any:
        la, ra = is_array(lhs), is_array(rhs)
        if la and ra:
            return array_op(lhs, rhs)
        if la:
            return scalar_op(lhs, scalar=rhs)
        if ra:
            return rscalar_op(rhs, scalar=lhs)
        if py is None:
            raise TypeError(f"{fname}: at least one argument must be an array")
        return py(lhs, rhs)
    fn.__name__ = fname
    fn.__doc__ = f"{fname}(lhs, rhs): arrays broadcast; either side may be a Python scalar."
    return fn


def make_split_v2(split_op: Callable) -> Callable:
    """MXNet's Python-level ``split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False)``."""
    def split_v2(ary: Any, indices_or_sections: Any, axis: int = 0, squeeze_axis: bool = False) -> Any:
        if isinstance(indices_or_sections, int):
            return split_op(ary, sections=indices_or_sections, indices=(), axis=axis, squeeze_axis=squeeze_axis)
        if isinstance(indices_or_sections, (tuple, list)):
            return split_op(ary, indices=(0,) + tuple(indices_or_sections), sections=0, axis=axis,
                            squeeze_axis=squeeze_axis)
        raise ValueError("indices_or_sections must be an int or a tuple of ints")
    split_v2.__doc__ = ("Split an array along ``axis`` into ``indices_or_sections`` equal parts (int) "
                        "or at the given indices (tuple), as MXNet's split_v2.")
    return split_v2


def make_histogram(hist_op: Callable, is_array: Callable[[Any], bool]) -> Callable:
    """MXNet's Python-level ``histogram(a, bins=10, range=None)``: ``bins`` is an int (equal
    bins over ``range``) or an array of bin edges."""
    def histogram(a: Any, bins: Any = 10, range: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        if is_array(bins):
            return hist_op(a, bins, **kwargs)
        if isinstance(bins, int) and not isinstance(bins, bool):
            if range is None:
                raise ValueError("histogram: range=(min, max) is required with an int number of bins")
            return hist_op(a, bin_cnt=bins, range=tuple(range), **kwargs)
        raise ValueError(f"histogram: bins must be an int or an array of edges, got {bins!r}")
    histogram.__doc__ = ("(counts, bin edges) of all elements of ``a``: ``bins`` equal-width bins over "
                         "``range``, or the edges given as an array, as MXNet's histogram.")
    return histogram


def make_rand_zipfian(uniform: Callable, current_context: "Callable[[], Any] | None" = None) -> Callable:
    """MXNet's Python-level ``contrib.rand_zipfian`` over the front-end's ``random.uniform``:
    ``nd`` passes ``current_context`` (the function then takes ``ctx``), ``sym`` does not.

    Classes are drawn as ``int64(exp(U(0, log(range_max + 1))) - 1) % range_max`` (an
    approximately log-uniform, Zipfian distribution); the expected counts of a class c among
    ``num_sampled`` draws are ``log((c + 2) / (c + 1)) / log(range_max + 1) * num_sampled``.
    Returns (sampled classes int64 (num_sampled,), expected counts of ``true_classes``,
    expected counts of the sampled classes), the counts in float64.
    """
    import math

    def draw(true_classes: Any, num_sampled: int, range_max: int, uniform_kwargs: dict) -> tuple:
        if int(range_max) < 1 or int(num_sampled) < 0:
            raise ValueError(f"rand_zipfian: range_max must be >= 1 and num_sampled >= 0, got "
                             f"range_max={range_max}, num_sampled={num_sampled}")
        log_range = math.log(range_max + 1)
        rand = uniform(0, log_range, shape=(num_sampled,), dtype="float64", **uniform_kwargs)
        sampled = (rand.exp() - 1).astype("int64") % range_max
        true = true_classes.astype("float64")
        count_true = ((true + 2.0) / (true + 1.0)).log() / log_range * num_sampled
        sampled64 = sampled.astype("float64")
        count_sampled = ((sampled64 + 2.0) / (sampled64 + 1.0)).log() / log_range * num_sampled
        return sampled, count_true, count_sampled

    if current_context is None:
        def rand_zipfian(true_classes: Any, num_sampled: int, range_max: int) -> tuple:
            return draw(true_classes, num_sampled, range_max, {})
    else:
        def rand_zipfian(true_classes: Any, num_sampled: int, range_max: int,  # type: ignore[misc]
                         ctx: Any = None) -> tuple:
            ctx = ctx if ctx is not None else current_context()
            return draw(true_classes.as_in_context(ctx), num_sampled, range_max, {"ctx": ctx})
    rand_zipfian.__doc__ = ("Draw ``num_sampled`` classes in [0, range_max) from MXNet's approximately "
                            "log-uniform (Zipfian) distribution; returns (sampled classes, expected counts of "
                            "true_classes, expected counts of the sampled classes).")
    return rand_zipfian


# ---- MXNet's register modules (mx.nd.register / mx.sym.register) ------------------------------
def _named_op(handle: Any, name: Optional[str], who: str) -> OpDef:
    """The operator MXNet's register functions name by a C handle: here a name string."""
    op_name = name if name is not None else handle
    if not isinstance(op_name, str):
        raise TypeError(f"{who}: give the operator by name (a str, such as 'FullyConnected'); "
                        f"hybridnet has no C operator handles, got {handle!r}")
    return get(op_name)


def function_by_name(handle: Any, name: Optional[str], func_name: Optional[str], dispatch: Callable,
                     who: str) -> Callable:
    """The front-end function of operator ``name`` (or ``handle`` as a name) over ``dispatch``,
    named ``func_name`` (default: the operator name): MXNet's ``_make_*_function``."""
    op = _named_op(handle, name, who)
    return make_function(op, func_name or op.name, dispatch)


def signature_line_by_name(handle: Any, name: Optional[str], func_name: Optional[str], who: str) -> str:
    """The ``def`` line of operator ``name``'s function: MXNet's ``_generate_*_function_code``
    (hybridnet does not build functions from source text, so the signature is what there is)."""
    op = _named_op(handle, name, who)
    return f"def {func_name or op.name}({signature_text(op)}):"
