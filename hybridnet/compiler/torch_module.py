"""A compiled graph handed to PyTorch as a ``torch.nn.Module`` (``HybridBlock.to_torch``,
``hybridnet.to_torch``): the way from an MXNet model to PyTorch's deployment tools
(``torch.export`` and AOTInductor, ``torch.jit.trace``, TorchServe).

The module's ``forward`` is the function a hybridized call runs in recording/training: the
graph after the training pipeline (``pipeline.TRAINING_PIPELINE``) compiled by ``codegen``, so
its outputs and gradients are hybridnet's. Its parameters are the model's: the graph's
arguments become ``torch.nn.Parameter`` objects, its auxiliary states (BatchNorm's running
statistics) buffers, sharing memory with the given tensors unless ``copy``. Torch attribute
names cannot hold every MXNet name (``.`` is torch's path separator), so each is made an
identifier and ``mxnet_names`` maps the torch name back to the MXNet one.

Graphs a trace cannot express are refused up front, naming the node: custom Python operators
(``Custom``: arbitrary Python per call) and value-dependent control flow (``_while_loop``,
``_cond``: the branch taken follows the data). ``_foreach`` runs a fixed number of steps (the
sequence length) and is kept: a trace unrolls it. With example inputs, nodes whose kernels
read tensor values in Python (``tiers.value_reads``) are refused too.
"""
from __future__ import annotations

import keyword
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

import torch

from ..base import MXNetError
from ..ir.graph import Graph, Node
from .codegen import compile_graph
from .pipeline import training_graph

__all__ = ["GraphModule", "graph_module", "refusal"]


def _walk(graph: Graph) -> Iterable[Node]:
    for n in graph.nodes:
        yield n
        for sub in n.subgraphs or ():
            yield from _walk(sub)


def refusal(graph: Graph) -> Optional[str]:
    """Why ``graph`` cannot become a traceable torch module (naming the node), or None."""
    for n in _walk(graph):
        op = n.op
        if op is None:
            continue
        if op.open_attrs or op.prepare_call is not None:
            return (f"node {n.name!r} is a custom Python operator ({op.name}): it runs arbitrary "
                    f"Python that torch.export/torch.jit cannot trace; rewrite it with built-in "
                    f"operators, or keep running the model under hybridnet")
        if op.value_dependent_path:
            return (f"node {n.name!r} is value-dependent control flow ({op.name}): the path it "
                    f"takes follows the data, which a trace freezes; keep running the model under "
                    f"hybridnet, or export with a fixed path (contrib.foreach)")
    return None


def _torch_name(name: str, used: set) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", name) or "param"
    if base[0].isdigit() or keyword.iskeyword(base) or base.startswith("_"):
        base = "p_" + base
    cand, k = base, 1
    while cand in used:
        cand, k = f"{base}_{k}", k + 1
    used.add(cand)
    return cand


