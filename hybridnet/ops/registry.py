"""THE operator registry: every operator is one ``OpDef``, defined once.

An operator is a torch kernel plus facts about it. The kernel's signature *is* the operator's
interface: positional parameters are its inputs (a default of ``None`` marks an optional
input), ``*args`` marks a variadic operator (MXNet's ``num_args``), keyword-only parameters are
its attributes with their types (annotations, see ``attrs``) and defaults. Everything else that
must be known about an operator (aliases, auxiliary states, output count, shape rules for
parameters, NumPy samples for the tests) is passed to ``register`` next to the kernel, so
nothing about an operator is spread over files that must change together.
"""
from __future__ import annotations

import functools
import inspect
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

from ..base import MXNetError, NotGiven
from .attrs import Attr, kind_of

__all__ = ["OpDef", "Sample", "ActivationChoice", "ChannelAffine", "register", "add_alias", "sparse_rule", "storage_rule", "get",
           "find", "all_ops", "names"]


@dataclass
class Sample:
    """One test case: NumPy inputs, attributes, and a NumPy reference for the outputs."""
    inputs: tuple
    attrs: dict = field(default_factory=dict)
    ref: Optional[Callable] = None
    grad: bool = True                      # finite-difference check of float inputs
    grad_inputs: Optional[tuple] = None    # which inputs to differentiate (default: all float)
    train: bool = False
    rtol: float = 1e-5
    atol: float = 1e-7
    symbolic: bool = True                  # also run through Symbol + compiled graph
    check_shape: bool = True               # meta-device shapes equal real ones


ShapeList = list  # list[Optional[tuple[int, ...]]]


class ActivationChoice(NamedTuple):
    """An activation as the fused operators take it (their ``act``, ``act_alpha``, ``act_beta``
    attributes; ``act`` is one of ``fused.FusedActivation``)."""
    act: str
    alpha: float = 0.0
    beta: float = 0.0


class ChannelAffine(NamedTuple):
    """How a producer absorbs a per-output-channel affine map ``y * scale + shift`` (see
    ``OpDef.absorbs_channel_affine``)."""
    axes: tuple   # the axis values (positive and negative) that name its output-channel axis
    weight_rank: int  # the rank of its weight, whose first axis is the output channel


