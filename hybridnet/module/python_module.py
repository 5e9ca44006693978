"""``mx.mod.PythonModule`` / ``PythonLossModule``: Module-API pieces written in Python.

:class:`PythonModule` implements the bookkeeping of a module without parameters (names, shapes,
no-op ``init_params``/``update``/``init_optimizer``); a subclass supplies
``_compute_output_shapes``, ``forward``, ``backward``, ``get_outputs``. :class:`PythonLossModule`
is a loss head for :class:`~hybridnet.module.SequentialModule`: its outputs are its input
scores, and its input gradient is ``grad_func(scores, labels)`` (default: the scores, unchanged).
Mirrors MXNet 1.9.1's ``module/python_module.py``.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from .. import ndarray as nd
from ..initializer import Uniform
from ..ndarray.ndarray import NDArray
from .base_module import BaseModule

__all__ = ["PythonModule", "PythonLossModule"]


class PythonModule(BaseModule):
    """A module whose computation a Python subclass writes (see the module docstring)."""

    def __init__(self, data_names: Sequence[str], label_names: Optional[Sequence[str]],
                 output_names: Sequence[str], logger: Any = logging):
        super().__init__(logger=logger)
        self._data_names = list(data_names)
        self._label_names = list(label_names) if label_names is not None else None
        self._output_names = list(output_names)
        self._data_shapes: Any = None
        self._label_shapes: Any = None
        self._output_shapes: Any = None

    @property
    def data_names(self) -> List[str]:
        return self._data_names

    @property
    def output_names(self) -> List[str]:
        return self._output_names

    @property
    def data_shapes(self) -> Any:
        return self._data_shapes

    @property
    def label_shapes(self) -> Any:
        return self._label_shapes

    @property
    def output_shapes(self) -> Any:
        return self._output_shapes

    def get_params(self) -> tuple:
        """No parameters: ``({}, {})``."""
        return {}, {}

    def init_params(self, initializer: Any = Uniform(0.01), arg_params: Any = None,
                    aux_params: Any = None, allow_missing: bool = False, force_init: bool = False,
                    allow_extra: bool = False) -> None:
        """Nothing to initialise (a subclass with parameters overrides this)."""
        self.params_initialized = True

    def update(self) -> None:
        """Nothing to update (a subclass with parameters overrides this)."""

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise RuntimeError("PythonModule does not support presliced labels")
        eval_metric.update(labels, self.get_outputs())

    def bind(self, data_shapes: Any, label_shapes: Any = None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Record the shapes and compute the output shapes (``_compute_output_shapes``)."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if grad_req != "write":
            raise ValueError(f"PythonModule.bind: Python modules only support grad_req='write', "
                             f"got {grad_req!r}")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        names = [x[0] for x in data_shapes]
        if names != self._data_names:
            raise ValueError(f"PythonModule.bind: data_shapes name {names}, the module expects "
                             f"{self._data_names}")
        self._data_shapes = data_shapes
        self._label_shapes = label_shapes
        if label_shapes is not None:
            lnames = [x[0] for x in label_shapes]
            if self._label_names is None or lnames != self._label_names:
                raise ValueError(f"PythonModule.bind: label_shapes name {lnames}, the module "
                                 f"expects {self._label_names}")
        self._output_shapes = self._compute_output_shapes()
        self.binded = True

    def _compute_output_shapes(self) -> list:
        """``[(name, shape)]`` of the outputs, from ``self._data_shapes``/``_label_shapes``."""
        raise NotImplementedError("a PythonModule subclass must implement _compute_output_shapes")

    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """No parameters, no optimizer."""
        self.optimizer_initialized = True


class PythonLossModule(PythonModule):
    """A loss head: outputs its input scores; input gradient ``grad_func(scores, labels)``."""

    def __init__(self, name: str = "pyloss", data_names: Sequence[str] = ("data",),
                 label_names: Sequence[str] = ("softmax_label",), logger: Any = logging,
                 grad_func: Optional[Callable[[NDArray, NDArray], Any]] = None):
        super().__init__(data_names, label_names, [name + "_output"], logger=logger)
        if len(self._data_names) != 1 or len(self._label_names or []) != 1:
            raise ValueError("PythonLossModule takes exactly one data name and one label name")
        if grad_func is not None and not callable(grad_func):
            raise TypeError("PythonLossModule: grad_func must be callable(scores, labels)")
        self._name = name
        self._scores: Optional[NDArray] = None
        self._labels: Optional[NDArray] = None
        self._scores_grad: Optional[NDArray] = None
        self._grad_func = grad_func

    def _compute_output_shapes(self) -> list:
        return [(self._name + "_output", self._data_shapes[0][1])]

    def forward(self, data_batch: Any, is_train: Optional[bool] = None) -> None:
        """Keep the scores (and, training, the labels) for ``backward``."""
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        return [self._scores]

    def backward(self, out_grads: Any = None) -> None:
        """The scores' gradient: ``grad_func(scores, labels)``, or the scores themselves."""
        if out_grads is not None:
            raise ValueError("PythonLossModule.backward: a loss module takes no out_grads")
        if not self.for_training:
            raise RuntimeError("PythonLossModule.backward: bind with for_training=True first")
        self._backward_impl()

    def _backward_impl(self) -> None:
        if self._grad_func is not None:
            grad = self._grad_func(self._scores, self._labels)
            if not isinstance(grad, NDArray):
                grad = nd.array(np.asarray(grad))
            self._scores_grad = grad
        else:
            self._scores_grad = self._scores

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        return [self._scores_grad]

    def install_monitor(self, mon: Any) -> None:
        raise NotImplementedError("PythonLossModule has no executors to monitor")
