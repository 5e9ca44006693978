"""mx.image: decoding against Pillow, resizing against PIL and OpenCV conventions, exact
crops and borders, augmenter statistics, ImageIter batches, labels and last-batch modes."""
import json
import random

import numpy as np
import pytest

import hybridnet as mx

PIL = pytest.importorskip("PIL.Image")


def _write_png(path, arr):
    PIL.fromarray(arr).save(str(path))
    return str(path)


def _rand_img(h, w, seed=0):
    return np.random.RandomState(seed).randint(0, 256, size=(h, w, 3)).astype(np.uint8)


def test_imdecode_and_imread_rgb_bgr_gray(tmp_path):
    arr = _rand_img(7, 9)
    path = _write_png(tmp_path / "a.png", arr)
    with open(path, "rb") as f:
        buf = f.read()
    rgb = mx.image.imdecode(buf)
    assert rgb.dtype == np.uint8 and rgb.shape == (7, 9, 3)
    np.testing.assert_array_equal(rgb.asnumpy(), arr)
    np.testing.assert_array_equal(mx.image.imdecode(bytearray(buf), to_rgb=0).asnumpy(), arr[:, :, ::-1])
    gray = mx.image.imdecode(buf, flag=0)
    np.testing.assert_array_equal(gray.asnumpy()[:, :, 0], np.asarray(PIL.fromarray(arr).convert("L")))
    np.testing.assert_array_equal(mx.img.image.imread(path).asnumpy(), arr)
    with pytest.raises(mx.MXNetError):
        mx.image.imdecode(b"")
    with pytest.raises(mx.MXNetError):
        mx.image.imdecode(b"clearly not image content")
    with pytest.raises(mx.MXNetError):
        mx.image.imread(str(tmp_path / "missing.jpg"))


def test_imresize_matches_pil_nearest_and_opencv_bilinear():
    arr = _rand_img(12, 16).astype(np.float32)
    src = mx.nd.array(arr)
    # nearest: OpenCV picks floor(dst * scale) -- here exact integer scales, same as PIL
    near = mx.image.imresize(src, 8, 6, interp=0).asnumpy()
    np.testing.assert_array_equal(near, arr[::2, ::2])
    # bilinear, half-pixel centres (OpenCV/PIL agree on a 2x downscale of a smooth ramp)
    ramp = np.tile(np.arange(16, dtype=np.float32)[None, :, None], (4, 1, 3))
    out = mx.image.imresize(mx.nd.array(ramp), 8, 4, interp=1).asnumpy()
    np.testing.assert_allclose(out[0, :, 0], np.arange(8) * 2 + 0.5)
    pil = np.asarray(PIL.fromarray(ramp[:, :, 0]).resize((8, 4), PIL.BILINEAR))
    np.testing.assert_allclose(out[:, :, 0], pil, atol=0.51)
    res = mx.nd.zeros((6, 8, 3))
    mx.image.imresize(src, 8, 6, interp=0, out=res)
    np.testing.assert_array_equal(res.asnumpy(), near)


def test_resize_short_and_scale_down():
    src = mx.nd.zeros((40, 100, 3))
    assert mx.image.resize_short(src, 20).shape == (20, 50, 3)
    assert mx.image.resize_short(mx.nd.zeros((100, 30, 3)), 15).shape == (50, 15, 3)
    assert mx.image.scale_down((640, 480), (720, 120)) == (640, 106)
    assert mx.image.scale_down((360, 1000), (480, 500)) == (360, 375)


