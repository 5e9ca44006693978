"""``mx.gluon``: Blocks, Parameters, hybridize, layers, losses, Trainer, data, model zoo."""
from __future__ import annotations

from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict, tensor_types  # noqa: F401
from .block import Block, HybridBlock, SymbolBlock  # noqa: F401
from . import nn  # noqa: F401

from . import utils, data, loss, rnn, model_zoo, contrib  # noqa: F401,E402
from . import trainer  # noqa: F401,E402
from .trainer import Trainer  # noqa: F401,E402
