"""``mx.image`` / ``mx.img``: image decoding, resizing, cropping, augmenters and ImageIter
(MXNet 1.9.1's ``mxnet.image``; Pillow decodes, no OpenCV needed), and the detection
augmenters and ``ImageDetIter`` (:mod:`.detection`)."""
from . import image  # noqa: F401
from .augmenters import *  # noqa: F401,F403
from .augmenters import __all__ as _aug_all
from .image import *  # noqa: F401,F403
from .image import __all__ as _img_all
from .image_iter import ImageIter  # noqa: F401
from . import detection  # noqa: F401
from .detection import *  # noqa: F401,F403
from .detection import __all__ as _det_all

__all__ = _img_all + _aug_all + ["ImageIter"] + _det_all
