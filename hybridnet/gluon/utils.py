"""``gluon.utils`` (MXNet 1.9.1): splitting batches over devices, gradient clipping, file
helpers (sha1 checks, ``download`` of local/``file://`` sources; there is no network access)."""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.parse
import urllib.request
import uuid
import warnings
import weakref
from typing import Any, List, Optional, Sequence

import numpy as np

from .. import ndarray as _nd
from ..base import MXNetError
from ..context import Context
from ..ndarray import NDArray
from ..ndarray import array as _nd_array

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download",
           "replace_file", "shape_is_known", "HookHandle"]


def split_data(data: NDArray, num_slice: int, batch_axis: int = 0, even_split: bool = True) -> List[NDArray]:
    """Split ``data`` into ``num_slice`` slices along ``batch_axis``.

    With ``even_split=False`` the first ``size % num_slice`` slices get one extra element; if
    the batch is smaller than ``num_slice`` only ``size`` slices of one element are returned.
    """
    if num_slice < 1:
        raise ValueError(f"split_data: num_slice must be >= 1, got {num_slice}")
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            f"data with shape {data.shape} cannot be evenly split into {num_slice} slices along "
            f"axis {batch_axis}. Use a batch size that's multiple of {num_slice} or set "
            f"even_split=False to allow uneven partitioning of data.")
    if not even_split and size < num_slice:
        num_slice = size
    n_each, extras = divmod(size, num_slice)
    sizes = [n_each + 1] * extras + [n_each] * (num_slice - extras)
    bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    if num_slice == 1:
        return [data]
    if batch_axis == 0:
        return [data[int(bounds[i]):int(bounds[i + 1])] for i in range(num_slice)]
    return [_nd.slice_axis(data, axis=batch_axis, begin=int(bounds[i]), end=int(bounds[i + 1]))
            for i in range(num_slice)]


def split_and_load(data: Any, ctx_list: Sequence[Context], batch_axis: int = 0,
                   even_split: bool = True) -> List[NDArray]:
    """Split ``data`` along ``batch_axis`` and copy slice ``i`` to ``ctx_list[i]``."""
    if not isinstance(data, NDArray):
        data = _nd_array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(ctx) for s, ctx in zip(slices, ctx_list)]


def _stored_values(a: NDArray) -> NDArray:
    """The array holding ``a``'s values: the array itself, or a sparse array's stored data (its
    norm is MXNet's norm of the sparse array; scaling it scales the sparse array)."""
    return a if a.stype == "default" else a.data


def _sum_of_squares(values: Sequence[NDArray], ctx: Context) -> NDArray:
    """Sum of the squared elements of all ``values`` (float32 array of shape (1,) on ``ctx``;
    float64 when any array is float64): one ``multi_sum_sq`` per context and precision."""
    parts = []
    groups: dict = {}
    for v in values:
        groups.setdefault((v.context, v.dtype == np.float64), []).append(v)
    for (_, wide), vs in groups.items():
        if wide:  # multi_sum_sq answers in float32 (MXNet's type); keep float64 precision here
            flat = [v.reshape((-1,)) for v in vs]
            parts.extend(_nd.dot(x, x).reshape((1,)).as_in_context(ctx) for x in flat)
        else:
            sq = _nd.multi_sum_sq(*vs, num_arrays=len(vs))
            parts.append(_nd.sum(sq).reshape((1,)).as_in_context(ctx))
    if any(p.dtype == np.float64 for p in parts):
        parts = [p.astype(np.float64) for p in parts]
    return parts[0] if len(parts) == 1 else _nd.add_n(*parts)


def clip_global_norm(arrays: Sequence[NDArray], max_norm: float, check_isfinite: bool = True) -> Any:
    """Rescale ``arrays`` in place so that their joint 2-norm is at most ``max_norm``
    (MXNet 1.9.1: scale = min(max_norm / (norm + 1e-8), 1)).

    Returns the norm before clipping: a Python float when ``check_isfinite`` (warning if it is
    NaN/inf), else a 1-element NDArray (no device synchronisation).
    """
    if len(arrays) == 0:
        raise ValueError("clip_global_norm: arrays is empty")
    ctx = arrays[0].context
    stored = [_stored_values(a) for a in arrays]
    total = _nd.sqrt(_sum_of_squares(stored, ctx))
    scale = _nd.minimum(max_norm / (total + 1e-8), 1.0)
    for v in stored:
        _nd.broadcast_mul(v, scale.astype(v.dtype).as_in_context(v.context), out=v)
    if check_isfinite:
        value = float(total.asscalar())
        if not np.isfinite(value):
            warnings.warn(UserWarning("nan or inf is detected. Clipping results will be undefined."),
                          stacklevel=2)
        return value
    return total.astype(arrays[0].dtype) if np.issubdtype(arrays[0].dtype, np.floating) else total


def check_sha1(filename: str, sha1_hash: str) -> bool:
    """Whether the SHA-1 of ``filename`` matches ``sha1_hash`` (compared on the shorter length,
    like MXNet, so a hash prefix works)."""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            sha1.update(chunk)
    digest = sha1.hexdigest()
    n = min(len(sha1_hash), len(digest))
    return digest[:n] == sha1_hash[:n]


def replace_file(src: str, dst: str) -> None:
    """Atomically move ``src`` onto ``dst`` (replacing it)."""
    os.replace(src, dst)