def test_crops_are_exact():
    arr = np.arange(10 * 12 * 3, dtype=np.float32).reshape(10, 12, 3)
    src = mx.nd.array(arr)
    np.testing.assert_array_equal(mx.image.fixed_crop(src, 2, 3, 4, 5).asnumpy(), arr[3:8, 2:6])
    out, box = mx.image.center_crop(src, (6, 4))
    assert box == (3, 3, 6, 4)
    np.testing.assert_array_equal(out.asnumpy(), arr[3:7, 3:9])
    random.seed(3)
    for _ in range(5):
        out, (x0, y0, w, h) = mx.image.random_crop(src, (5, 5))
        np.testing.assert_array_equal(out.asnumpy(), arr[y0:y0 + h, x0:x0 + w])
    random.seed(0)
    for _ in range(10):
        out, (x0, y0, w, h) = mx.image.random_size_crop(src, (4, 4), 0.3, (0.75, 1.33))
        assert out.shape == (4, 4, 3) and 0 <= x0 <= 12 - w and 0 <= y0 <= 10 - h
    with pytest.raises(ValueError):
        mx.image.fixed_crop(src, 10, 0, 5, 5)


@pytest.mark.parametrize("border,mode", [(0, None), (1, "edge"), (2, "symmetric"), (3, "wrap"), (4, "reflect")])
def test_copy_make_border(border, mode):
    arr = _rand_img(5, 6).astype(np.float32)
    out = mx.image.copyMakeBorder(mx.nd.array(arr), 1, 2, 3, 1, type=border, values=[7, 8, 9]).asnumpy()
    if mode is None:
        expected = np.empty((8, 10, 3), np.float32)
        expected[...] = [7, 8, 9]
        expected[1:6, 3:9] = arr
    else:
        expected = np.pad(arr, ((1, 2), (3, 1), (0, 0)), mode=mode)
    np.testing.assert_array_equal(out, expected)