class OpDef:
    """Everything hybridnet knows about one operator."""

    def __init__(self, name: str, kernel: Callable, *, aliases: Sequence[str] = (),
                 num_outputs: "int | Callable[[dict], int]" = 1,
                 output_names: "Sequence[str] | Callable[[dict], list] | None" = None,
                 total_outputs: "int | Callable[[dict], int] | None" = None,
                 aux: "Sequence[str] | Callable[[dict], Sequence[str]]" = (),
                 active_inputs: Optional[Callable[[dict], Sequence[str]]] = None,
                 param_shapes: Optional[Callable[[dict, ShapeList], ShapeList]] = None,
                 infer_shape: Optional[Callable[[dict, ShapeList], list]] = None,
                 infer_type: Optional[Callable[[dict, list], list]] = None,
                 infer_inputs: Optional[Callable[[dict, ShapeList, list], ShapeList]] = None,
                 random: bool = False, differentiable: bool = True,
                 samples: Optional[Callable[[], list]] = None,
                 hint: Optional[str] = None, doc: Optional[str] = None,
                 onnx: Optional[Callable] = None,
                 prepare_call: Optional[Callable[[tuple, dict], tuple]] = None,
                 input_init: Optional[dict] = None,
                 partial_outputs: Optional[Callable[[dict, ShapeList, list], list]] = None,
                 listed_inputs: bool = True, num_subgraphs: int = 0,
                 check_subgraphs: Optional[Callable[[dict, int, list], None]] = None,
                 infer_subgraphs: Optional[Callable[..., tuple]] = None,
                 returns_view: bool = False,
                 mutates_inputs: "Sequence[str] | Callable[[dict, int], Sequence[int]]" = (),
                 predict_identity: "bool | Callable[[dict], bool]" = False,
                 fused_activation: Optional[Callable[[dict], Optional[ActivationChoice]]] = None,
                 channel_affine: Optional[Callable[[dict], int]] = None,
                 absorbs_channel_affine: Optional[Callable[[dict], Optional[ChannelAffine]]] = None,
                 export_broadcast: Optional[str] = None, amp_cast: bool = False,
                 dtype_is_output: bool = True, value_dependent_path: bool = False,
                 no_gradient: bool = False, int8_role: Optional[str] = None,
                 sized_by_inference: Optional[Callable[[dict, tuple], dict]] = None):
        self.name = name
        # -- facts the compiler's passes read (never the operator's name) ----------------------
        # an output may be an input itself or a view of its memory (for some attributes, dtypes
        # or grad modes); control flow always may (a subgraph can return its inputs)
        self.returns_view = returns_view or num_subgraphs > 0
        # inputs the kernel writes in place besides ``aux`` (MXNet's FMutateInputs): slot names,
        # or ``(attrs, number of inputs) -> slot indices`` for variadic operators
        self.mutates_rule = mutates_inputs if callable(mutates_inputs) else None
        self.mutates_inputs: tuple = () if callable(mutates_inputs) else tuple(mutates_inputs)
        # in predict mode without gradients, output 0 is input 0's values (a rule: for these
        # attributes, as Dropout's mode and p decide)
        self.predict_identity = predict_identity
        # (attrs) -> the activation ``_fused_conv`` / ``_act`` computes this node as, or None
        self.fused_activation_rule = self._with_defaults(fused_activation)
        # (attrs) -> the channel axis of a predict-mode BatchNorm ``(data - moving_mean) /
        # sqrt(moving_var + eps) * gamma + beta`` (inputs data, gamma, beta, moving_mean,
        # moving_var; attributes eps, fix_gamma), which folds into an ``absorbs_channel_affine``
        self.channel_affine_rule = self._with_defaults(channel_affine)
        # (attrs) -> where a producer with inputs (data, weight, bias) and attribute no_bias
        # takes a per-output-channel affine into its weight and bias, or None when it cannot
        self.absorbs_channel_affine_rule = self._with_defaults(absorbs_channel_affine)
        # the broadcast_* operator MXNet 1.9.1 must read this node as when its input shapes
        # differ (this elemwise_* broadcasts, MXNet's does not)
        self.export_broadcast = export_broadcast
        # an AMP cast: its outputs are its inputs recast; export(remove_amp_cast=True) drops it
        self.amp_cast = amp_cast
        # the part this operator plays in MXNet's quantized (int8) graphs, which the predict-mode
        # int8 fusion (compiler/passes/int8.py) reads: "entry" (quantize_v2) / "requantize" (a calibrated
        # range out), "conv_layer" / "fc_layer" (int8 layer -> int32 accumulators), "relu_act", "add" (int8
        # residual join), "keeps_range" (its min/max outputs are its min/max inputs), or
        # "fused_conv" / "fused_fc" (what the fusion makes of a layer); None elsewhere
        self.int8_role = int8_role
        # an array-creating operator (no inputs) whose attributes may leave its output's size to
        # inference from its consumers (``sym.ones((-1, -1))``, ``sym.arange(infer_range=True)``):
        # ``(attrs, inferred shape) -> attrs`` that create exactly that shape; the shape rule
        # gives 0 for the dimensions left unknown
        self.sized_by_inference = sized_by_inference
        # a ``dtype`` attribute, where there is one, is the output's dtype (Embedding's is its
        # weight's): type inference without shapes reads it
        self.dtype_is_output = dtype_is_output
        # control flow whose path follows tensor values (cond, while_loop): a trace that records
        # one path (torch.export, torch.jit.trace) cannot stand for the operator
        self.value_dependent_path = value_dependent_path
        # False where MXNet registers no FListInputNames (its unary-operator macro, Activation):
        # monitors and op hooks then name the inputs ``input0``, ``input1``... not by slot
        self.listed_inputs = listed_inputs
        # control-flow operators run graphs of their own (a node's ``subgraphs``): the kernel's
        # ``subgraphs`` keyword receives them compiled, one callable per subgraph;
        # ``check_subgraphs(attrs, n_inputs, [(n_sub_inputs, n_sub_outputs)...])`` raises
        # ValueError when the attributes do not fit them; ``infer_subgraphs`` is the shape and
        # type rule (see compiler/infer.py), which infers the subgraphs themselves
        self.num_subgraphs = num_subgraphs
        self.check_subgraphs = check_subgraphs
        # input slot -> MXNet ``__init__`` text a variable feeding it gets when it has none
        # (MXNet's FSetInputVarAttrOnCompose: PReLU's gamma starts at 0.25, not gamma's 1)
        self.input_init: dict = dict(input_init or {})
        self.kernel = kernel
        self.aliases = tuple(aliases)
        self.hint = hint or name.lower()
        self.random = random
        self.differentiable = differentiable
        # MXNet registers no gradient for it (no FGradient, unlike the differentiable=False
        # operators' zero gradients): binding a graph that needs a gradient through it raises
        self.no_gradient = no_gradient
        # integer operands get a zero gradient (MXNet's gradient functor returns 0 for integer
        # types and the true derivative only for floating ones: mod_grad): recorded on integer
        # arrays, the operator passes no gradient (set where the operator is defined)
        self.integer_zero_gradient = False
        self._num_outputs = num_outputs
        self._output_names = output_names
        self._total_outputs = total_outputs
        self.active_inputs_rule = active_inputs
        self.samples = samples
        self.onnx_rule = onnx  # ONNX lowering (see formats/onnx.py); None: the table there
        # open operators (MXNet's Custom): the front-end hands (positional inputs, keyword
        # arguments) to this hook, which returns (inputs in slot order, attributes)
        self.prepare_call = prepare_call
        # the rule for sparse inputs (see ``sparse_rule``); None: sparse inputs are densified
        self.sparse: Optional[Callable] = None
        # whether the sparse rule also runs for dense inputs (it may make sparse arrays of them)
        self.sparse_from_dense = False
        # MXNet's FInferStorageType where the sparse rule cannot answer alone (see
        # ``storage_rule``): (input stypes, attrs) -> output stypes; and, for the backward pass,
        # (input stypes, attrs) -> each input's gradient stype under a dense head gradient
        self.storage: Optional[Callable] = None
        self.grad_storage: Optional[Callable] = None
        self.doc = doc if doc is not None else (inspect.getdoc(kernel) or "")

        sig = inspect.signature(kernel)
        hints = typing.get_type_hints(kernel)
        self.inputs: tuple[str, ...] = ()
        self.optional_inputs: frozenset = frozenset()
        self.variadic = False
        self.train_aware = False
        # a keyword-only ``out`` kernel parameter: the eager front-end hands the kernel the
        # caller's ``out=`` tensors (a tensor, a list for several outputs, or None), which it
        # may fill in place and return (the fused optimizer updates write the weights so);
        # graphs call the kernel without them
        self.writes_out = False
        # open attributes (a ``**params`` kernel parameter): any attribute name is accepted and
        # kept as the string MXNet stores (Custom's user kwargs)
        self.open_attrs = False
        # dynamic inputs (``*inputs`` plus an ``active_inputs`` rule): the input slots are named
        # by the rule from the attributes, as for Custom (its prop's list_arguments)
        self.dynamic_inputs = False
        self.attrs: dict[str, Attr] = {}
        inputs, optional = [], set()
        for p in sig.parameters.values():
            if p.kind == p.VAR_POSITIONAL and active_inputs is not None:
                self.dynamic_inputs = True
            elif p.kind == p.VAR_POSITIONAL:
                self.variadic = True
                inputs.append(p.name)
            elif p.kind == p.VAR_KEYWORD:
                self.open_attrs = True
            elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                inputs.append(p.name)
                if p.default is None:
                    optional.add(p.name)
            elif p.kind == p.KEYWORD_ONLY:
                if p.name == "is_train":
                    self.train_aware = True
                    continue
                if p.name == "out":
                    self.writes_out = True
                    continue
                if p.name == "subgraphs":
                    if not num_subgraphs:
                        raise ValueError(f"{name}: a kernel taking subgraphs needs num_subgraphs")
                    continue
                kind, choices = kind_of(hints.get(p.name, Any))
                default = NotGiven if p.default is p.empty else p.default
                self.attrs[p.name] = Attr(p.name, kind, default, choices)
        self.inputs = tuple(inputs)
        self.optional_inputs = frozenset(optional)
        self.aux_rule = aux if callable(aux) else None
        self.aux: tuple = () if callable(aux) else tuple(aux)
        for a in self.aux:
            if a not in self.inputs:
                raise ValueError(f"{name}: auxiliary input {a!r} is not an input of the kernel")
        if self.variadic:
            self.attrs.setdefault("num_args", Attr("num_args", "int", NotGiven))
        # every attribute's default, filled once here so that no rule repeats a kernel default
        self.defaults: dict = {k: a.default for k, a in self.attrs.items() if not a.required}
        self.param_shapes = self._with_defaults(param_shapes)
        # (attrs, input shapes) -> output shapes, or None where the inputs do not fit the
        # operator (inference then runs the kernel on "meta" tensors, which raises its error)
        self.infer_shape_rule = self._with_defaults(infer_shape)
        self.infer_type_rule = self._with_defaults(infer_type)
        # backward shape rule: (attrs, input shapes, output shapes) -> input shapes; shapes may be
        # partial (None: unknown rank, 0: unknown dim)
        self.infer_inputs_rule = self._with_defaults(infer_inputs)
        # partial inference: (attrs, partial input shapes, outputs the sentinel runs found) ->
        # the outputs MXNet reports (some operators say less than the runs could: ``where``
        # nothing until every input is known, ``slice`` no size along an unknown axis)
        self.partial_outputs_rule = self._with_defaults(partial_outputs)
        self.infer_subgraphs_rule = self._with_defaults(infer_subgraphs)

    # -- facts for the compiler -------------------------------------------------------------
    def written_inputs(self, attrs: dict, n_inputs: int) -> tuple:
        """Slots of the ``n_inputs`` inputs a node with ``attrs`` writes in place: its auxiliary
        states and ``mutates_inputs`` (a value read there must stay a value of its own)."""
        names = self.aux_inputs(attrs) + self.mutates_inputs
        slots = set(self.mutates_rule(attrs, n_inputs)) if self.mutates_rule is not None else set()
        if names:
            slots.update(i for i, n in enumerate(self.slot_names(attrs, n_inputs)) if n in names)
        return tuple(sorted(slots))

    def slot_names(self, attrs: dict, n_inputs: int) -> tuple:
        """The names of the input slots of a node with ``attrs`` and ``n_inputs`` inputs
        (``data``, ``weight``, ``arg0``...)."""
        if self.variadic:
            return tuple(f"arg{i}" for i in range(n_inputs))
        if self.active_inputs_rule is None:
            return self.inputs[:n_inputs]  # optional inputs are present only when given (trailing)
        return self.active_inputs(attrs)

    def is_predict_identity(self, attrs: dict) -> bool:
        """Whether a node with ``attrs`` is the identity in predict mode (``predict_identity``)."""
        rule = self.predict_identity
        return bool(rule(self.complete_attrs(attrs))) if callable(rule) else rule

    def fused_activation(self, attrs: dict) -> Optional[ActivationChoice]:
        """The activation a fused operator computes a node with ``attrs`` as, else None."""
        rule = self.fused_activation_rule
        return rule(attrs) if rule is not None else None

    def complete_attrs(self, attrs: dict) -> dict:
        """``attrs`` with every attribute it leaves out set to the kernel's default."""
        if not self.defaults:
            return attrs
        full = dict(self.defaults)
        full.update(attrs)
        return full

    def attr_value(self, attrs: Mapping[str, Any], key: str) -> Any:
        """``attrs[key]``, or the kernel's default for ``key`` where ``attrs`` leave it out (one
        attribute of ``complete_attrs(attrs)``, without building the dict)."""
        if key in attrs:
            return attrs[key]
        return self.attrs[key].default

    def _with_defaults(self, rule: Optional[Callable]) -> Optional[Callable]:
        """A shape/type rule that receives complete attributes (``complete_attrs``) whoever
        calls it; ``__wrapped__`` is the rule as written."""
        if rule is None:
            return None

        @functools.wraps(rule)
        def with_defaults(attrs: dict, *args: Any) -> Any:
            return rule(self.complete_attrs(attrs), *args)
        return with_defaults

    # -- outputs --------------------------------------------------------------------------
    def num_outputs(self, attrs: dict) -> int:
        n = self._num_outputs
        return n(attrs) if callable(n) else n

    def total_outputs(self, attrs: dict) -> int:
        """All outputs including hidden ones (MXNet's ``node_row_ptr`` counts these)."""
        n = self._total_outputs
        if n is None:
            return self.num_outputs(attrs)
        return n(attrs) if callable(n) else n

    def output_names(self, attrs: dict) -> list:
        names = self._output_names
        if callable(names):
            return list(names(attrs))
        if names is not None:
            return list(names)[: self.num_outputs(attrs)]
        n = self.num_outputs(attrs)
        return ["output"] if n == 1 else [f"output{i}" for i in range(n)]

    # -- inputs ---------------------------------------------------------------------------
    def active_inputs(self, attrs: dict) -> tuple:
        """Input names a symbolic node of this operator has, given its attributes.

        Without an ``active_inputs`` rule this is every input; optional ones (default ``None``)
        may then be left off the end of a node's inputs.
        """
        if self.active_inputs_rule is not None:
            return tuple(self.active_inputs_rule(attrs))
        return self.inputs

    def input_slots(self, attrs: dict) -> tuple:
        """Names of the input slots, in order (dynamic operators: from the attributes)."""
        return self.active_inputs(attrs) if self.dynamic_inputs else self.inputs

    def aux_inputs(self, attrs: dict) -> tuple:
        """Names of the inputs the operator mutates (auxiliary states), given its attributes."""
        return tuple(self.aux_rule(attrs)) if self.aux_rule is not None else self.aux

    @property
    def takes_no_attrs(self) -> bool:
        """No declared attribute (``num_args`` aside): MXNet ignores any it is given."""
        return all(a == "num_args" for a in self.attrs)

    def kernel_attrs(self, attrs: dict) -> dict:
        """The attributes the kernel takes: hidden ``__x__`` keys and ``num_args`` removed
        (open operators also take every undeclared attribute)."""
        return {k: v for k, v in attrs.items()
                if (k in self.attrs or self.open_attrs) and k != "num_args" and not k.startswith("__")}

    def arity_ok(self, n: int, attrs: dict) -> bool:
        """Whether a node of this operator may have ``n`` inputs."""
        if self.variadic:
            return True
        if self.active_inputs_rule is not None:
            return n == len(self.active_inputs(attrs))
        return len([i for i in self.inputs if i not in self.optional_inputs]) <= n <= len(self.inputs)

    def check_attrs(self, attrs: dict) -> None:
        for k in attrs:
            if (k not in self.attrs and not self.open_attrs and not self.takes_no_attrs
                    and not (k.startswith("__") and k.endswith("__"))):
                raise MXNetError(f"operator {self.name} has no attribute {k!r}; "
                                 f"its attributes are {sorted(self.attrs)}")
        for k, a in self.attrs.items():
            if a.required and k not in attrs and k != "num_args":
                raise MXNetError(f"operator {self.name}: required attribute {k!r} is missing")
            if a.kind == "enum" and k in attrs and attrs[k] not in a.choices:
                raise MXNetError(f"operator {self.name}: invalid {k}={attrs[k]!r}; "
                                 f"expected one of {list(a.choices)}")

    def parse_attrs(self, strings: dict) -> dict:
        """Typed attributes from MXNet's string map (unknown keys raise, ``__x__`` kept)."""
        out = {}
        for k, s in strings.items():
            if k.startswith("__") and k.endswith("__"):
                out[k] = s
                continue
            a = self.attrs.get(k)
            if a is None and (self.open_attrs or self.takes_no_attrs):
                # open attributes stay the strings MXNet stores; an operator without attributes
                # has no parser in MXNet, which keeps (and ignores) whatever a file gives it
                out[k] = s
                continue
            if a is None:
                raise MXNetError(f"operator {self.name} has no attribute {k!r}; "
                                 f"its attributes are {sorted(self.attrs)}")
            out[k] = a.parse(s, self.name)
        return out

    def __repr__(self) -> str:
        return f"<OpDef {self.name}({', '.join(self.inputs)}; {', '.join(map(repr, self.attrs.values()))})>"