def _local_source(url: str) -> Optional[str]:
    """The local path behind ``url`` (a ``file://`` URL or a plain path), or None."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        return urllib.request.url2pathname(parsed.path) if not parsed.netloc or parsed.netloc == "localhost" \
            else None
    if parsed.scheme == "" or (len(parsed.scheme) == 1 and os.name == "nt"):
        return os.path.expanduser(url)
    return None


def download(url: str, path: Optional[str] = None, overwrite: bool = False,
             sha1_hash: Optional[str] = None, retries: int = 5, verify_ssl: bool = True) -> str:
    """Fetch ``url`` to ``path`` (a file name or a folder; default: the URL's base name in the
    current folder) and return the file name (MXNet's ``gluon.utils.download``).

    An existing file with a matching ``sha1_hash`` is reused. Only ``file://`` URLs and local
    paths can be fetched: hybridnet has no network access, so other URLs raise MXNetError
    unless the file is already there.
    """
    if path is None:
        fname = url.split("/")[-1]
        if not fname:
            raise MXNetError(f"download: cannot construct a file name from the URL {url!r}; "
                             f"pass path=...")
    else:
        path = os.path.expanduser(os.fspath(path))
        fname = os.path.join(path, url.split("/")[-1]) if os.path.isdir(path) else path
    if retries < 0:
        raise ValueError(f"download: number of retries should be at least 0, got {retries}")
    if not verify_ssl:
        warnings.warn("Unverified HTTPS request is being made (verify_ssl=False). Adding "
                      "certificate verification is strongly advised.")
    if overwrite or not os.path.exists(fname) or (sha1_hash and not check_sha1(fname, sha1_hash)):
        src = _local_source(url)
        if src is None:
            raise MXNetError(
                f"download: cannot fetch {url!r}: hybridnet has no network access (downloads are "
                f"unavailable). Copy the file to {os.path.abspath(fname)!r} yourself, or pass a "
                f"local path or file:// URL.")
        if not os.path.isfile(src):
            raise MXNetError(f"download: source file {src!r} (from {url!r}) does not exist")
        dirname = os.path.dirname(os.path.abspath(fname))
        os.makedirs(dirname, exist_ok=True)
        if os.path.abspath(src) != os.path.abspath(fname):
            fd, tmp = tempfile.mkstemp(prefix=os.path.basename(fname) + "." + uuid.uuid4().hex[:8],
                                       suffix=".tmp", dir=dirname)
            try:
                with os.fdopen(fd, "wb") as out, open(src, "rb") as fin:
                    shutil.copyfileobj(fin, out)
                replace_file(tmp, fname)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
        if sha1_hash and not check_sha1(fname, sha1_hash):
            raise UserWarning(f"File {fname} is downloaded but the content hash does not match. "
                              f"The repo may be outdated or download may be incomplete.")
    return fname


def _get_repo_url() -> str:
    """MXNet's Gluon file repository URL (``MXNET_GLUON_REPO``), with a trailing slash."""
    url = os.environ.get("MXNET_GLUON_REPO", "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/")
    return url if url.endswith("/") else url + "/"


def _get_repo_file_url(namespace: str, filename: str) -> str:
    return f"{_get_repo_url()}{namespace}/{filename}"


def shape_is_known(shape: Optional[Sequence[int]]) -> bool:
    """Whether every dimension of ``shape`` is known (MXNet 1.x legacy shapes: 0 = unknown;
    an empty or missing shape is unknown)."""
    if shape is None:
        return False
    if len(shape) == 0:
        return False
    for dim in shape:
        if dim == 0 or dim is None or dim == -1:
            return False
        if dim < 0:
            raise MXNetError(f"shape dimension size cannot be less than 0, while received {dim} "
                             f"in shape {tuple(shape)}")
    return True


def _indent(s_: str, num_spaces: int) -> str:
    """Indent every line but the first by ``num_spaces`` (Block ``repr`` helper)."""
    lines = s_.split("\n")
    if len(lines) == 1:
        return s_
    first = lines.pop(0)
    return "\n".join([first] + [(num_spaces * " ") + line for line in lines])


def _brief_print_list(lst: Sequence, limit: int = 7) -> str:
    """``'a', 'b', ..., 'z'``: at most ``limit`` items of a list for error messages."""
    lst = list(lst)
    if len(lst) > limit:
        return _brief_print_list(lst[:limit // 2], limit) + ", ..., " + \
            _brief_print_list(lst[-limit // 2:], limit)
    return ", ".join([f"'{str(i)}'" for i in lst])


class HookHandle:
    """Handle returned by ``register_forward_hook`` & co.: ``detach()`` removes the hook."""

    def __init__(self) -> None:
        self._hooks_dict_ref: Any = None
        self._id: Optional[int] = None

    def attach(self, hooks_dict: dict, hook: Any) -> None:
        if self._hooks_dict_ref is not None:
            raise MXNetError("The same handle cannot be attached twice.")
        self._id = id(hook)
        hooks_dict[self._id] = hook
        try:
            self._hooks_dict_ref = weakref.ref(hooks_dict)
        except TypeError:  # a plain dict cannot be weakly referenced
            self._hooks_dict_ref = lambda d=hooks_dict: d

    def detach(self) -> None:
        hooks_dict = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks_dict is not None and self._id in hooks_dict:
            del hooks_dict[self._id]

    def __getstate__(self) -> tuple:
        return (self._hooks_dict_ref() if self._hooks_dict_ref is not None else None, self._id)

    def __setstate__(self, state: tuple) -> None:
        if state[0] is None:
            self._hooks_dict_ref = weakref.ref(dict())
        else:
            self._hooks_dict_ref = weakref.ref(state[0])
        self._id = state[1]

    def __enter__(self) -> "HookHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.detach()
