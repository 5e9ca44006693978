"""MXNet 1.9.1's AMP operator lists, one module per low-precision type (data only)."""
from . import symbol_bf16, symbol_fp16

__all__ = ["symbol_fp16", "symbol_bf16"]