_OPS: dict[str, OpDef] = {}
_BY_NAME: dict[str, OpDef] = {}


def register(name: str, **facts: Any) -> Callable[[Callable], Callable]:
    """Decorator: register ``kernel`` as operator ``name`` with the given facts (see OpDef)."""
    def deco(kernel: Callable) -> Callable:
        op = OpDef(name, kernel, **facts)
        if name in _BY_NAME:
            raise ValueError(f"operator {name} registered twice")
        _OPS[name] = op
        for n in (name,) + op.aliases:
            if n in _BY_NAME:
                raise ValueError(f"operator name {n} already taken by {_BY_NAME[n].name}")
            _BY_NAME[n] = op
        kernel.opdef = op  # type: ignore[attr-defined]  # a function attribute
        return kernel
    return deco


def add_alias(name: str, *aliases: str) -> OpDef:
    """Give the registered operator ``name`` more names, as MXNet's ``.add_alias`` does where a
    family registered later (the NumPy interface's ``_npx_convolution`` is ``Convolution``)
    calls an existing operator: one OpDef, so graphs and exported JSON name ``name``."""
    op = get(name)
    for n in aliases:
        if n in _BY_NAME:
            raise ValueError(f"operator name {n} already taken by {_BY_NAME[n].name}")
        _BY_NAME[n] = op
    op.aliases = op.aliases + tuple(aliases)
    return op


