"""Basic layers (MXNet 1.9.1 ``gluon.nn.basic_layers``).

Constructor signatures, defaults, name hints, parameter names/shapes (0 = inferred on the first
forward pass) and ``__repr__`` strings follow MXNet 1.9.1. Every layer makes exactly MXNet's
operator call (operator, ``name='fwd'`` or unnamed, and the attributes passed), because the
traced graph is what ``export`` writes.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Optional, Union


from ... import ndarray as nd
from ... import symbol as sym
from ...base import MXNetError, dtype_name
from ..block import Block, HybridBlock, _indent
from .activations import Activation
from .layer_args import check_ints

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "Embedding",
           "BatchNorm", "BatchNormReLU", "InstanceNorm", "LayerNorm", "GroupNorm",
           "Flatten", "Lambda", "HybridLambda"]


def _children_repr(block: Block) -> str:
    modstr = "\n".join(f"  ({key}): {_indent(repr(child), 2)}" for key, child in block._children.items())
    return f"{block.__class__.__name__}(\n{modstr}\n)"


def _run_sequence(children: Any, x: Any, args: tuple) -> Any:
    """MXNet's Sequential loop: a block returning a tuple/list feeds its first element as
    ``x`` and the rest as extra positional inputs of the next block."""
    for block in children:
        x = block(x, *args)
        args = ()
        if isinstance(x, (tuple, list)):
            args = tuple(x[1:])
            x = x[0]
    if args:
        x = tuple([x] + list(args))
    return x



def _scale_shift_params(block: Any, shape: tuple, center: bool, scale: bool, gamma_init: Any,
                        beta_init: Any) -> tuple:
    """gamma and beta of a normalization layer; ``scale``/``center`` False freeze them (grad_req null)."""
    gamma = block.params.get("gamma", grad_req="write" if scale else "null", shape=shape, init=gamma_init,
                             allow_deferred_init=True)
    beta = block.params.get("beta", grad_req="write" if center else "null", shape=shape, init=beta_init,
                            allow_deferred_init=True)
    return gamma, beta

class Sequential(Block):
    """Stacks Blocks sequentially (``net.add(...)``; ``net[i]``, ``net[a:b]``, ``len(net)``)."""

    def __init__(self, prefix: Optional[str] = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)

    def add(self, *blocks: Block) -> None:
        """Adds blocks on top of the stack."""
        for block in blocks:
            self.register_child(block)

    def forward(self, x: Any, *args: Any) -> Any:
        return _run_sequence(self._children.values(), x, args)

    def __repr__(self) -> str:
        return _children_repr(self)

    def __getitem__(self, key: Union[int, slice]) -> Any:
        layers = list(self._children.values())[key]
        if isinstance(layers, list):
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*layers)
            return net
        return layers

    def __len__(self) -> int:
        return len(self._children)

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Hybridizes HybridBlock children (warns that HybridSequential would be faster when
        every child is a HybridBlock, as MXNet does)."""
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(f"All children of this Sequential layer '{self.prefix}' are HybridBlocks. "
                          f"Consider using HybridSequential for the best performance.", stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(HybridBlock):
    """Stacks HybridBlocks sequentially; hybridizes into one graph."""

    def __init__(self, prefix: Optional[str] = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)

    def add(self, *blocks: HybridBlock) -> None:
        """Adds blocks on top of the stack."""
        for block in blocks:
            self.register_child(block)

    def hybrid_forward(self, F: Any, x: Any, *args: Any) -> Any:
        return _run_sequence(self._children.values(), x, args)

    def __repr__(self) -> str:
        return _children_repr(self)

    def __getitem__(self, key: Union[int, slice]) -> Any:
        layers = list(self._children.values())[key]
        if isinstance(layers, list):
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*layers)
            return net
        return layers

    def __len__(self) -> int:
        return len(self._children)


