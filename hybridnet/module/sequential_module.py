"""``mx.mod.SequentialModule``: modules chained output-to-input (MXNet 1.9.1's).

Each added module's outputs are the next one's data; ``backward`` hands each module's input
gradients to the one before it. ``add(module, take_labels=True)`` gives that module the labels
(a loss head), ``auto_wiring=True`` renames the incoming data to the module's ``data_names``.
"""
from __future__ import annotations

import copy
import logging
from typing import Any, Dict, Iterable, List

from ..initializer import Uniform
from .base_module import BaseModule

__all__ = ["SequentialModule"]


class SequentialModule(BaseModule):
    """A container module running its modules in order (see the module docstring)."""

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger: Any = logging):
        super().__init__(logger=logger)
        self._modules: List[BaseModule] = []
        self._metas: List[Dict[str, Any]] = []
        self._label_shapes: Any = None
        self._data_shapes: Any = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module: BaseModule, **kwargs: Any) -> "SequentialModule":
        """Append ``module`` (with meta flags ``take_labels``/``auto_wiring``); returns self."""
        for key in kwargs:
            if key not in self._meta_keys:
                raise ValueError(f"SequentialModule.add: unknown meta {key!r} (known: "
                                 f"{sorted(self._meta_keys)})")
        self._modules.append(module)
        self._metas.append(kwargs)
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    def _require(self, who: str, params: bool = True, optimizer: bool = False) -> None:
        if not self.binded or (params and not self.params_initialized) or \
                (optimizer and not self.optimizer_initialized):
            need = "bind()" + (", init_params()" if params else "") + \
                (", init_optimizer()" if optimizer else "")
            raise RuntimeError(f"SequentialModule.{who}: call {need} first")

    @property
    def data_names(self) -> List[str]:
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self) -> List[str]:
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self) -> Any:
        self._require("data_shapes", params=False)
        return self._modules[0].data_shapes

    @property
    def label_shapes(self) -> Any:
        self._require("label_shapes", params=False)
        return self._label_shapes

    @property
    def output_shapes(self) -> Any:
        self._require("output_shapes", params=False)
        return self._modules[-1].output_shapes

    def get_params(self) -> tuple:
        """The union of the modules' ``(arg_params, aux_params)``."""
        self._require("get_params")
        arg_params: dict = {}
        aux_params: dict = {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_params(self, initializer: Any = Uniform(0.01), arg_params: Any = None,
                    aux_params: Any = None, allow_missing: bool = False, force_init: bool = False,
                    allow_extra: bool = False) -> None:
        """Initialise every module; parameter names must be unique across modules."""
        if self.params_initialized and not force_init:
            return
        self._require("init_params", params=False)
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params,
                               aux_params=aux_params, allow_missing=allow_missing,
                               force_init=force_init, allow_extra=allow_extra)
        seen: Dict[str, Dict[str, int]] = {"arg": {}, "aux": {}}
        for i, module in enumerate(self._modules):
            for kind, names in zip(("arg", "aux"), module.get_params()):
                self._check_names(seen[kind], names, i)
        self.params_initialized = True

    def _check_names(self, known: Dict[str, int], names: Iterable[str], i: int) -> None:
        for name in names:
            if name in known:
                j = known[name]
                raise ValueError(f"SequentialModule: duplicated parameter name {name!r} in layer "
                                 f"{i} ({type(self._modules[i]).__name__}), already used in layer "
                                 f"{j} ({type(self._modules[j]).__name__})")
            known[name] = i

    def bind(self, data_shapes: Any, label_shapes: Any = None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Bind each module on the previous one's output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise ValueError("SequentialModule.bind: inputs_need_grad needs for_training=True")
        if shared_module is not None:
            raise ValueError("SequentialModule.bind: shared_module is not supported")
        if not self._modules:
            raise ValueError("SequentialModule.bind: attempting to bind an empty SequentialModule")
        self.binded = True
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._label_shapes = label_shapes
        my_data_shapes = data_shapes
        anybody_needs_label = False
        for i, module in enumerate(self._modules):
            meta = self._metas[i]
            my_label_shapes = None
            if meta.get(self.META_TAKE_LABELS):
                my_label_shapes = label_shapes
                anybody_needs_label = True
            # every module but the first hands input gradients back when training
            my_inputs_need_grad = bool(inputs_need_grad or (for_training and i > 0))
            if meta.get(self.META_AUTO_WIRING, False):
                names = module.data_names
                if len(names) != len(my_data_shapes):
                    raise ValueError(f"SequentialModule.bind: layer {i} takes {len(names)} "
                                     f"inputs, the previous layer gives {len(my_data_shapes)}")
                my_data_shapes = [(new, shape) for new, (_, shape) in zip(names, my_data_shapes)]
            module.bind(data_shapes=my_data_shapes, label_shapes=my_label_shapes,
                        for_training=for_training, inputs_need_grad=my_inputs_need_grad,
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            my_data_shapes = module.output_shapes
        if not anybody_needs_label:
            self._label_shapes = None

    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        self._require("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    def forward(self, data_batch: Any, is_train: Any = None) -> None:
        self._require("forward")
        data_batch = copy.copy(data_batch)
        for i, module in enumerate(self._modules):
            module.forward(data_batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            data_batch.data = module.get_outputs()
            if hasattr(data_batch, "provide_data"):
                names = [x[0] for x in module.output_shapes]
                data_batch.provide_data = [(n, x.shape) for n, x in zip(names, data_batch.data)]

    def backward(self, out_grads: Any = None) -> None:
        self._require("backward")
        for i in reversed(range(len(self._modules))):
            module = self._modules[i]
            module.backward(out_grads=out_grads)
            if i == 0:
                break
            out_grads = module.get_input_grads()

    def update(self) -> None:
        self._require("update", optimizer=True)
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        self._require("get_outputs")
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        self._require("get_input_grads")
        if not self.inputs_need_grad:
            raise RuntimeError("SequentialModule.get_input_grads: bind with inputs_need_grad=True")
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        self._require("update_metric")
        for meta, module in zip(self._metas, self._modules):
            if meta.get(self.META_TAKE_LABELS):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon: Any) -> None:
        self._require("install_monitor", params=False)
        for module in self._modules:
            module.install_monitor(mon)
