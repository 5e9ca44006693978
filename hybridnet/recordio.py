"""``mx.recordio``: MXNet's RecordIO files (``.rec`` + ``.idx``), read and written in pure Python.

The byte format is dmlc-core's RecordIO, the one MXNet 1.9.1 reads and writes, so files
interoperate both ways:

* every part starts with two little-endian ``uint32``: the magic ``0xced7230a`` and
  ``lrecord = (cflag << 29) | length`` (``length < 2**29``);
* the payload follows, zero-padded to a multiple of 4 bytes;
* ``cflag`` 0 is a whole record. A record whose payload contains the magic word at a 4-byte
  aligned offset is split there: the magic is dropped, the pieces are written as parts with
  ``cflag`` 1 (first), 2 (middle), 3 (last), and the reader joins them putting the magic back.

The ``.idx`` file is text: one ``key<TAB>byte offset`` line per record.
"""
from __future__ import annotations

import numbers
import os
import struct
from collections import namedtuple
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from .base import MXNetError
from .formats.atomic import open_atomic_temp

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img", "unpack_img"]

_MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_HEAD = struct.Struct("<II")
_MAX_LEN = (1 << 29) - 1


def _encode_lrec(cflag: int, length: int) -> int:
    return (cflag << 29) | length


def _frame(data: bytes) -> bytes:
    """The on-disk bytes of one record (split where the payload holds the magic word)."""
    n = len(data)
    if n > _MAX_LEN:
        raise MXNetError(f"MXRecordIO.write: a record holds at most {_MAX_LEN} bytes (2^29 - 1), "
                         f"got {n}; split the payload over several records")
    out = []
    start = 0
    lower = n & ~3
    pos = data.find(_MAGIC_BYTES, 0, lower)
    while pos != -1:
        if pos % 4 == 0:
            out.append(_HEAD.pack(_MAGIC, _encode_lrec(1 if start == 0 else 2, pos - start)))
            out.append(data[start:pos])
            start = pos + 4
            pos = data.find(_MAGIC_BYTES, start, lower)
        else:
            pos = data.find(_MAGIC_BYTES, pos + 1, lower)
    out.append(_HEAD.pack(_MAGIC, _encode_lrec(3 if start else 0, n - start)))
    out.append(data[start:])
    pad = (-n) % 4
    if pad:
        out.append(b"\x00" * pad)
    return b"".join(out)


