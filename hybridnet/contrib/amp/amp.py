"""MXNet's AMP entry points. hybridnet does not rewrite operators to float16 (yet); every function
raises :class:`MXNetError` saying so and what to do instead. ``_amp_initialized`` stays False, the
flag libraries such as GluonNLP test before taking their mixed-precision path."""
from __future__ import annotations

from typing import Any, NoReturn

from ...base import MXNetError

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "convert_model", "convert_symbol",
           "convert_hybrid_block", "convert_bucketing_module", "list_lp16_ops", "list_fp32_ops",
           "list_lp16_fp32_ops", "list_conditional_fp32_ops", "list_widest_type_cast",
           "list_loss_output_functions", "list_lp16_use_fp32_params"]

_amp_initialized = False
_amp_loss_scale_initialized = False


def _not_supported(name: str) -> NoReturn:
    raise MXNetError(
        f"mx.contrib.amp.{name} is not supported by hybridnet: automatic mixed precision (operator "
        f"lists cast to float16/bfloat16, dynamic loss scaling) is not implemented. Train in "
        f"float32, or cast a whole model for inference with block.cast('float16').")


def init(target_dtype: Any = "float16", target_precision_ops: Any = None,
         conditional_fp32_ops: Any = None, fp32_ops: Any = None) -> NoReturn:
    """Would switch operators to ``target_dtype``; not supported."""
    _not_supported("init")


def init_trainer(optimizer_or_trainer: Any) -> NoReturn:
    """Would attach a dynamic loss scaler to a Trainer; not supported."""
    _not_supported("init_trainer")


def scale_loss(loss: Any, optimizer_or_trainer: Any) -> NoReturn:
    """Would scale the loss by the trainer's loss scale; not supported."""
    _not_supported("scale_loss")


def unscale(optimizer_or_trainer: Any) -> NoReturn:
    """Would divide the gradients by the loss scale; not supported."""
    _not_supported("unscale")


def convert_symbol(sym: Any, *args: Any, **kwargs: Any) -> NoReturn:
    """Would insert casts into a Symbol graph; not supported."""
    _not_supported("convert_symbol")


def convert_model(sym: Any, arg_params: Any, aux_params: Any, *args: Any,
                  **kwargs: Any) -> NoReturn:
    """Would convert a symbol and its parameters to mixed precision; not supported."""
    _not_supported("convert_model")


def convert_hybrid_block(block: Any, *args: Any, **kwargs: Any) -> NoReturn:
    """Would convert a HybridBlock to mixed precision; not supported."""
    _not_supported("convert_hybrid_block")


def convert_bucketing_module(bucketing_mod: Any, *args: Any, **kwargs: Any) -> NoReturn:
    """Would convert a BucketingModule to mixed precision; not supported."""
    _not_supported("convert_bucketing_module")


def list_lp16_ops(target_dtype: Any) -> NoReturn:
    """Would list the operators AMP runs in low precision; not supported."""
    _not_supported("list_lp16_ops")


def list_fp32_ops(target_dtype: Any) -> NoReturn:
    """Would list the operators AMP keeps in float32; not supported."""
    _not_supported("list_fp32_ops")


def list_lp16_fp32_ops(target_dtype: Any) -> NoReturn:
    """Would list the operators AMP runs in either precision; not supported."""
    _not_supported("list_lp16_fp32_ops")


def list_conditional_fp32_ops(target_dtype: Any) -> NoReturn:
    """Would list the operators AMP casts to float32 for some attributes; not supported."""
    _not_supported("list_conditional_fp32_ops")


def list_widest_type_cast(target_dtype: Any) -> NoReturn:
    """Would list the operators AMP casts to their widest input type; not supported."""
    _not_supported("list_widest_type_cast")


def list_loss_output_functions(target_dtype: Any) -> NoReturn:
    """Would list the loss outputs AMP wraps with loss scaling; not supported."""
    _not_supported("list_loss_output_functions")


def list_lp16_use_fp32_params(target_dtype: Any) -> NoReturn:
    """Would list the operators that keep float32 parameters under AMP; not supported."""
    _not_supported("list_lp16_use_fp32_params")
