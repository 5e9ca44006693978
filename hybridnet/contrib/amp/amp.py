"""Automatic mixed precision: MXNet 1.9.1's ``mx.contrib.amp`` API.

* ``init(target_dtype)`` makes the operators on MXNet's lists run in float16 or bfloat16 (inputs
  cast per list; see ``dispatch.py`` for the mechanism and why it is not ``torch.autocast``), in
  eager and hybridized code alike. Call it before building the model, as in MXNet; it cannot be
  undone in the process.
* ``init_trainer(trainer)`` gives a Trainer a dynamic ``LossScaler``; ``scale_loss(loss, trainer)``
  multiplies the loss by the scale and makes ``trainer.step`` divide it back out, skipping
  steps whose gradients overflowed; ``unscale(trainer)`` unscales gradients by hand (clipping).
* ``convert_symbol`` / ``convert_model`` / ``convert_hybrid_block`` rewrite a float32 graph with
  ``amp_cast``/``amp_multicast`` nodes for inference (``graph_pass.py``).

``_amp_initialized`` is the flag libraries such as GluonNLP read.
"""
from __future__ import annotations

import contextlib
import logging
from typing import Any, Iterator, Optional

import numpy as np

from ...base import BFLOAT16_NP, MXNetError, dtype_from_flag
from ...ops import frontend
from . import dispatch as _dispatch
from . import lists
from .graph_pass import reduce_precision
from .loss_scaler import LossScaler

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "convert_model", "convert_symbol",
           "convert_hybrid_block", "convert_bucketing_module", "list_lp16_ops", "list_fp32_ops",
           "list_lp16_fp32_ops", "list_conditional_fp32_ops", "list_widest_type_cast",
           "list_loss_output_functions", "list_lp16_use_fp32_params", "bfloat16"]

bfloat16 = BFLOAT16_NP  # MXNet's spelling of the bfloat16 dtype

_amp_initialized = False
_amp_loss_scale_initialized = False
_loss_scaler: Optional[LossScaler] = None


def _target_name(target_dtype: Any) -> str:
    """'float16' or 'bfloat16' for any of MXNet's spellings; a clear error otherwise."""
    if isinstance(target_dtype, str) and target_dtype in ("float16", "bfloat16"):
        return target_dtype
    if target_dtype is np.float16 or (isinstance(target_dtype, np.dtype) and target_dtype == np.float16):
        return "float16"
    if isinstance(target_dtype, np.dtype) and target_dtype == BFLOAT16_NP:
        return "bfloat16"
    raise ValueError(f"AMP supports target_dtype 'float16' or 'bfloat16' (or np.float16, "
                     f"amp.bfloat16), got {target_dtype!r}")


def _list_module(target_dtype: Any) -> Any:
    return lists.symbol_fp16 if _target_name(target_dtype) == "float16" else lists.symbol_bf16


def list_lp16_ops(target_dtype: Any) -> list:
    """Operators AMP runs in ``target_dtype``."""
    m = _list_module(target_dtype)
    return m.FP16_FUNCS if m is lists.symbol_fp16 else m.BF16_FUNCS


def list_fp32_ops(target_dtype: Any) -> list:
    """Operators AMP runs in float32."""
    return _list_module(target_dtype).FP32_FUNCS


def list_lp16_fp32_ops(target_dtype: Any) -> list:
    """Operators that run in whichever precision their inputs have."""
    m = _list_module(target_dtype)
    return m.FP16_FP32_FUNCS if m is lists.symbol_fp16 else m.BF16_FP32_FUNCS


def list_conditional_fp32_ops(target_dtype: Any) -> list:
    """(operator, attribute, values): run in float32 when the attribute has one of the values."""
    return _list_module(target_dtype).CONDITIONAL_FP32_FUNCS


def list_widest_type_cast(target_dtype: Any) -> list:
    """Operators whose inputs are cast to the widest of their types."""
    return _list_module(target_dtype).WIDEST_TYPE_CASTS


def list_loss_output_functions(target_dtype: Any) -> list:
    """Loss-output operators whose ``grad_scale`` includes the loss scale."""
    return _list_module(target_dtype).LOSS_OUTPUT_FUNCTIONS


def list_lp16_use_fp32_params(target_dtype: Any) -> Optional[dict]:
    """Low-precision operators keeping some float32 inputs (None for float16, as in MXNet)."""
    m = _list_module(target_dtype)
    return None if m is lists.symbol_fp16 else m.BF16_USE_FP32_PARAMS


