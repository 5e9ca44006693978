"""The compiler's pipelines, each declared once, and the one rule for which compiled function
serves a call.

A hybridized graph (``cached_op.CachedOp``) and a bound Symbol (``symbol.executor``) compile
the graph that :data:`TRAINING_PIPELINE` leaves (``compiled``: what recording and training run,
eager mode's kernels). Predict-mode calls (not recording, not training) may run a faster
function built by the stages of :data:`PREDICT_PIPELINE` that feed it (:class:`Target`):

``PLAN``
    the predict plan (``predict.PredictPlan``): identities removed, BatchNorm folded, oneDNN
    fusion, then parameter-only work split into a prologue run once per parameter change.
    Starts from the traced graph (CSE first would merge two convolutions that each feed their
    own BatchNorm, leaving neither foldable).
``IN_PLACE``
    convolution activations channels-last and BatchNorm, residual additions and activations
    written over the convolution outputs only they read. Starts from the training pipeline's
    graph: it replaces ``compiled`` call for call.
``TIER``
    the lowered tier (``tiers``: frozen TorchScript/oneDNN or Inductor), the last, optional
    stage: it lowers the training pipeline's graph rather than rewriting it.

:func:`run_stages` runs a selection of stages in order and lints the graph after each stage
that changed it, so a broken graph is reported with the name of the stage that broke it. A lint
is one walk over the nodes (resnet18_v1: 0.1 ms on an idle core), so it is always on; a stage
that finds nothing to do returns the graph it was given (one cheap walk), which is then neither
linted nor, for ``IN_PLACE``, compiled again (a 100,000-node graph: seconds each).

:class:`PredictOptions` holds what MXNet's ``static_alloc``/``static_shape``/``backend`` flags
switch on here besides their MXNet meanings, and :func:`serving_order` decides which compiled
function serves a call.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence, Tuple

from ..ir.graph import Graph, collector_paused
from .passes import lint_after
from .passes.cse import cse, distinct_outputs
from .passes.fuse import fuse_softmax_ce
from .passes.int8 import fuse_int8, has_int8_layers
from .passes.inference import compute_in_place, fold_batchnorm, remove_inference_identities
from .passes.layout import channels_last_convolutions
from .passes.onednn import fuse_onednn, fusible_convolutions
from .tiers import check_backend

__all__ = ["Target", "PassContext", "Stage", "TRAINING_PIPELINE", "PREDICT_PIPELINE", "run_stages",
           "training_graph", "predict_graph", "PredictOptions", "lowering_backend", "Serve",
           "serving_order"]


class Target(enum.Flag):
    """The predict-mode functions a stage of :data:`PREDICT_PIPELINE` builds."""
    PLAN = enum.auto()
    IN_PLACE = enum.auto()
    TIER = enum.auto()


@dataclass(frozen=True)
class PassContext:
    """What conditional stages read.

    ``bound``: the graph of a bound Symbol (an executor): its optimized symbol
    (``get_optimized_symbol``) keeps MXNet's operators, so no hybridnet-only fusion, and each
    repeated output gets its own copy as MXNet's executor gives it. ``eliminate_common``: merge
    common subexpressions (an executor reads ``MXNET_ELIMINATE_COMMON_EXPR``; hybridized blocks
    always do). ``param_dtypes``: parameter name -> dtype, for BatchNorm folding.
    ``onednn_shapes``: for the oneDNN fusion (which also needs a 2-D convolution in the graph),
    a function giving every node output's shape when the graph it is handed runs on this call's
    tensors; None where the tensors rule it out (not all dense CPU float32)."""
    bound: bool = False
    eliminate_common: bool = True
    param_dtypes: Optional[Mapping[str, Any]] = None
    onednn_shapes: Optional[Callable[[Graph], Mapping]] = None


class Stage(NamedTuple):
    """One step of a pipeline: ``run(graph, context)`` returns the rewritten graph (None for the
    lowered tier, which lowers instead of rewriting), for the targets in ``feeds``, where
    ``when(graph, context)`` holds and, with ``needs``, that earlier stage ran."""
    name: str
    run: Optional[Callable[[Graph, PassContext], Graph]]
    feeds: Optional[Target] = None
    when: Optional[Callable[[Graph, PassContext], bool]] = None
    needs: Optional[str] = None


def _onednn(graph: Graph, ctx: PassContext) -> Graph:
    assert ctx.onednn_shapes is not None
    return fuse_onednn(graph, ctx.onednn_shapes(graph))


#: The passes every compiled graph runs first (the default function, ``compiled``).
TRAINING_PIPELINE: Tuple[Stage, ...] = (
    Stage("cse", lambda g, c: cse(g), when=lambda g, c: c.eliminate_common),
    Stage("fuse_softmax_ce", lambda g, c: fuse_softmax_ce(g), when=lambda g, c: not c.bound),
    # MXNet inserts these copies after eliminating common expressions
    Stage("distinct_outputs", lambda g, c: distinct_outputs(g), when=lambda g, c: c.bound and c.eliminate_common),
)

_PLAN, _IN_PLACE, _TIER = Target.PLAN, Target.IN_PLACE, Target.TIER

#: The one predict pipeline, in order; each predict-mode function runs the stages that feed it.
PREDICT_PIPELINE: Tuple[Stage, ...] = (
    Stage("remove_inference_identities", lambda g, c: remove_inference_identities(g), _PLAN),
    Stage("fold_batchnorm", lambda g, c: fold_batchnorm(g, c.param_dtypes), _PLAN),
    Stage("cse", lambda g, c: cse(g), _PLAN),
    Stage("fuse_softmax_ce", lambda g, c: fuse_softmax_ce(g), _PLAN),
    Stage("fuse_onednn", _onednn, _PLAN,
          when=lambda g, c: c.onednn_shapes is not None and fusible_convolutions(g)),
    # the fusion gives each convolution its own weight reorder and zero bias: merge the repeats
    Stage("cse_after_onednn", lambda g, c: cse(g), _PLAN, needs="fuse_onednn"),
    # MXNet's quantized layer chains (int8 layer, requantize, relu, residual add) as one oneDNN kernel each
    Stage("fuse_int8", lambda g, c: fuse_int8(g), _PLAN | _IN_PLACE, when=lambda g, c: has_int8_layers(g)),
    Stage("channels_last_convolutions", lambda g, c: channels_last_convolutions(g), _IN_PLACE),
    Stage("compute_in_place", lambda g, c: compute_in_place(g), _IN_PLACE),
    Stage("lowered_tier", None, _TIER),  # tiers.TierRunner, built by CachedOp
)


def run_stages(graph: Graph, stages: Sequence[Stage], ctx: PassContext = PassContext()) -> Graph:
    """Run the graph-rewriting ``stages`` whose condition holds, in order, linting after each:
    a broken graph raises ``GraphError`` naming the stage that broke it."""
    ran: set = set()
    with collector_paused():  # passes build nodes and entries by the hundred thousand on large graphs
        for stage in stages:
            if stage.run is None or (stage.needs is not None and stage.needs not in ran) \
                    or (stage.when is not None and not stage.when(graph, ctx)):
                continue
            rewritten = stage.run(graph, ctx)
            if rewritten is not graph:  # a stage that hands its graph on unchanged broke nothing
                graph = lint_after(rewritten, stage.name, unique_variable_names=not ctx.bound)
            ran.add(stage.name)
    return graph


def training_graph(graph: Graph, ctx: PassContext = PassContext()) -> Graph:
    """``graph`` after :data:`TRAINING_PIPELINE`."""
    return run_stages(graph, TRAINING_PIPELINE, ctx)


def predict_graph(graph: Graph, target: Target, ctx: PassContext = PassContext()) -> Graph:
    """``graph`` after the stages of :data:`PREDICT_PIPELINE` that feed ``target`` (hand it the
    traced graph for ``PLAN``, the training pipeline's graph for the others)."""
    return run_stages(graph, [s for s in PREDICT_PIPELINE if s.feeds is not None and target in s.feeds], ctx)


def lowering_backend(backend: Optional[str], static_alloc: bool, static_shape: bool) -> Optional[str]:
    """The lowered tier predict-mode calls use: the one ``backend`` names (MXNet's names,
    checked: an unknown one raises naming the valid ones), none for ``'default'``, and with no
    backend named, frozen TorchScript/oneDNN when the user allowed both static allocation and
    static shapes (MXNet's flags for "fixed shapes, make it fast"), else none."""
    if backend is None or backend == "":
        return "MKLDNN" if static_alloc and static_shape else None
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string such as 'ONEDNN', got {type(backend).__name__}")
    name = check_backend(backend)
    return None if name == "default" else name


@dataclass(frozen=True)
class PredictOptions:
    """Which predict-mode functions a compiled graph builds, beside MXNet's meaning of its flags.

    ``static_alloc`` keeps MXNet's meaning on the flag itself (buffers reused from call to call:
    ``host_memory.keep_freed_memory``), ``static_shape`` too (a compiled variant per input
    shape). What they also switch on here has its own name:

    ``plan``
        build the predict plan (``Target.PLAN``); on with ``static_alloc``.
    ``tier``
        the lowered tier's backend (``Target.TIER``; None: no tier): the one ``backend`` names,
        else ``'MKLDNN'`` with ``static_alloc`` and ``static_shape`` (:func:`lowering_backend`).
    ``tier_automatic``
        the tier was chosen by the flags, not named: it must then run 1.1x faster than the plan
        (or the default function) to serve, and waits until its signature is hot before building
        (``cached_op.AUTOMATIC_TIER_AFTER_CALLS`` predictions).
    """
    plan: bool = False
    tier: Optional[str] = None
    tier_automatic: bool = False

    @classmethod
    def from_flags(cls, static_alloc: bool, static_shape: bool, backend: Optional[str] = None) -> "PredictOptions":
        """The options ``hybridize(static_alloc=, static_shape=, backend=)`` switches on."""
        tier = lowering_backend(backend, static_alloc, static_shape)
        return cls(plan=bool(static_alloc), tier=tier, tier_automatic=not backend and tier is not None)


class Serve(enum.Enum):
    """A function that may serve a call (see :func:`serving_order`)."""
    TIMED = "timed"  # the default function, each node timed for the profiler
    HOOK = "hook"  # the interpreter, node by node, calling the op hook
    COMPILED = "compiled"  # the default function (training pipeline)
    TIER = "tier"
    PLAN = "plan"
    IN_PLACE = "in_place"


def serving_order(recording: bool, training: bool, *, profiling: bool = False, hooked: bool = False,
                  tier: bool = False, plan: bool = False) -> Tuple[Serve, ...]:
    """The functions that may serve a call, in the order they are tried; all but the last may
    decline (the tier while it holds no program for these data shapes and parameters, the
    in-place function where its passes changed nothing). The decision order:

    1. the profiler is running: the default function, timed node by node;
    2. an op hook is set: the interpreter (every node output shown to the hook);
    3. recording or training: the default function (eager mode's kernels and gradients);
    4. predict mode: the lowered tier, if any, then the predict plan, if any (it always
       serves), else the in-place function, else the default function.
    """
    if profiling:
        return (Serve.TIMED,)
    if hooked:
        return (Serve.HOOK,)
    if recording or training:
        return (Serve.COMPILED,)
    first = (Serve.TIER,) if tier else ()
    return first + ((Serve.PLAN,) if plan else (Serve.IN_PLACE, Serve.COMPILED))