def sparse_rule(name: str, from_dense: bool = False) -> Callable[[Callable], Callable]:
    """Decorator: the kernel operator ``name`` runs when an input has sparse storage (MXNet's
    ``FComputeEx``). It takes the operator's inputs as torch tensors (``torch.sparse_coo``
    tensors with one sparse dimension are row_sparse arrays, ``torch.sparse_csr`` tensors csr
    arrays) and its attributes, and returns the result (a sparse tensor for a sparse result), or
    ``NotImplemented`` for a combination of storage types it has no kernel for: the front-end
    then computes on the dense form and returns a dense array, as MXNet's storage fallback.
    ``from_dense``: the rule also runs when every input is dense (``cast_storage``: its result
    may be sparse); other rules never slow down dense calls."""
    def deco(fn: Callable) -> Callable:
        op = get(name)
        if op.sparse is not None:
            raise ValueError(f"operator {name} already has a sparse rule")
        op.sparse = fn
        op.sparse_from_dense = from_dense
        return fn
    return deco


def storage_rule(name: str, grad: bool = False) -> Callable[[Callable], Callable]:
    """Decorator: operator ``name``'s storage-type rule, read by graphs (``compiler.storage``).
    It takes the input storage types (``'default'``, ``'row_sparse'``, ``'csr'``) and the
    attributes and returns the output storage types (``grad``: each input's gradient storage
    type for a dense head gradient); it may raise MXNetError for combinations MXNet refuses."""
    def deco(fn: Callable) -> Callable:
        op = get(name)
        if grad:
            op.grad_storage = fn
        else:
            op.storage = fn
        return fn
    return deco


def get(name: str) -> OpDef:
    """The operator called ``name`` (canonical or alias); MXNetError if unknown."""
    try:
        return _BY_NAME[name]
    except KeyError:
        import difflib
        close = difflib.get_close_matches(name, list(_BY_NAME), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise MXNetError(f"unknown operator {name!r}{hint}") from None


def find(name: str) -> Optional[OpDef]:
    return _BY_NAME.get(name)


def all_ops() -> list[OpDef]:
    return list(_OPS.values())


def names() -> dict[str, OpDef]:
    """Every callable name (canonical and aliases) -> OpDef."""
    return dict(_BY_NAME)