def test_color_normalize_and_augmenters():
    rng = np.random.RandomState(0)
    src = rng.rand(20, 30, 3).astype(np.float32) * 255
    mean, std = rng.rand(3) * 255, rng.rand(3) + 1
    out = mx.image.ColorNormalizeAug(mean=mx.nd.array(mean), std=std)(mx.nd.array(src))
    np.testing.assert_allclose(out.asnumpy(), (src - mean) / std, rtol=1e-4, atol=1e-3)
    random.seed(1)
    flips = [np.array_equal(mx.image.HorizontalFlipAug(0.5)(mx.nd.array(src)).asnumpy(), src[:, ::-1])
             for _ in range(400)]
    assert 0.4 < np.mean(flips) < 0.6
    # brightness multiplies by 1 + U(-b, b): the mean ratio stays within the bound
    ratios = [mx.image.BrightnessJitterAug(0.3)(mx.nd.array(src)).asnumpy().mean() / src.mean() for _ in range(50)]
    assert 0.7 <= min(ratios) and max(ratios) <= 1.3 and np.std(ratios) > 0.05
    # saturation 0 -> alpha in [1, 1]: identity; gray aug with p=1 gives equal channels
    np.testing.assert_allclose(mx.image.SaturationJitterAug(0.0)(mx.nd.array(src)).asnumpy(), src, rtol=1e-5)
    g = mx.image.RandomGrayAug(1.0)(mx.nd.array(src)).asnumpy()
    np.testing.assert_allclose(g[:, :, 0], g[:, :, 2], rtol=1e-5)
    # hue rotation by 0: the YIQ round trip with MXNet's 3-digit matrices (close to identity)
    hue0 = mx.image.HueJitterAug(0.0)
    t = (hue0.ityiq @ hue0.tyiq).T
    np.testing.assert_allclose(hue0(mx.nd.array(src)).asnumpy(), src @ t, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(src @ t, src, atol=1.0)
    assert mx.image.CastAug("float64")(mx.nd.array(src)).dtype == np.float64
    augs = mx.image.CreateAugmenter((3, 8, 8), resize=10, rand_crop=True, rand_mirror=True, mean=True,
                                    std=True, brightness=0.1, contrast=0.1, saturation=0.1, hue=0.1,
                                    pca_noise=0.1, rand_gray=0.2)
    names = [json.loads(a.dumps())[0] for a in augs]
    assert names == ["resizeaug", "randomcropaug", "horizontalflipaug", "castaug", "colorjitteraug",
                     "huejitteraug", "lightingaug", "randomgrayaug", "colornormalizeaug"]
    img = mx.nd.array(_rand_img(20, 30))
    for a in augs:
        img = a(img)
    assert img.shape == (8, 8, 3) and img.dtype == np.float32


def test_imrotate_quarter_turn_and_errors():
    img = np.arange(25, dtype=np.float32).reshape(1, 5, 5)
    out = mx.image.imrotate(mx.nd.array(img), 90).asnumpy()
    # same convention as scipy.ndimage.rotate(img, 90, axes=(1, 0)): a counter-clockwise turn
    np.testing.assert_allclose(out[0], np.rot90(img[0], k=1), atol=1e-4)
    with pytest.raises(ValueError):
        mx.image.imrotate(mx.nd.array(img), 10, zoom_in=True, zoom_out=True)
    with pytest.raises(TypeError):
        mx.image.imrotate(mx.nd.array(img), mx.nd.array([1, 2]))
    assert mx.image.random_rotate(mx.nd.ones((2, 1, 5, 6)), (-5, 5)).shape == (2, 1, 5, 6)


def _image_files(tmp_path, n=5):
    files = []
    for k in range(n):
        arr = np.full((6, 8, 3), k * 40, np.uint8)
        files.append(_write_png(tmp_path / f"i{k}.png", arr))
    return files


def test_image_iter_batches_labels_and_last_batch(tmp_path):
    files = _image_files(tmp_path)
    imglist = [[float(k), f] for k, f in enumerate(files)]
    it = mx.image.ImageIter(2, (3, 4, 4), imglist=imglist, path_root="")
    batches = list(it)
    assert len(batches) == 3 and batches[-1].pad == 1
    assert batches[0].data[0].shape == (2, 3, 4, 4)
    labels = np.concatenate([b.label[0].asnumpy() for b in batches])
    np.testing.assert_array_equal(labels, [0, 1, 2, 3, 4, 0])
    # pixel values follow the files (constant images k * 40), padding wraps to the first
    np.testing.assert_array_equal(batches[2].data[0].asnumpy()[:, 0, 0, 0], [160, 0])
    assert len(list(mx.image.ImageIter(2, (3, 4, 4), imglist=imglist, last_batch_handle="discard"))) == 2
    lst = tmp_path / "list.lst"
    lst.write_text("".join(f"{k}\t{k * 2}\t{f}\n" for k, f in enumerate(files)))
    it = mx.image.ImageIter(3, (3, 4, 4), path_imglist=str(lst), last_batch_handle="roll_over")
    assert len(list(it)) == 1
    it.reset()
    first = it.next()
    assert first.pad == 1   # 2 rolled-over images + 1 new
    np.testing.assert_array_equal(first.label[0].asnumpy(), [6, 8, 0])


def test_image_iter_from_recordio(tmp_path):
    rec, idx = str(tmp_path / "d.rec"), str(tmp_path / "d.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for k in range(4):
        img = np.full((5, 5, 3), 10 * k, np.uint8)
        w.write_idx(k, mx.recordio.pack_img(mx.recordio.IRHeader(0, float(k), k, 0), img, img_fmt=".png"))
    w.close()
    it = mx.image.ImageIter(2, (3, 5, 5), path_imgrec=rec, path_imgidx=idx)
    b = list(it)
    np.testing.assert_array_equal(np.concatenate([x.label[0].asnumpy() for x in b]), [0, 1, 2, 3])
    np.testing.assert_array_equal(b[1].data[0].asnumpy()[:, 1, 2, 2], [20, 30])


def test_legacy_nd_imdecode_is_chw_bgr_float(tmp_path):
    arr = _rand_img(6, 8)
    with open(_write_png(tmp_path / "a.png", arr), "rb") as f:
        buf = f.read()
    out = mx.nd.imdecode(buf)
    assert out.dtype == np.float32 and out.shape == (3, 6, 8)
    np.testing.assert_array_equal(out.asnumpy(), arr[:, :, ::-1].transpose(2, 0, 1))
    clip = mx.nd.imdecode(buf, clip_rect=(1, 2, 5, 6), mean=mx.nd.ones((3, 4, 4)))
    np.testing.assert_array_equal(clip.asnumpy(), arr[2:6, 1:5, ::-1].transpose(2, 0, 1) - 1.0)


# -- a declared size the file cannot hold is refused before decoding (issue 24) ------------------
def _resized(data, width, height):
    """``data`` (a PNG or JPEG) with its header declaring ``width`` x ``height``."""
    import struct
    import zlib
    b = bytearray(data)
    if data[:4] == b"\x89PNG":
        b[16:24] = struct.pack(">II", width, height)
        b[29:33] = struct.pack(">I", zlib.crc32(bytes(b[12:29])))  # a valid header CRC
    else:
        i = data.find(b"\xff\xc0")
        b[i + 5:i + 9] = struct.pack(">HH", height, width)
    return bytes(b)


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
def test_imdecode_refuses_a_size_the_file_cannot_hold(fmt):
    import io
    out = io.BytesIO()
    PIL.fromarray(_rand_img(7, 9)[:, :, 0], "L").save(out, format=fmt)
    data = _resized(out.getvalue(), 9000, 9000)
    # before: Pillow allocated the 81-megapixel image first; the JPEG (grey-filled, as libjpeg
    # fills a truncated scan) even decoded to a 9000x9000x3 array (243 MB) from ~400 bytes
    with pytest.raises(mx.base.MXNetError, match=f"the {fmt} declares 9000x9000 pixels.*truncated or corrupt"):
        mx.image.imdecode(data)
    with pytest.raises(mx.base.MXNetError, match="declares 9000x9000"):
        mx.nd.imdecode(data)
    # a size the coded data can hold still decodes (Pillow reports what is wrong with it)
    small = _resized(out.getvalue(), 9, 7)
    assert mx.image.imdecode(small).shape == (7, 9, 3)


@pytest.mark.parametrize("mode, fmt, kw", [("RGB", "JPEG", {}), ("RGB", "JPEG", {"progressive": True}),
                                           ("L", "JPEG", {"subsampling": 2}), ("RGB", "PNG", {"compress_level": 9}),
                                           ("1", "PNG", {}), ("P", "PNG", {})])
def test_imdecode_takes_highly_compressed_images(mode, fmt, kw):
    """Constant images come close to each format's limit (deflate's 1032:1, one bit per JPEG
    block) and must not be refused."""
    import io
    out = io.BytesIO()
    PIL.new(mode, (2000, 1500), 0).save(out, format=fmt, **kw)
    img = mx.image.imdecode(out.getvalue())
    assert img.shape == (1500, 2000, 3) and int(img.asnumpy().max()) == 0


def test_image_datasets_use_the_checked_decoder(tmp_path):
    """ImageFolderDataset / ImageRecordDataset read files from strangers: their decoder refuses
    a declared size the file cannot hold, as mx.image.imdecode does (it used Pillow directly)."""
    import io
    out = io.BytesIO()
    PIL.fromarray(_rand_img(7, 9), "RGB").save(out, format="PNG")
    (tmp_path / "cat").mkdir()
    (tmp_path / "dog").mkdir()
    (tmp_path / "cat" / "a.png").write_bytes(out.getvalue())
    (tmp_path / "dog" / "b.png").write_bytes(_resized(out.getvalue(), 9000, 9000))
    folder = mx.gluon.data.vision.ImageFolderDataset(str(tmp_path))
    assert folder[0][0].shape == (7, 9, 3) and folder[0][0].dtype == np.uint8
    gray = mx.gluon.data.vision.ImageFolderDataset(str(tmp_path), flag=0)
    assert gray[0][0].shape == (7, 9, 1)
    with pytest.raises(mx.base.MXNetError, match="declares 9000x9000"):
        folder[1]