def _functions(name: str) -> list:
    """The generated nd and sym functions registered under operator name ``name``."""
    from ... import ndarray as nd
    from ... import symbol as sym
    return [f for f in (nd._FUNCS.get(name), sym._FUNCS.get(name)) if f is not None]


def _rebind(names: Any, make: Any) -> None:
    for name in names:
        for fn in _functions(name):
            frontend.set_dispatch(fn, make(frontend.dispatch_of(fn), fn))


def init(target_dtype: Any = "float16", target_precision_ops: Optional[list] = None,
         conditional_fp32_ops: Optional[list] = None, fp32_ops: Optional[list] = None) -> None:
    """Turn AMP on for this process (MXNet's ``amp.init``); later calls do nothing.

    ``target_precision_ops`` / ``fp32_ops`` / ``conditional_fp32_ops`` replace MXNet's default
    lists. Operators hybridnet does not register are skipped. Blocks hybridized before
    ``init`` keep their float32 graphs until they are traced again.
    """
    global _amp_initialized, _loss_scaler
    if _amp_initialized:
        return
    target = _target_name(target_dtype)
    _amp_initialized = True
    logging.info("Using AMP")
    fp32_params = list_lp16_use_fp32_params(target) or {}
    _rebind(target_precision_ops if target_precision_ops is not None else list_lp16_ops(target),
            lambda inner, fn: _dispatch.cast_dispatch(inner, target, fp32_params.get(fn.__name__)))
    _rebind(fp32_ops if fp32_ops is not None else list_fp32_ops(target),
            lambda inner, fn: _dispatch.cast_dispatch(inner, "float32"))
    for name, key, values in (conditional_fp32_ops if conditional_fp32_ops is not None
                              else list_conditional_fp32_ops(target)):
        _rebind([name], lambda inner, fn, c=(key, tuple(values)):
                _dispatch.cast_dispatch(inner, "float32", condition=c))
    _rebind(list_widest_type_cast(target), lambda inner, fn: _dispatch.widest_dispatch(inner, target))
    _loss_scaler = LossScaler()
    from ... import ndarray as nd
    from ... import symbol as sym
    for name in list_loss_output_functions(target):
        if name in nd._FUNCS:
            fn = nd._FUNCS[name]
            frontend.set_dispatch(fn, _dispatch.loss_scale_dispatch(frontend.dispatch_of(fn), _loss_scaler))
        if name in sym._FUNCS:
            fn = sym._FUNCS[name]
            frontend.set_dispatch(fn, _dispatch.loss_warning_dispatch(frontend.dispatch_of(fn), name))


def _check_trainer(optimizer_or_trainer: Any) -> Any:
    from ...gluon.trainer import Trainer
    from ...optimizer import Optimizer
    if isinstance(optimizer_or_trainer, Trainer):
        return optimizer_or_trainer
    if isinstance(optimizer_or_trainer, Optimizer):
        raise TypeError("AMP is currently only compatible with Gluon Trainer (as in MXNet 1.9.1): "
                        "wrap the optimizer in gluon.Trainer(params, optimizer)")
    raise TypeError(f"optimizer_or_trainer should be a Gluon Trainer or an optimizer, instead is "
                    f"{type(optimizer_or_trainer)}")


def init_trainer(optimizer_or_trainer: Any) -> None:
    """Attach a dynamic loss scaler to a Trainer (the first Trainer shares the one ``init``
    made; later ones get their own, as in MXNet). Requires ``amp.init()`` first."""
    global _amp_loss_scale_initialized
    if not _amp_initialized:
        raise MXNetError("AMP not initialized, did you forget to call amp.init()?")
    trainer = _check_trainer(optimizer_or_trainer)
    if not _amp_loss_scale_initialized:
        _amp_loss_scale_initialized = True
        scaler = _loss_scaler
    else:
        scaler = LossScaler()
    trainer._amp_loss_scaler = scaler
    trainer._amp_original_scale = trainer._scale


