"""Where pretrained model-zoo weights live (MXNet 1.9.1 ``gluon.model_zoo.model_store``).

MXNet names each pretrained file ``<root>/<name>-<first 8 hex digits of its SHA-1>.params``
(e.g. ``resnet18_v1-e54b379f.params``) and downloads it on first use. hybridnet has no network
access: ``get_model_file`` returns the file when it is already there (or any
``<name>-*.params`` file in ``root``) and otherwise raises an error that names the exact file
to put where and the URL MXNet would fetch it from.
"""
from __future__ import annotations

import glob
import os
import warnings
from typing import Any

from ...base import MXNetError

__all__ = ["get_model_file", "purge", "short_hash", "PretrainedFileNotFoundError"]

# SHA-1 of MXNet's published pretrained files (the facts MXNet 1.9.1's model store checks).
_model_sha1 = {name: checksum for checksum, name in [
    ("44335d1f0046b328243b32a26a4fbd62d9057b45", "alexnet"),
    ("f27dbf2dbd5ce9a80b102d89c7483342cd33cb31", "densenet121"),
    ("b6c8a95717e3e761bd88d145f4d0a214aaa515dc", "densenet161"),
    ("2603f878403c6aa5a71a124c4a3307143d6820e9", "densenet169"),
    ("1cdbc116bc3a1b65832b18cf53e1cb8e7da017eb", "densenet201"),
    ("ed47ec45a937b656fcc94dabde85495bbef5ba1f", "inceptionv3"),
    ("9f83e440996887baf91a6aff1cccc1c903a64274", "mobilenet0.25"),
    ("8e9d539cc66aa5efa71c4b6af983b936ab8701c3", "mobilenet0.5"),
    ("529b2c7f4934e6cb851155b22c96c9ab0a7c4dc2", "mobilenet0.75"),
    ("6b8c5106c730e8750bcd82ceb75220a3351157cd", "mobilenet1.0"),
    ("36da4ff1867abccd32b29592d79fc753bca5a215", "mobilenetv2_1.0"),
    ("e2be7b72a79fe4a750d1dd415afedf01c3ea818d", "mobilenetv2_0.75"),
    ("aabd26cd335379fcb72ae6c8fac45a70eab11785", "mobilenetv2_0.5"),
    ("ae8f9392789b04822cbb1d98c27283fc5f8aa0a7", "mobilenetv2_0.25"),
    ("e54b379f50fa4b10bbd2506237e3bd74e6164778", "resnet18_v1"),
    ("c1dc0967a3d25ee9127e03bc1046a5d44d92e2ba", "resnet34_v1"),
    ("c940b1a062b32e3a5762f397c9d1e178b5abd007", "resnet50_v1"),
    ("d992389084bc5475c370e9b52c3561706e755799", "resnet101_v1"),
    ("48ce7775d375987d019ec9aa96bc43b98165dfcb", "resnet152_v1"),
    ("84f666402577b5b79cd59eba5d3ba0bc1edf2152", "resnet18_v2"),
    ("5da34c2772893e9d680d5fa0bd6d432eba8689c9", "resnet34_v2"),
    ("81a4e66af7859a5aa904e2b4051aa0d3bc472b2f", "resnet50_v2"),
    ("7eb2b3cde097883c11941b927048a705ed334294", "resnet101_v2"),
    ("64c75ac8c292f6ac54f873f9ef62e0531105878b", "resnet152_v2"),
    ("264ba4970a0cc87a4f15c96e25246a1307caf523", "squeezenet1.0"),
    ("33ba0f93753c83d86e1eb397f38a667eaf2e9376", "squeezenet1.1"),
    ("dd221b160977f36a53f464cb54648d227c707a05", "vgg11"),
    ("ee79a8098a91fbe05b7a973fed2017a6117723a8", "vgg11_bn"),
    ("6bc5de58a05a5e2e7f493e2d75a580d83efde38c", "vgg13"),
    ("7d97a06c3c7a1aecc88b6e7385c2b373a249e95e", "vgg13_bn"),
    ("649467530119c0f78c4859999e264e7bf14471a9", "vgg16"),
    ("6b9dbe6194e5bfed30fd7a7c9a71f7e5a276cb14", "vgg16_bn"),
    ("f713436691eee9a20d70a145ce0d53ed24bf7399", "vgg19"),
    ("9730961c9cea43fd7eeefb00d792e386c45847d6", "vgg19_bn")]}

apache_repo_url = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"
_url_format = "{repo_url}gluon/models/{file_name}.zip"