class Dense(HybridBlock):
    """Fully connected layer: ``activation(dot(x, weight.T) + bias)``.

    ``weight`` has shape ``(units, in_units)`` (``in_units=0``: inferred on the first forward),
    ``bias`` ``(units,)``. With ``flatten=True`` all axes but the first are collapsed; with
    ``flatten=False`` the layer applies to the last axis.
    """

    def __init__(self, units: int, activation: Optional[str] = None, use_bias: bool = True,
                 flatten: bool = True, dtype: Any = "float32", weight_initializer: Any = None,
                 bias_initializer: Any = "zeros", in_units: int = 0, **kwargs: Any):
        # units=0 builds (MXNet code, its own tests included, makes Dense(0) placeholders) and
        # fails at the first call; a negative or fractional count never makes sense
        check_ints("Dense", "units", units, 0)
        check_ints("Dense", "in_units", in_units, 0)
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get("weight", shape=(units, in_units), init=weight_initializer,
                                          dtype=dtype, allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(units,), init=bias_initializer,
                                            dtype=dtype, allow_deferred_init=True)
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + "_")
            else:
                self.act = None

    def hybrid_forward(self, F: Any, x: Any, weight: Any, bias: Any = None) -> Any:
        if not self._units:
            raise MXNetError(f"Dense '{self.name}' was built with units=0: a layer needs at least one "
                             f"output unit; build it with units >= 1")
        if F is nd:
            _check_dense_input(self, x, weight)
        act = F.FullyConnected(x, weight, bias, no_bias=bias is None, num_hidden=self._units,
                               flatten=self._flatten, name="fwd")
        if self.act is not None:
            act = self.act(act)
        return act

    def __repr__(self) -> str:
        shape = self.weight.shape
        layout = f"{shape[1] if shape[1] else None} -> {shape[0]}"
        return f"{self.__class__.__name__}({layout}, {self.act if self.act else 'linear'})"


def _check_dense_input(layer: Dense, x: Any, weight: Any) -> None:
    shape = x.shape
    if layer._flatten:
        in_units = math.prod(shape[1:]) if len(shape) > 1 else 1
        what = f"the product of the non-batch dimensions of the input {shape}"
    else:
        in_units = shape[-1] if shape else 1
        what = f"the last dimension of the input {shape}"
    expected = weight.shape[1]
    if in_units != expected:
        raise MXNetError(
            f"{layer.__class__.__name__} '{layer.name}': {what} is {in_units}, but the layer's weight "
            f"has shape {tuple(weight.shape)}, i.e. in_units={expected}. Pass inputs with "
            f"{expected} features, or create the layer with in_units={in_units} (or leave in_units "
            f"unset so that it is inferred from the first batch).")


class Dropout(HybridBlock):
    """Randomly zeroes a fraction ``rate`` of the inputs while training (``autograd.record()``
    with training mode) and scales the rest by ``1/(1-rate)``; identity in predict mode.
    ``axes`` lists axes along which the mask is shared."""

    def __init__(self, rate: float, axes: tuple = (), **kwargs: Any):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd", cudnn_off=False)
        return F.identity(x)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p = {self._rate}, axes={self._axes})"


