"""``gluon.model_zoo.vision``: MXNet 1.9.1's predefined image classification models.

Every constructor takes ``classes`` (default 1000), ``pretrained`` (load MXNet's ImageNet
weights from ``root``), ``ctx`` and ``root`` (default ``$MXNET_HOME/models``, i.e.
``~/.mxnet/models``). Parameter names, shapes and structural names equal MXNet's, so MXNet's
pretrained ``.params`` files load and exports match.
"""
from __future__ import annotations

from typing import Any, Callable

from ...block import HybridBlock
from .alexnet import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .inception import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
from .mobilenet import *  # noqa: F401,F403
from .alexnet import alexnet
from .densenet import densenet121, densenet161, densenet169, densenet201
from .inception import inception_v3
from .mobilenet import (mobilenet0_5, mobilenet0_25, mobilenet0_75, mobilenet1_0, mobilenet_v2_0_5,
                        mobilenet_v2_0_25, mobilenet_v2_0_75, mobilenet_v2_1_0)
from .resnet import (resnet18_v1, resnet18_v2, resnet34_v1, resnet34_v2, resnet50_v1, resnet50_v2,
                     resnet101_v1, resnet101_v2, resnet152_v1, resnet152_v2)
from .squeezenet import squeezenet1_0, squeezenet1_1
from .vgg import vgg11, vgg11_bn, vgg13, vgg13_bn, vgg16, vgg16_bn, vgg19, vgg19_bn

_models: "dict[str, Callable[..., HybridBlock]]" = {
    "resnet18_v1": resnet18_v1, "resnet34_v1": resnet34_v1, "resnet50_v1": resnet50_v1,
    "resnet101_v1": resnet101_v1, "resnet152_v1": resnet152_v1,
    "resnet18_v2": resnet18_v2, "resnet34_v2": resnet34_v2, "resnet50_v2": resnet50_v2,
    "resnet101_v2": resnet101_v2, "resnet152_v2": resnet152_v2,
    "vgg11": vgg11, "vgg13": vgg13, "vgg16": vgg16, "vgg19": vgg19,
    "vgg11_bn": vgg11_bn, "vgg13_bn": vgg13_bn, "vgg16_bn": vgg16_bn, "vgg19_bn": vgg19_bn,
    "alexnet": alexnet,
    "densenet121": densenet121, "densenet161": densenet161, "densenet169": densenet169,
    "densenet201": densenet201,
    "squeezenet1.0": squeezenet1_0, "squeezenet1.1": squeezenet1_1,
    "inceptionv3": inception_v3,
    "mobilenet1.0": mobilenet1_0, "mobilenet0.75": mobilenet0_75, "mobilenet0.5": mobilenet0_5,
    "mobilenet0.25": mobilenet0_25,
    "mobilenetv2_1.0": mobilenet_v2_1_0, "mobilenetv2_0.75": mobilenet_v2_0_75,
    "mobilenetv2_0.5": mobilenet_v2_0_5, "mobilenetv2_0.25": mobilenet_v2_0_25,
}


def get_model(name: str, **kwargs: Any) -> HybridBlock:
    """The model called ``name`` (case-insensitive; e.g. 'resnet18_v1', 'mobilenet0.25',
    'squeezenet1.1', 'inceptionv3'), built with ``kwargs`` (``classes``, ``pretrained``,
    ``ctx``, ``root``, model options)."""
    key = name.lower()
    if key not in _models:
        raise ValueError("Model %s is not supported. Available options are\n\t%s"
                         % (name, "\n\t".join(sorted(_models))))
    return _models[key](**kwargs)