class GraphModule(torch.nn.Module):
    """A hybridnet graph as a ``torch.nn.Module``; build it with :func:`graph_module`.

    ``forward`` takes the data inputs positionally, in ``input_names`` order (MXNet's data
    names, as identifiers), and returns one tensor for a one-output graph, else a tuple.
    ``mxnet_names``: torch parameter/buffer name -> MXNet name. ``source``: the generated code
    ``forward`` runs. ``self.training`` is MXNet's train mode (``autograd.record(train_mode=)``):
    BatchNorm's batch statistics, Dropout."""

    def __init__(self, graph: Graph, data_names: Sequence[str], params: Mapping[str, Any],
                 trainable: Mapping[str, bool], copy: bool = False):
        super().__init__()
        graph = training_graph(graph)
        variables = {v.name: v for v in graph.variables()}
        aux = {v.name for v in graph.aux_variables()}
        missing = [n for n in variables if n not in params and n not in data_names]
        if missing:
            raise MXNetError(f"to_torch: no value for the graph variables {missing}: they are neither "
                             f"data inputs {list(data_names)} nor given parameters; pass the "
                             f"parameters (a .params file or a dict)")
        used: set = set(dir(self)) | {"self"}  # never shadow a Module attribute
        self.input_names = [_torch_name(n, used) for n in data_names]
        self.mxnet_input_names = list(data_names)
        self.mxnet_names: Dict[str, str] = {}
        self._param_attrs: List[str] = []
        order: List[Node] = []
        for name, node in variables.items():
            if name in data_names:
                continue
            t = params[name]
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"to_torch: parameter {name!r} must be a tensor, got {type(t).__name__}")
            t = t.detach().clone() if copy else t.detach()
            attr = _torch_name(name, used)
            if name in aux:
                self.register_buffer(attr, t)
            else:
                self.register_parameter(attr, torch.nn.Parameter(t, requires_grad=trainable.get(name, True)
                                                                 and t.is_floating_point()))
            self.mxnet_names[attr] = name
            self._param_attrs.append(attr)
            order.append(node)
        self._data_pos = [i for i, n in enumerate(data_names) if n in variables]
        data_nodes = [variables[data_names[i]] for i in self._data_pos]
        self._compiled = compile_graph(graph, data_nodes + order, "hybrid_forward")
        self.source = self._compiled.source
        self._fn = self._compiled.fn
        # a forward with the inputs' names (torch.export's dynamic_shapes may name them)
        args = ", ".join(self.input_names)
        scope: dict = {}
        exec(f"def forward(self, {args}):\n    return self._run(({args}{',' if len(data_names) == 1 else ''}))\n",
             scope)  # noqa: S102 - identifiers made by _torch_name
        # per-module class: torch.export and torch.jit read ``type(module).forward``
        cls = type("GraphModule", (GraphModule,), {"forward": scope["forward"], "__module__": __name__})
        object.__setattr__(self, "__class__", cls)

    def _run(self, data: tuple) -> Any:
        if len(data) != len(self.input_names):
            raise TypeError(f"forward takes {len(self.input_names)} inputs {self.input_names}, got {len(data)}")
        tensors = [data[i] for i in self._data_pos] + [getattr(self, a) for a in self._param_attrs]
        outs = self._fn(*tensors, _train=self.training)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def mxnet_state_dict(self) -> Dict[str, torch.Tensor]:
        """The parameters and buffers under their MXNet names."""
        return {m: getattr(self, a) for a, m in self.mxnet_names.items()}

    def extra_repr(self) -> str:
        return f"inputs={self.mxnet_input_names}, {len(self.mxnet_names)} parameters and states"


def graph_module(graph: Graph, data_names: Sequence[str], params: Mapping[str, Any],
                 trainable: Optional[Mapping[str, bool]] = None, copy: bool = False,
                 examples: Optional[Sequence[torch.Tensor]] = None, where: str = "the graph") -> GraphModule:
    """``graph`` as a :class:`GraphModule` in eval mode (MXNet's predict mode, as a loaded
    deployment model is; ``.train()`` switches to train mode). ``params``: MXNet name ->
    tensor; ``examples``: data tensors in ``data_names`` order, to refuse nodes that would
    read their values in Python (a trace would freeze them)."""
    why = refusal(graph)
    if why is not None:
        raise MXNetError(f"to_torch: {where} cannot be handed to PyTorch: {why}")
    module = GraphModule(graph, data_names, params, trainable or {}, copy)
    if examples is not None:
        from .tiers import value_reads
        g = module._compiled.graph
        nodes = {v.name: v for v in g.variables()}
        order = [nodes[module.mxnet_input_names[i]] for i in module._data_pos] + \
            [nodes[module.mxnet_names[a]] for a in module._param_attrs]
        tensors = [examples[i] for i in module._data_pos] + [getattr(module, a) for a in module._param_attrs]
        reads = value_reads(g, order, tensors)
        if reads:
            shown = "; ".join(f"node {k} ({v})" for k, v in sorted(reads.items()))
            raise MXNetError(f"to_torch: {where} cannot be handed to PyTorch: its kernels read tensor "
                             f"values in Python, which a trace freezes: {shown}; keep running the "
                             f"model under hybridnet")
    return module.eval()