class _BatchNorm(HybridBlock):
    """Common implementation of BatchNorm and BatchNormReLU (MXNet's ``_BatchNorm``)."""

    def __init__(self, axis: int = 1, momentum: float = 0.9, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = True, use_global_stats: bool = False, fuse_relu: bool = False,
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones",
                 running_mean_initializer: Any = "zeros", running_variance_initializer: Any = "ones",
                 in_channels: int = 0, **kwargs: Any):
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum,
                        "fix_gamma": not scale, "use_global_stats": use_global_stats}
        self.fuse_relu = fuse_relu
        if in_channels != 0:
            self.in_channels = in_channels
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null",
                                     shape=(in_channels,), init=gamma_initializer,
                                     allow_deferred_init=True, differentiable=scale)
        self.beta = self.params.get("beta", grad_req="write" if center else "null",
                                    shape=(in_channels,), init=beta_initializer,
                                    allow_deferred_init=True, differentiable=center)
        self.running_mean = self.params.get("running_mean", grad_req="null", shape=(in_channels,),
                                            init=running_mean_initializer, allow_deferred_init=True,
                                            differentiable=False)
        self.running_var = self.params.get("running_var", grad_req="null", shape=(in_channels,),
                                           init=running_variance_initializer, allow_deferred_init=True,
                                           differentiable=False)

    def cast(self, dtype: Any) -> None:
        """BatchNorm keeps float32 parameters when the network is cast to float16."""
        if dtype_name(dtype) == "float16":
            dtype = "float32"
        super().cast(dtype)

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any, running_mean: Any,
                       running_var: Any) -> Any:
        if self.fuse_relu:
            fused = getattr(F.contrib, "BatchNormWithReLU", None)
            if fused is not None:
                return fused(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)
            # operator not registered: same numbers from BatchNorm followed by relu
            return F.relu(F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd",
                                      **self._kwargs))
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        in_channels = self.gamma.shape[0]
        content = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{self.__class__.__name__}({content}, in_channels={in_channels if in_channels else None})"


class BatchNorm(_BatchNorm):
    """Batch normalization (Ioffe and Szegedy, 2014) over axis ``axis``.

    Training mode (``autograd.record()``) normalizes with the batch statistics and updates
    ``running_mean``/``running_var`` (``momentum``); predict mode uses the running statistics.
    ``scale=False`` fixes gamma to 1 (``fix_gamma``), ``center=False`` freezes beta.
    """

    def __init__(self, axis: int = 1, momentum: float = 0.9, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = True, use_global_stats: bool = False, fuse_relu: bool = False,
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones",
                 running_mean_initializer: Any = "zeros", running_variance_initializer: Any = "ones",
                 in_channels: int = 0, **kwargs: Any):
        if fuse_relu:
            raise ValueError("BatchNorm: fuse_relu=True is not supported here; use nn.BatchNormReLU "
                             "for BatchNorm fused with ReLU")
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, fuse_relu=False,
                         beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)


class BatchNormReLU(_BatchNorm):
    """Batch normalization followed by ReLU, as one operator (``_contrib_BatchNormWithReLU``)."""

    def __init__(self, axis: int = 1, momentum: float = 0.9, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = True, use_global_stats: bool = False, fuse_relu: bool = True,
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones",
                 running_mean_initializer: Any = "zeros", running_variance_initializer: Any = "ones",
                 in_channels: int = 0, **kwargs: Any):
        if not fuse_relu:
            raise ValueError("BatchNormReLU: fuse_relu=False is not supported; use nn.BatchNorm")
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, fuse_relu=True,
                         beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)


class Embedding(HybridBlock):
    """Maps integer indices (given as any dtype) to rows of ``weight`` of shape
    ``(input_dim, output_dim)``. ``sparse_grad=True``: the weight's gradient is a
    RowSparseNDArray holding only the looked-up rows (MXNet), for lazy optimizer updates."""

    def __init__(self, input_dim: int, output_dim: int, dtype: Any = "float32",
                 weight_initializer: Any = None, sparse_grad: bool = False, **kwargs: Any):
        check_ints("Embedding", "input_dim", input_dim, 1)
        check_ints("Embedding", "output_dim", output_dim, 1)
        super().__init__(**kwargs)
        grad_stype = "row_sparse" if sparse_grad else "default"
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": sparse_grad}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer,
                                      dtype=dtype, allow_deferred_init=True, grad_stype=grad_stype)

    def hybrid_forward(self, F: Any, x: Any, weight: Any) -> Any:
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return f"{self.__class__.__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class Flatten(HybridBlock):
    """Flattens the input to ``(batch, -1)``."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.flatten(x)

    def __repr__(self) -> str:
        return self.__class__.__name__


def _norm_repr(block: HybridBlock, in_channels: Any = "__none__") -> str:
    content = ", ".join(f"{k}={v!r}" for k, v in block._kwargs.items())
    if in_channels == "__none__":
        return f"{block.__class__.__name__}({content})"
    return f"{block.__class__.__name__}({content}, in_channels={in_channels})"


class InstanceNorm(HybridBlock):
    """Instance normalization: per sample and channel (``axis``), over the remaining axes.
    Note MXNet's default ``scale=False`` (gamma frozen at its initial value)."""

    def __init__(self, axis: int = 1, epsilon: float = 1e-5, center: bool = True, scale: bool = False,
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones",
                 in_channels: int = 0, **kwargs: Any):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self.gamma, self.beta = _scale_shift_params(self, (in_channels,), center, scale,
                                                    gamma_initializer, beta_initializer)

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any) -> Any:
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        x = x.swapaxes(1, self._axis)
        return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon).swapaxes(1, self._axis)

    def __repr__(self) -> str:
        return _norm_repr(self, self.gamma.shape[0])