class MXRecordIO:
    """Sequential reader/writer of a RecordIO file (MXNet's ``mx.recordio.MXRecordIO``).

    ``flag`` is ``'r'`` or ``'w'``. Writes go to a temporary file in the same folder that
    replaces ``uri`` on ``close()`` (so a half-written file never appears under the name).
    """

    def __init__(self, uri: "str | os.PathLike", flag: str):
        self.uri = os.fspath(uri)
        self.flag = flag
        self.pid: Optional[int] = None
        self.is_open = False
        self.writable = False
        self._f: Any = None
        self._tmp: Optional[str] = None
        self.open()

    # -- life cycle ---------------------------------------------------------------------------
    def open(self) -> None:
        """Open the file (again): readers start at the first record, writers truncate."""
        if self.flag == "w":
            self._f, self._tmp = open_atomic_temp(self.uri, "wb")
            self.writable = True
        elif self.flag == "r":
            try:
                self._f = open(self.uri, "rb")
            except OSError as e:
                raise MXNetError(f"MXRecordIO: cannot open {self.uri!r} for reading: {e.strerror}") from None
            self.writable = False
        else:
            raise ValueError(f"Invalid flag {self.flag!r}: MXRecordIO flag must be 'r' or 'w'")
        self.pid = os.getpid()
        self.is_open = True

    def close(self) -> None:
        """Close the file; a writer's records become visible under ``uri`` now."""
        if not self.is_open:
            return
        f, self._f = self._f, None
        self.is_open = False
        self.pid = None
        if self.writable and self._tmp is not None:
            try:
                f.flush()
                os.fsync(f.fileno())
            finally:
                f.close()
            os.replace(self._tmp, self.uri)
            self._tmp = None
        else:
            f.close()

    def reset(self) -> None:
        """Rewind a reader to the first record (a writer starts the file over)."""
        self.close()
        self.open()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "MXRecordIO":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getstate__(self) -> dict:
        """Pickle support (MXNet's): the open file is not pickled; the copy reopens the file."""
        is_open = self.is_open
        self.close()
        d = dict(self.__dict__)
        d["is_open"] = is_open
        d["_f"] = None
        d["_tmp"] = None
        if is_open:
            self.open()
        return d

    def __setstate__(self, d: dict) -> None:
        self.__dict__ = d
        is_open = d["is_open"]
        self.is_open = False
        self.pid = None
        if is_open:
            self.open()

    def _check_pid(self, allow_reset: bool = False) -> None:
        """A file handle inherited through ``fork`` is shared: readers reopen it, writers refuse."""
        if self.pid != os.getpid():
            if allow_reset:
                self._f = None
                self.is_open = False
                self.open()
            else:
                raise RuntimeError("MXRecordIO: forbidden operation in a different process than the "
                                   "one that opened the file for writing")

    # -- I/O ------------------------------------------------------------------------------------
    def write(self, buf: bytes) -> None:
        """Append one record (bytes-like)."""
        if not self.writable:
            raise MXNetError(f"MXRecordIO.write: {self.uri!r} was opened with flag {self.flag!r}; "
                             f"open it with flag 'w' to write")
        self._check_pid(allow_reset=False)
        self._f.write(_frame(bytes(buf)))

    def read(self) -> Optional[bytes]:
        """The next record as bytes, or ``None`` at the end of the file."""
        if self.writable:
            raise MXNetError(f"MXRecordIO.read: {self.uri!r} was opened with flag 'w'; "
                             f"open it with flag 'r' to read")
        self._check_pid(allow_reset=True)
        f = self._f
        parts: List[bytes] = []
        while True:
            offset = f.tell()
            head = f.read(8)
            if not head:
                if parts:
                    raise MXNetError(f"Invalid RecordIO file {self.uri!r}: the file ends at byte "
                                     f"offset {offset} inside a multi-part record (truncated file?)")
                return None
            if len(head) < 8:
                raise MXNetError(f"Invalid RecordIO file {self.uri!r}: truncated record header at "
                                 f"byte offset {offset} ({len(head)} of 8 bytes)")
            magic, lrec = _HEAD.unpack(head)
            if magic != _MAGIC:
                raise MXNetError(f"Invalid RecordIO file {self.uri!r}: bad magic number 0x{magic:08x} "
                                 f"at byte offset {offset} (expected 0x{_MAGIC:08x}); the file is "
                                 f"corrupted, or the index points into the middle of a record")
            cflag, length = lrec >> 29, lrec & _MAX_LEN
            if cflag > 3:
                raise MXNetError(f"Invalid RecordIO file {self.uri!r}: record header at byte offset "
                                 f"{offset} has the unknown part flag {cflag} (expected 0 to 3)")
            padded = (length + 3) & ~3
            body = f.read(padded)
            if len(body) < padded:
                raise MXNetError(f"Invalid RecordIO file {self.uri!r}: the record at byte offset "
                                 f"{offset} declares {length} bytes but the file ends after "
                                 f"{len(body)} (truncated file?)")
            if cflag in (2, 3) and not parts:
                raise MXNetError(f"Invalid RecordIO file {self.uri!r}: continuation part (cflag={cflag}) "
                                 f"at byte offset {offset} without a first part")
            if cflag == 1 and parts:
                raise MXNetError(f"Invalid RecordIO file {self.uri!r}: a new multi-part record starts "
                                 f"at byte offset {offset} before the previous one ended")
            parts.append(body[:length])
            if cflag == 0 or cflag == 3:
                return _MAGIC_BYTES.join(parts)

    def tell(self) -> int:
        """Current byte offset (where the next record will be written or read)."""
        if not self.is_open:
            raise MXNetError(f"MXRecordIO.tell: {self.uri!r} is closed")
        return self._f.tell()

    def _seek(self, pos: int) -> None:
        self._check_pid(allow_reset=True)
        self._f.seek(pos)