@contextlib.contextmanager
def scale_loss(loss: Any, optimizer_or_trainer: Any) -> Iterator[Any]:
    """Yield ``loss`` (or each loss of a list) times the loss scale, and make the Trainer's next
    step divide the gradients by it: ``with amp.scale_loss(loss, trainer) as l: l.backward()``."""
    scaler = getattr(optimizer_or_trainer, "_amp_loss_scaler", None)
    if scaler is None:
        raise MXNetError("Loss scaler is not initialized, did you forget to call amp.init_trainer()?")
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale / scaler.loss_scale
    if isinstance(loss, (list, tuple)):
        yield [l * scaler.loss_scale for l in loss]
    else:
        yield loss * scaler.loss_scale


def unscale(optimizer_or_trainer: Any) -> None:
    """Divide the gradients by the loss scale now (e.g. before clipping them) and make the
    Trainer's next step use them as they are."""
    trainer = _check_trainer(optimizer_or_trainer)
    for p in trainer._params:
        if p.grad_req != "null" and p._data is not None:
            for g in p.list_grad():
                g[:] *= trainer._scale
    trainer._scale = 1.0


def _check_lists(target: str, target_dtype_ops: Optional[list], fp32_ops: Optional[list],
                 conditional_fp32_ops: Optional[list]) -> tuple:
    """The lists convert_symbol uses, checked as MXNet checks them (no operator in two lists,
    every operator on one of MXNet's lists)."""
    for name, value in (("target_dtype_ops", target_dtype_ops), ("fp32_ops", fp32_ops),
                        ("conditional_fp32_ops", conditional_fp32_ops)):
        if value is not None and not isinstance(value, list):
            raise AssertionError(f"{name} should be a list, got {type(value).__name__}")
    lp = list(target_dtype_ops) if target_dtype_ops is not None else list(list_lp16_ops(target))
    fp32 = list(fp32_ops) if fp32_ops is not None else list(list_fp32_ops(target))
    cond = list(conditional_fp32_ops) if conditional_fp32_ops is not None \
        else list(list_conditional_fp32_ops(target))
    for item in cond:
        if not (isinstance(item, (tuple, list)) and len(item) == 3 and isinstance(item[0], str)
                and isinstance(item[1], str) and isinstance(item[2], list)):
            raise AssertionError(f"conditional_fp32_ops should be a list of (str, str, list of str), "
                                 f"got {item!r}")
    cond_names = [c[0] for c in cond]
    for a, an, b, bn in ((lp, "target_dtype_ops", fp32, "fp32_ops"),
                         (lp, "target_dtype_ops", cond_names, "conditional_fp32_ops"),
                         (cond_names, "conditional_fp32_ops", fp32, "fp32_ops")):
        common = set(a) & set(b)
        if common:
            raise AssertionError(f"Ops cannot be in two or more lists. Common ops in {an} and {bn}: "
                                 f"{sorted(common)}")
    known = set(list_lp16_ops(target) + list_fp32_ops(target) + list_lp16_fp32_ops(target)
                + [c[0] for c in list_conditional_fp32_ops(target)])
    illegal = set(lp + fp32 + cond_names) - known
    if illegal:
        raise AssertionError(f"Can only choose ops from one of amp.list_lp16_ops, list_fp32_ops, "
                             f"list_lp16_fp32_ops or list_conditional_fp32_ops({target!r}); "
                             f"{sorted(illegal)} are in none of them")
    return lp, fp32, cond


def convert_symbol(sym: Any, target_dtype: str = "float16", target_dtype_ops: Optional[list] = None,
                   fp32_ops: Optional[list] = None, conditional_fp32_ops: Optional[list] = None,
                   excluded_sym_names: Optional[list] = None, data_names: Optional[list] = None,
                   cast_optional_params: bool = False) -> Any:
    """A float32 Symbol with ``amp_cast``/``amp_multicast`` nodes inserted per the lists
    (MXNet's ``ReducePrecision`` pass; see ``graph_pass.py``).

    ``data_names``: the model's data inputs (default: inputs without a ``__dtype__``
    attribute). ``cast_optional_params``: parameters read only by low-precision operators are
    marked ``__dtype__`` = target (convert_model casts them) instead of being cast at run time.
    """
    from ...symbol import Symbol
    if not isinstance(sym, Symbol):
        raise AssertionError("First argument to convert_symbol should be Symbol")
    if target_dtype not in ("float16", "bfloat16"):
        raise AssertionError("Only target_dtype float16 and bfloat16 are supported currently")
    lp, fp32, cond = _check_lists(target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops)
    if excluded_sym_names is not None and not isinstance(excluded_sym_names, list):
        raise AssertionError("excluded_sym_names should be a list of strs")
    attrs = sym.attr_dict()
    if data_names is None:
        data_names = [n for n in sym.list_inputs() if "__dtype__" not in attrs.get(n, {})]
    entries = reduce_precision(sym._graph(), target_dtype, lp, fp32, cond,
                               list_widest_type_cast(target_dtype), excluded_sym_names or [],
                               data_names, cast_optional_params)
    return Symbol(entries)