# Number of classes every published model-zoo checkpoint was trained with (ImageNet).
PRETRAINED_CLASSES = 1000


def _data_dir() -> str:
    """``$MXNET_HOME`` or ``~/.mxnet`` (MXNet's ``base.data_dir()``)."""
    return os.environ.get("MXNET_HOME", os.path.join("~", ".mxnet"))


DEFAULT_ROOT = os.path.join(_data_dir(), "models")


class PretrainedFileNotFoundError(MXNetError, FileNotFoundError):
    """The pretrained parameter file is not on disk (and cannot be downloaded here)."""


def short_hash(name: str) -> str:
    """The first 8 hex digits of the SHA-1 of model ``name``'s pretrained file."""
    if name not in _model_sha1:
        raise ValueError(f"Pretrained model for {name} is not available. Models with pretrained "
                         f"weights: {sorted(_model_sha1)}")
    return _model_sha1[name][:8]


def _sha1_matches(path: str, sha1_hash: str) -> bool:
    from ..utils import check_sha1
    return check_sha1(path, sha1_hash)


def get_model_file(name: str, root: str = DEFAULT_ROOT) -> str:
    """Path of the pretrained parameters of model ``name`` (``<root>/<name>-<hash>.params``).

    Mirrors MXNet's lookup without the download: the exact MXNet file name is preferred, then
    any ``<name>-*.params`` in ``root``. A file whose SHA-1 differs from MXNet's is used with a
    warning. When none is there, raises ``PretrainedFileNotFoundError`` naming the file to put
    where and where MXNet publishes it."""
    file_name = f"{name}-{short_hash(name)}"
    root = os.path.expanduser(root)
    file_path = os.path.join(root, file_name + ".params")
    sha1_hash = _model_sha1[name]
    if os.path.exists(file_path):
        if not _sha1_matches(file_path, sha1_hash):
            warnings.warn(f"Model file {file_path} does not match the SHA-1 of MXNet's published "
                          f"{name} weights ({sha1_hash}); using it anyway (hybridnet cannot download "
                          f"a fresh copy).", stacklevel=2)
        return file_path
    others = sorted(p for p in glob.glob(os.path.join(glob.escape(root), glob.escape(name) + "-*.params"))
                    if os.path.isfile(p))
    if others:
        return others[0]
    repo_url = os.environ.get("MXNET_GLUON_REPO", apache_repo_url)
    if not repo_url.endswith("/"):
        repo_url += "/"
    url = _url_format.format(repo_url=repo_url, file_name=file_name)
    raise PretrainedFileNotFoundError(
        f"Pretrained weights for model {name!r} were not found: expected the file "
        f"{file_name}.params in {root} (full path {file_path}). hybridnet does not download; "
        f"fetch {url} elsewhere, unzip it, and put {file_name}.params into {root} (or pass "
        f"root=<folder holding it>). Any file named {name}-*.params in that folder is accepted.")


def purge(root: str = DEFAULT_ROOT) -> None:
    """Delete every ``.params`` file in ``root`` (MXNet's ``model_store.purge``)."""
    root = os.path.expanduser(root)
    if not os.path.isdir(root):
        return
    for f in os.listdir(root):
        if f.endswith(".params"):
            os.remove(os.path.join(root, f))


def load_pretrained(net: Any, name: str, ctx: Any, root: str) -> None:
    """Load MXNet's pretrained ``name`` weights into ``net`` (``net.load_parameters``)."""
    net.load_parameters(get_model_file(name, root=root), ctx=ctx)


def check_pretrained_classes(model: str, kwargs: dict) -> None:
    """Raise a clear error when ``pretrained=True`` is combined with ``classes != 1000``."""
    classes = kwargs.get("classes", PRETRAINED_CLASSES)
    if classes != PRETRAINED_CLASSES:
        raise ValueError(
            f"{model}: pretrained=True loads MXNet's ImageNet weights, whose output layer has "
            f"{PRETRAINED_CLASSES} classes, but classes={classes!r} was given. Build it with "
            f"pretrained=True and the default classes, then replace the output layer (e.g. "
            f"net.output = nn.Dense({classes}); net.output.initialize()), or use pretrained=False.")


def pretrained_setup(model: str, pretrained: bool, kwargs: dict) -> None:
    """Checks done before a model is built with ``pretrained=True`` (classes, known model)."""
    if pretrained:
        short_hash(model)
        check_pretrained_classes(model, kwargs)