class LayerNorm(HybridBlock):
    """Layer normalization over ``axis`` (default: the last axis)."""

    def __init__(self, axis: int = -1, epsilon: float = 1e-5, center: bool = True, scale: bool = True,
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones", in_channels: int = 0,
                 prefix: Optional[str] = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        self.gamma, self.beta = _scale_shift_params(self, (in_channels,), center, scale,
                                                    gamma_initializer, beta_initializer)

    def hybrid_forward(self, F: Any, data: Any, gamma: Any, beta: Any) -> Any:
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)

    def __repr__(self) -> str:
        return _norm_repr(self, self.gamma.shape[0])


class GroupNorm(HybridBlock):
    """Group normalization: channels (axis 1) split into ``num_groups`` groups, each normalized
    over its channels and the spatial axes. As in MXNet 1.x, gamma and beta have shape
    ``(num_groups,)`` (one scale/offset per group)."""

    def __init__(self, num_groups: int = 1, epsilon: float = 1e-5, center: bool = True, scale: bool = True,
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones",
                 prefix: Optional[str] = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center, "scale": scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        self.gamma, self.beta = _scale_shift_params(self, (num_groups,), center, scale,
                                                    gamma_initializer, beta_initializer)

    def hybrid_forward(self, F: Any, data: Any, gamma: Any, beta: Any) -> Any:
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups, eps=self._epsilon)

    def __repr__(self) -> str:
        return _norm_repr(self)


class Lambda(Block):
    """Wraps a function, or the name of an ``nd`` operator, as a Block."""

    def __init__(self, function: Union[str, Callable], prefix: Optional[str] = None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise ValueError(f"Lambda: function name {function!r} is not found in ndarray "
                                 f"(mx.nd.{function} does not exist)")
            self._func_impl = getattr(nd, function)
        elif callable(function):
            self._func_impl = function
        else:
            raise ValueError(f"Unrecognized function in lambda: {function} of type {type(function)}")

    def forward(self, *args: Any) -> Any:
        return self._func_impl(*args)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({getattr(self._func_impl, '__name__', repr(self._func_impl))})"


class HybridLambda(HybridBlock):
    """Wraps ``function(F, x, *args)``, or the name of an operator present in both ``nd`` and
    ``sym``, as a HybridBlock."""

    def __init__(self, function: Union[str, Callable], prefix: Optional[str] = None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not (hasattr(nd, function) and hasattr(sym, function)):
                raise ValueError(f"HybridLambda: function name {function!r} is not found in "
                                 f"symbol/ndarray (mx.nd.{function} and mx.sym.{function} must both "
                                 f"exist)")
            func_dict = {sym: getattr(sym, function), nd: getattr(nd, function)}
            self._func = lambda F, *args: func_dict[F](*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = getattr(function, "__name__", repr(function))
        else:
            raise ValueError(f"Unrecognized function in lambda: {function} of type {type(function)}")

    def hybrid_forward(self, F: Any, x: Any, *args: Any) -> Any:
        return self._func(F, x, *args)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._func_name})"
