"""Graph passes (``Graph -> Graph``) and the manager that runs and lints them."""
from __future__ import annotations

from typing import Callable, Sequence

from ...ir.graph import Graph, GraphError
from .cse import cse, distinct_outputs
from .fuse import fuse_softmax_ce
from .export import broadcast_where_shapes_differ, remove_amp_cast
from .inference import fold_batchnorm, remove_inference_identities
from .constfold import ParameterPrologue, split_parameter_prologue

__all__ = ["run_passes", "optimize", "export_graph", "cse", "distinct_outputs", "fuse_softmax_ce", "remove_amp_cast",
           "broadcast_where_shapes_differ", "DEFAULT_PASSES", "fold_batchnorm", "remove_inference_identities",
           "ParameterPrologue", "split_parameter_prologue"]

DEFAULT_PASSES: tuple = (cse, fuse_softmax_ce)


def run_passes(graph: Graph, passes: Sequence[Callable[[Graph], Graph]], lint: bool = True) -> Graph:
    """Apply ``passes`` in order; with ``lint``, check the graph after each and name the culprit."""
    for p in passes:
        graph = p(graph)
        if lint:
            try:
                graph.lint()
            except GraphError as e:
                raise GraphError(f"pass {getattr(p, '__name__', p)!s} produced an invalid graph: {e}") from None
    return graph


def optimize(graph: Graph) -> Graph:
    """The passes hybridize runs before compiling."""
    return run_passes(graph, DEFAULT_PASSES)


def export_graph(graph: Graph, input_shapes: dict, drop_amp_cast: bool = True) -> Graph:
    """The graph as ``export`` writes it: loadable by MXNet 1.9.1."""
    passes: list = [lambda g: broadcast_where_shapes_differ(g, input_shapes)]
    if drop_amp_cast:
        passes.append(remove_amp_cast)
    return run_passes(graph, passes)