class MXIndexedRecordIO(MXRecordIO):
    """RecordIO with random access through an ``.idx`` file (MXNet's ``MXIndexedRecordIO``).

    ``keys`` lists the record keys in file order; ``idx`` maps key -> byte offset.
    """

    def __init__(self, idx_path: "str | os.PathLike", uri: "str | os.PathLike", flag: str,
                 key_type: Callable = int):
        self.idx_path = os.fspath(idx_path)
        self.idx: dict = {}
        self.keys: list = []
        self.key_type = key_type
        self.fidx: Any = None
        self._idx_tmp: Optional[str] = None
        super().__init__(uri, flag)

    def open(self) -> None:
        super().open()
        self.idx = {}
        self.keys = []
        if self.writable:
            self.fidx, self._idx_tmp = open_atomic_temp(self.idx_path, "w")
            return
        try:
            self._read_index()
        except BaseException:
            super().close()
            raise

    def _read_index(self) -> None:
        """Parse the ``.idx`` text; every offset must point inside the ``.rec`` file."""
        try:
            with open(self.idx_path, "rb") as fin:
                raw = fin.read()
        except OSError as e:
            raise MXNetError(f"MXIndexedRecordIO: cannot open index file {self.idx_path!r}: "
                             f"{e.strerror}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            line = raw.count(b"\n", 0, e.start) + 1
            raise MXNetError(f"MXIndexedRecordIO: index file {self.idx_path!r} is not UTF-8 text "
                             f"({e.reason} at byte offset {e.start}, line {line}); expected "
                             f"'key<TAB>offset' lines") from None
        size = os.fstat(self._f.fileno()).st_size
        for lineno, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line:
                continue
            fields = line.split("\t")
            if len(fields) < 2:
                fields = line.split()
            try:
                key, pos = self.key_type(fields[0]), int(fields[1])
            except (ValueError, IndexError, TypeError, OverflowError):
                raise MXNetError(f"MXIndexedRecordIO: line {lineno} of {self.idx_path!r} is not "
                                 f"'key<TAB>offset': {line[:200]!r}") from None
            if not 0 <= pos < size:
                raise MXNetError(f"MXIndexedRecordIO: line {lineno} of {self.idx_path!r} gives the "
                                 f"byte offset {pos} for key {key!r}, outside the record file "
                                 f"{self.uri!r} ({size} bytes); the index does not belong to this file")
            self.idx[key] = pos
            self.keys.append(key)

    def close(self) -> None:
        if not self.is_open:
            return
        writable = self.writable
        super().close()
        if writable and self.fidx is not None:
            fidx, self.fidx = self.fidx, None
            fidx.flush()
            fidx.close()
            if self._idx_tmp is not None:
                os.replace(self._idx_tmp, self.idx_path)
                self._idx_tmp = None

    def __getstate__(self) -> dict:
        d = super().__getstate__()
        d["fidx"] = None
        d["_idx_tmp"] = None
        return d

    def seek(self, idx: Any) -> None:
        """Move the reader to the record with key ``idx``."""
        if self.writable:
            raise MXNetError("MXIndexedRecordIO.seek: only readers (flag 'r') can seek")
        try:
            pos = self.idx[idx]
        except KeyError:
            raise KeyError(f"MXIndexedRecordIO: no record with key {idx!r} in {self.idx_path!r} "
                           f"({len(self.keys)} keys)") from None
        self._seek(pos)

    def tell(self) -> int:
        """Byte offset where the next record will be written."""
        return super().tell()

    def read_idx(self, idx: Any) -> Optional[bytes]:
        """The record with key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx: Any, buf: bytes) -> None:
        """Append a record under key ``idx`` and add it to the index."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


# -- image record headers ---------------------------------------------------------------------
IRHeader = namedtuple("IRHeader", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """Header of an image record: flag (number of float labels, 0 for one scalar
label), label (float, or a float32 array when flag > 0), id, id2 (uint64 ids)."""

_IR_FORMAT = "<IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header: Any, s: bytes) -> bytes:
    """Prepend an ``IRHeader`` to ``s`` (a number label, or an array label stored after the header)."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + bytes(s)
    return struct.pack(_IR_FORMAT, int(header.flag), float(header.label), int(header.id),
                       int(header.id2)) + bytes(s)


def unpack(s: bytes) -> Tuple[IRHeader, bytes]:
    """Split a record into its ``IRHeader`` and payload (array labels come back as float32)."""
    if len(s) < _IR_SIZE:
        raise MXNetError(f"recordio.unpack: the record has {len(s)} bytes, fewer than the "
                         f"{_IR_SIZE}-byte IRHeader")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        n = header.flag
        if len(s) < 4 * n:
            raise MXNetError(f"recordio.unpack: header declares {n} float labels but only "
                             f"{len(s)} bytes follow")
        header = header._replace(label=np.frombuffer(s, np.float32, n).copy())
        s = s[4 * n:]
    return header, s


# -- images (Pillow; MXNet uses OpenCV, so colour arrays are BGR here too) ---------------------
def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("recordio.pack_img/unpack_img need an image library: pip install Pillow") from None
    return Image


# Pillow (as OpenCV) allocates the whole image from the declared size before it reads a pixel,
# and fills a truncated JPEG with grey: a 400-byte file declaring 9000x9000 cost 300 MB and
# decoded. The size is checked first against what the file can hold at all: a PNG's pixels are
# deflate-compressed (at most 1032:1, its format limit); a Huffman-coded JPEG spends at least one
# bit per 8x8 block of every component in its first scan.
_DEFLATE_MAX_RATIO = 1032
_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def _check_declared_size(buf: bytes) -> None:
    """Refuse a PNG or JPEG whose declared width x height needs more coded data than the file
    has (truncated or corrupt); other formats and unparsable headers are left to Pillow."""
    if buf[:8] == b"\x89PNG\r\n\x1a\n":
        _check_png_size(buf)
    elif buf[:2] == b"\xff\xd8":
        _check_jpeg_size(buf)


def _check_png_size(buf: bytes) -> None:
    pos, idat, header = 8, 0, None
    while pos + 8 <= len(buf):
        length, kind = struct.unpack(">I4s", buf[pos:pos + 8])
        if kind == b"IHDR" and length >= 13 and pos + 21 <= len(buf):
            header = struct.unpack(">IIBB", buf[pos + 8:pos + 18])
        elif kind == b"IDAT":
            idat += min(length, len(buf) - pos - 8)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None:
        return
    width, height, depth, colour = header
    bits = width * height * depth * _PNG_CHANNELS.get(colour, 1)
    if (bits + 7) // 8 > _DEFLATE_MAX_RATIO * idat + 1024:
        raise MXNetError(f"the PNG declares {width}x{height} pixels ({(bits + 7) // 8} bytes of image "
                         f"data), but its {idat} bytes of compressed data can hold at most "
                         f"{_DEFLATE_MAX_RATIO * idat} (deflate's limit): the file is truncated or corrupt")


def _check_jpeg_size(buf: bytes) -> None:
    pos, frame = 2, None
    while pos + 4 <= len(buf):
        if buf[pos] != 0xFF:
            return  # not a marker where one must be: Pillow reports the corruption
        marker = buf[pos + 1]
        if marker == 0xFF:
            pos += 1
            continue
        if marker == 0xD8 or 0xD0 <= marker <= 0xD7 or marker == 0x01:
            pos += 2
            continue
        (length,) = struct.unpack(">H", buf[pos + 2:pos + 4])
        if marker == 0xDA:  # start of scan: the entropy-coded data follows
            if frame is not None:
                _check_jpeg_frame(frame, len(buf) - pos)
            return
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            if marker >= 0xC9:
                return  # arithmetic coding: no per-block minimum to check
            body = buf[pos + 4:pos + 2 + length]
            if len(body) >= 6:
                height, width, n = struct.unpack(">HHB", body[1:6])
                sampling = [(b >> 4, b & 15) for b in body[7:7 + 3 * n:3]]
                frame = (width, height, sampling)
        pos += 2 + length


def _check_jpeg_frame(frame: tuple, coded: int) -> None:
    width, height, sampling = frame
    if not width or not height or not sampling or not all(h and v for h, v in sampling):
        return  # a size given later (DNL) or a malformed frame: Pillow decides
    hmax, vmax = max(h for h, _ in sampling), max(v for _, v in sampling)
    blocks = min(-(-(-(-width * h // hmax)) // 8) * -(-(-(-height * v // vmax)) // 8)
                 for h, v in sampling)
    if -(-blocks // 8) > coded:
        raise MXNetError(f"the JPEG declares {width}x{height} pixels, which take at least "
                         f"{-(-blocks // 8)} bytes of coded data, but only {coded} bytes follow its first "
                         f"scan header: the file is truncated or corrupt")


def _decode_image(buf: bytes, iscolor: int = -1) -> np.ndarray:
    """Decode JPEG/PNG bytes like ``cv2.imdecode``: HxWx3 BGR (iscolor 1), HxW gray (0),
    or as stored (-1: gray stays HxW, colour BGR, alpha BGRA)."""
    import io
    Image = _pil()
    buf = bytes(buf)
    try:
        _check_declared_size(buf)
    except MXNetError as e:
        raise MXNetError(f"cannot decode image ({len(buf)} bytes): {e}") from None
    try:
        img = Image.open(io.BytesIO(buf))
        img.load()
    except Exception as e:
        raise MXNetError(f"cannot decode image ({len(buf)} bytes): {e}") from None
    if iscolor == 0:
        return np.asarray(img.convert("L"))
    if iscolor == 1 or img.mode not in ("L", "RGBA", "LA"):
        arr = np.asarray(img.convert("RGB"))
        return np.ascontiguousarray(arr[:, :, ::-1])
    if img.mode == "L":
        return np.asarray(img)
    arr = np.asarray(img.convert("RGBA"))
    return np.ascontiguousarray(arr[:, :, [2, 1, 0, 3]])


def _image_bytes(buf: Any) -> bytes:
    """An encoded image given as bytes, bytearray, memoryview or a (u)int8 NumPy array, as bytes
    (the callers in ``mx.image`` and ``mx.nd`` turn an NDArray into its NumPy array first)."""
    if isinstance(buf, np.ndarray):
        if buf.dtype != np.uint8 and buf.dtype != np.int8:
            raise TypeError(f"imdecode: a buffer array must be (u)int8, got {buf.dtype}")
        return buf.tobytes()
    if isinstance(buf, (bytes, bytearray, memoryview)):
        return bytes(buf)
    if isinstance(buf, str):
        raise TypeError("imdecode: buf must be bytes (the encoded file content), got str; read the "
                        "file in binary mode or use imread(filename)")
    raise TypeError(f"imdecode: buf must be bytes, bytearray or a uint8 array, got {type(buf).__name__}")


def _imdecode(buf: bytes, flag: int, to_rgb: bool, source: str) -> np.ndarray:
    """``mx.image.imdecode``'s decode: HxWx3 colour (RGB, or OpenCV's BGR without ``to_rgb``) for
    ``flag`` 1, HxWx1 gray for 0; errors name ``source``."""
    if not buf:
        raise MXNetError(f"imdecode: empty buffer ({source}); there is no image to decode")
    try:
        arr = _decode_image(buf, 1 if flag else 0)
    except MXNetError as e:
        raise MXNetError(f"imdecode: cannot decode {source}: {e}") from None
    if not flag:
        return arr[:, :, None]
    return np.ascontiguousarray(arr[:, :, ::-1]) if to_rgb else arr


def _legacy_imdecode(buf: Any, clip_rect: Tuple[int, int, int, int], channels: int) -> np.ndarray:
    """The decode of MXNet's deprecated ``mx.nd.imdecode``: a float32 CxHxW array in OpenCV's
    channel order (BGR), cropped to ``clip_rect`` = (x0, y0, x1, y1) (all zeros: the whole image)."""
    if channels not in (1, 3):
        raise ValueError(f"nd.imdecode: channels must be 1 or 3, got {channels}")
    arr = _imdecode(_image_bytes(buf), 0 if channels == 1 else 1, False, "the buffer")
    x0, y0, x1, y1 = (int(v) for v in clip_rect)
    if y1 - y0 == 0:
        x0, y0, x1, y1 = 0, 0, arr.shape[1], arr.shape[0]
    if not (0 <= x0 < x1 <= arr.shape[1] and 0 <= y0 < y1 <= arr.shape[0]):
        raise MXNetError(f"nd.imdecode: clip_rect {tuple(clip_rect)} is outside the "
                         f"{arr.shape[1]}x{arr.shape[0]} image")
    return arr[y0:y1, x0:x1].transpose(2, 0, 1).astype(np.float32)


def _encode_image(img: np.ndarray, quality: int, img_fmt: str) -> bytes:
    import io
    Image = _pil()
    img = np.asarray(img)
    if img.dtype != np.uint8:
        raise MXNetError(f"pack_img: the image must be uint8, got {img.dtype}")
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    if img.ndim == 3 and img.shape[2] == 3:
        pil = Image.fromarray(np.ascontiguousarray(img[:, :, ::-1]), "RGB")
    elif img.ndim == 3 and img.shape[2] == 4:
        pil = Image.fromarray(np.ascontiguousarray(img[:, :, [2, 1, 0, 3]]), "RGBA")
    elif img.ndim == 2:
        pil = Image.fromarray(np.ascontiguousarray(img), "L")
    else:
        raise MXNetError(f"pack_img: expected an HxW, HxWx1, HxWx3 or HxWx4 image, got shape {img.shape}")
    fmt = img_fmt.lower().lstrip(".")
    out = io.BytesIO()
    if fmt in ("jpg", "jpeg"):
        if pil.mode == "RGBA":
            pil = pil.convert("RGB")
        pil.save(out, format="JPEG", quality=int(quality))
    elif fmt == "png":
        pil.save(out, format="PNG", compress_level=max(0, min(9, int(quality))))
    else:
        raise MXNetError(f"pack_img: unsupported img_fmt {img_fmt!r}; use '.jpg' or '.png'")
    return out.getvalue()


def pack_img(header: Any, img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """Encode a BGR (OpenCV order, like MXNet) uint8 image and pack it with ``header``.

    ``quality`` is the JPEG quality (1-100) or the PNG compression level (0-9).
    """
    return pack(header, _encode_image(img, quality, img_fmt))


def unpack_img(s: bytes, iscolor: int = -1) -> Tuple[IRHeader, np.ndarray]:
    """Unpack a record made by ``pack_img``: (header, image as a NumPy BGR/gray uint8 array)."""
    header, s = unpack(s)
    return header, _decode_image(s, iscolor)
