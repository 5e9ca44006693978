"""Graph passes (``Graph -> Graph``) and the linting that runs after each one.

Which passes a compiled graph runs, and in which order, is declared once in
``compiler.pipeline``; ``run_passes`` runs a plain list (``export_graph``, tests)."""
from __future__ import annotations

from typing import Callable, Sequence

from ...ir.graph import Graph, GraphError
from .cse import cse, distinct_outputs
from .fuse import fuse_softmax_ce
from .export import broadcast_where_shapes_differ, remove_amp_cast
from .inference import fold_batchnorm, remove_inference_identities
from .constfold import ParameterPrologue, split_parameter_prologue

__all__ = ["run_passes", "lint_after", "export_graph", "cse", "distinct_outputs", "fuse_softmax_ce",
           "remove_amp_cast", "broadcast_where_shapes_differ", "fold_batchnorm", "remove_inference_identities",
           "ParameterPrologue", "split_parameter_prologue"]


def lint_after(graph: Graph, name: str, unique_variable_names: bool = True) -> Graph:
    """``graph``, checked (``Graph.lint``) after the pass ``name`` made it; a GraphError names
    that pass."""
    try:
        graph.lint(unique_variable_names)
    except GraphError as e:
        raise GraphError(f"pass {name} produced an invalid graph: {e}") from None
    return graph


def run_passes(graph: Graph, passes: Sequence[Callable[[Graph], Graph]]) -> Graph:
    """Apply ``passes`` in order, checking the graph after each (``lint_after``)."""
    for p in passes:
        graph = lint_after(p(graph), str(getattr(p, "__name__", p)))
    return graph


def export_graph(graph: Graph, input_shapes: dict, drop_amp_cast: bool = True) -> Graph:
    """The graph as ``export`` writes it: loadable by MXNet 1.9.1."""
    graph = lint_after(broadcast_where_shapes_differ(graph, input_shapes), "broadcast_where_shapes_differ")
    return run_passes(graph, [remove_amp_cast] if drop_amp_cast else [])