def _lp_params(sym: Any, params: dict) -> dict:
    """``params`` with those the converted ``sym`` marks ``__dtype__`` cast to that dtype."""
    from ... import ndarray as nd
    attrs = sym.attr_dict()
    out = dict(params)
    for name, value in params.items():
        flag = attrs.get(name, {}).get("__dtype__")
        if flag is not None and flag != "-1":
            out[name] = nd.amp_cast(value, dtype=dtype_from_flag(int(flag))) \
                if dtype_from_flag(int(flag)) == "bfloat16" else value.astype(dtype_from_flag(int(flag)))
    return out


def convert_model(sym: Any, arg_params: dict, aux_params: dict, target_dtype: str = "float16",
                  target_dtype_ops: Optional[list] = None, fp32_ops: Optional[list] = None,
                  conditional_fp32_ops: Optional[list] = None,
                  excluded_sym_names: Optional[list] = None,
                  cast_optional_params: bool = False) -> tuple:
    """``(converted symbol, arg_params, aux_params)`` for mixed-precision inference; parameters
    the symbol marks low precision (``cast_optional_params``) are cast."""
    from ...symbol import Symbol
    if not isinstance(sym, Symbol):
        raise AssertionError("First argument to convert_model should be Symbol")
    if not isinstance(arg_params, dict) or not isinstance(aux_params, dict):
        raise AssertionError("arg_params and aux_params of convert_model should be dicts of name "
                             "to NDArray")
    params = set(arg_params) | set(aux_params)
    data_names = [n for n in sym.list_inputs() if n not in params]
    converted = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                               excluded_sym_names, data_names, cast_optional_params)
    return converted, _lp_params(converted, arg_params), _lp_params(converted, aux_params)


def convert_hybrid_block(block: Any, target_dtype: str = "float16",
                         target_dtype_ops: Optional[list] = None, fp32_ops: Optional[list] = None,
                         conditional_fp32_ops: Optional[list] = None,
                         excluded_sym_names: Optional[list] = None, ctx: Any = None,
                         cast_optional_params: bool = False) -> Any:
    """A SymbolBlock running ``block``'s traced graph in mixed precision, with its parameters.

    ``block`` must be hybridized and called once (MXNet's rule). ``ctx``: where the parameters
    live (MXNet defaults to gpu(0); here the default is the block's own context).
    """
    from ...gluon import HybridBlock, SymbolBlock
    if not isinstance(block, HybridBlock):
        raise AssertionError("block input should be a HybridBlock")
    if not block._cached_graph:
        raise RuntimeError("Please first call block.hybridize() and then run forward with this "
                           "block at least once before calling convert_hybrid_block.")
    inputs, sym = block._cached_graph
    converted = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                               excluded_sym_names, [i.name for i in inputs], cast_optional_params)
    params = {p.name: p for p in block.collect_params().values()}
    if ctx is None:
        ctx = next(iter(params.values())).list_ctx()[0] if params else None
    values = _lp_params(converted, {n: p._reduce() for n, p in params.items()})
    ret = SymbolBlock(converted, inputs)
    for name, param in ret.collect_params().items():
        if name in values:
            if param.dtype != values[name].dtype:
                param.cast(values[name].dtype)
            param._load_init(values[name], ctx)
    return ret


def convert_bucketing_module(bucketing_mod: Any, *args: Any, **kwargs: Any) -> Any:
    """Not supported: hybridnet's BucketingModule cannot be rebuilt from converted symbols.
    Convert each bucket's symbol with ``convert_model`` and build the module from a
    ``sym_gen`` returning them."""
    raise MXNetError("amp.convert_bucketing_module is not supported by hybridnet: convert each "
                     "bucket's symbol with amp.convert_model(sym, arg_params, aux_params, ...) and "
                     "create the BucketingModule with a sym_gen that returns the converted symbols")
