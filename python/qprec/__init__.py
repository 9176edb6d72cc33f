"""qprec — qprec's exact low-precision formats from Python.

A thin layer over libqpquant (qprec's quant/, built into libqprec.so by
``pip install ./python``): the same C code qtrain and qerr run, bit for bit,
with numpy arrays in and out. The formats, their storage sizes and packed
layouts come from the library at run time (``formats()``), so a format added
to quant/ appears here without a change.

>>> import numpy as np, qprec
>>> "nvfp4" in [f["name"] for f in qprec.formats()]
True
>>> x = np.array([[0.1, -0.5, 3.0, 7.0] * 4], dtype=np.float32)   # 1 x 16: one NVFP4 block
>>> q = qprec.quantize(x, "nvfp4")
>>> q.codes.shape, q.scales.shape            # FP4 codes two to a byte; one UE4M3 scale per 16
((1, 8), (1, 1))
>>> q.dequantize()[0, :4]
array([ 0.       , -0.5833334,  3.5      ,  7.       ], dtype=float32)
>>> bool((qprec.qdq(x, "nvfp4") == q.dequantize()).all())
True
>>> e = qprec.errors(x, "mxfp8")
>>> round(e["rel_l2"], 6), e["n_blocks"]
(0.000205, 1)

``import qprec`` loads numpy and ctypes only: pandas and h5py are imported
by ``qprec.runfile`` when it reads a file, and torch never (a torch tensor
is taken through its ``.numpy()`` view, without a copy when it is a
contiguous CPU float32 tensor).
"""
import numpy as _np

from . import _lib

__all__ = ["formats", "format_info", "quantize", "qdq", "errors", "block_scale_bins", "QTensor", "runfile"]

_F32 = _np.float32


def __getattr__(name):
    # __version__ is the library's (quant/qp_version.h, the one place qprec's
    # version is written; pip's version is read from there too)
    if name == "__version__":
        return _lib.lib().qp_version().decode()
    # qprec.runfile is imported on first use: it is where pandas comes in
    if name == "runfile":
        import importlib
        return importlib.import_module(".runfile", __name__)
    raise AttributeError(f"module 'qprec' has no attribute {name!r}")


# ---- formats --------------------------------------------------------------------
def formats():
    """Every format of the library, in its table's order, as dicts:
    name, description, elem_bits (storage bits per element), elem_max (the
    largest finite element), block_rows x block_cols (the block a scale
    covers; 1 x 1: no blocks), scale_bytes (bytes per stored block scale, 0
    without block scales) and tensor_scale (an FP32 per-tensor scale).

    >>> f = {f["name"]: f for f in formats()}["mxfp4"]
    >>> f["elem_bits"], f["block_cols"], f["scale_bytes"], f["tensor_scale"]
    (4, 32, 1, False)
    """
    L = _lib.lib()
    return [format_info(L.qprec_format_name(i).decode()) for i in range(L.qprec_format_count())]


def _index(fmt, block_2d=False, what="format"):
    L = _lib.lib()
    if not isinstance(fmt, str):
        raise TypeError(f"qprec: {what}: the format is a name (str), not {type(fmt).__name__}")
    i = L.qprec_format_index(fmt.encode())
    if i < 0:
        raise ValueError(f"qprec: unknown format {fmt!r} (valid: {', '.join(f['name'] for f in formats())})")
    if block_2d and format_info(fmt, _i=i)["block_rows"] == 1:
        j = L.qprec_format_index((fmt + "-2d").encode())
        if j < 0:
            twod = [f["name"][:-3] for f in formats() if f["name"].endswith("-2d")]
            raise ValueError(f"qprec: {fmt!r} has no 2D-block variant (block_2d=True works for: {', '.join(twod)})")
        i = j
    return i


def format_info(fmt, _i=None):
    """The dict formats() gives for one format name."""
    L = _lib.lib()
    i = _i if _i is not None else L.qprec_format_index(fmt.encode()) if isinstance(fmt, str) else -1
    if i < 0:
        raise ValueError(f"qprec: unknown format {fmt!r}")
    out = (_lib._i64 * 6)()
    emax = _lib.ctypes.c_double()
    L.qprec_format_info(i, out, _lib.ctypes.byref(emax))
    return {"name": L.qprec_format_name(i).decode(), "description": L.qprec_format_description(i).decode(),
            "elem_bits": int(out[0]), "elem_max": float(emax.value), "block_rows": int(out[1]),
            "block_cols": int(out[2]), "scale_bytes": int(out[3]), "tensor_scale": bool(out[4]),
            "row_scaled": bool(out[5])}


def _storage(i, rows, cols):
    """(row_bytes, scale_rows, scale_cols) from quant/'s qp_row_bytes / qp_scale_shape."""
    L = _lib.lib()
    sr, sc = _lib._i64(), _lib._i64()
    L.qp_scale_shape(i, rows, cols, _lib.ctypes.byref(sr), _lib.ctypes.byref(sc))
    return int(L.qp_row_bytes(i, cols)), int(sr.value), int(sc.value)


# ---- inputs ----------------------------------------------------------------------
def _as_f32(x):
    """x as a C-contiguous float32 numpy array, without a copy when it already is one
    (a torch CPU tensor through .numpy(): no torch import here)."""
    mod = type(x).__module__
    if mod.startswith("torch") and hasattr(x, "detach"):
        t = x.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        try:
            x = t.numpy()
        except TypeError:  # bfloat16 and friends have no numpy dtype: widen (exactly) on the torch side
            x = t.float().numpy()
    a = _np.asarray(x)
    if a.dtype != _F32:
        if not (a.dtype.kind == "f" or a.dtype.kind in "iub"):
            raise TypeError(f"qprec: cannot quantize an array of {a.dtype}")
        a = a.astype(_F32)
    return a if a.flags.c_contiguous else _np.ascontiguousarray(a)  # (ascontiguousarray makes 0-d arrays 1-d)


def _rows_cols(shape):
    """The rows x cols view qerr uses: cols is the last dimension, rows the product of the
    others (a 0-d array is 1 x 1)."""
    if len(shape) == 0:
        return 1, 1
    cols = int(shape[-1])
    rows = int(_np.prod(shape[:-1], dtype=_np.int64)) if len(shape) > 1 else 1
    return (0 if cols == 0 else rows), cols


_RHT_TE = 2  # qp_hadamard.h's QP_RHT_TE: Transformer Engine's fixed signs


def _rht(rht):
    """rht: None/False off, True the seed qerr --rht uses by default (1), an int the
    seed, "te" Transformer Engine's transform (fixed signs, qerr --rht-signs te).
    Returns (kind, seed) as libqprec takes them: kind 0 off, 1 seeded, 2 TE's."""
    if rht is None or rht is False:
        return 0, 0
    if rht is True:
        return 1, 1
    if isinstance(rht, str) and rht == "te":
        return _RHT_TE, 0
    if isinstance(rht, (int, _np.integer)) and 0 <= int(rht) < 2 ** 64:
        return 1, int(rht)
    raise TypeError(f"qprec: rht is None, True, a seed (int >= 0) or \"te\", not {rht!r}")


def _rht_suffix(kind):
    return "+rht-te" if kind == _RHT_TE else "+rht" if kind else ""


def _sr(sr_seed, sr_stream):
    if sr_seed is None:
        return 0, 0, 0
    if not isinstance(sr_seed, (int, _np.integer)) or isinstance(sr_seed, bool) or not 0 <= int(sr_seed) < 2 ** 64:
        raise TypeError(f"qprec: sr_seed is None or a seed (int >= 0), not {sr_seed!r}")
    if isinstance(sr_stream, str):
        stream = int(_lib.lib().qprec_name_stream(sr_stream.encode()))
    elif isinstance(sr_stream, (int, _np.integer)) and 0 <= int(sr_stream) < 2 ** 64:
        stream = int(sr_stream)
    else:
        raise TypeError(f"qprec: sr_stream is an int >= 0 or a tensor name, not {sr_stream!r}")
    return 1, int(sr_seed), stream


def _stats(buf):
    return {k: (int(v) if k in _lib.INT_FIELDS else float(v)) for k, v in zip(_lib.STATS, buf)}


# ---- the API -----------------------------------------------------------------------
class QTensor:
    """A tensor in packed storage, exactly as quant/ lays it out (qp_quant.h):

    codes         uint8, rows x row_bytes: FP8 one byte per element, FP4 two per byte
                  (even element in the low nibble), BF16 two bytes little-endian; rows
                  padded with zero codes to whole blocks
    scales        scale_rows x scale_cols block scales (uint8 E8M0 / UE4M3 codes, or
                  float32 for formats with FP32 block scales); None without block scales
    tensor_scale  the per-tensor decode scale (value = element x block scale x tensor_scale;
                  1.0 for formats without one); for a row-scaled format (nvfp4-row,
                  Transformer Engine's row_scaled_nvfp4) a float32 array of rows decode
                  scales, one per row
    shape         the input's shape; rows x cols is its 2-D view (cols the last dimension)
    stats         what the quantization saw (amax, saturated and flushed counts, ...)

    With rht, the codes are of x R (the rotated basis the GEMM sees) and so is
    dequantize()."""

    __slots__ = ("fmt", "shape", "rows", "cols", "codes", "scales", "tensor_scale", "rht", "sr_seed", "stats",
                 "_index")

    def __init__(self, fmt, shape, codes, scales, tensor_scale, rht, sr_seed, stats, index):
        self.fmt, self.shape, self.codes, self.scales = fmt, tuple(shape), codes, scales
        self.rows, self.cols = _rows_cols(self.shape)
        self.tensor_scale, self.rht, self.sr_seed, self.stats, self._index = tensor_scale, rht, sr_seed, stats, index

    def dequantize(self):
        """The decoded values, float32, in the input's shape."""
        L = _lib.lib()
        y = _np.empty(self.shape, dtype=_F32)
        raw = None if self.scales is None else _np.ascontiguousarray(self.scales).view(_np.uint8)
        inv = _np.ascontiguousarray(self.tensor_scale, dtype=_F32).reshape(-1)
        rc = L.qprec_dequantize(self._index, self.rows, self.cols, _lib.ptr(self.codes, _lib.ctypes.c_uint8),
                                _lib.ptr(raw, _lib.ctypes.c_uint8), _lib.ptr(inv, _lib.ctypes.c_float),
                                _lib.ptr(y, _lib.ctypes.c_float))
        _lib.check(rc, self.fmt, "dequantize")
        return y

    @property
    def nbytes(self):
        """Bytes of codes and block scales (the tensor scale not counted)."""
        return int(self.codes.nbytes + (0 if self.scales is None else self.scales.nbytes))

    def __repr__(self):
        sc = "none" if self.scales is None else "x".join(map(str, self.scales.shape))
        return (f"QTensor({self.fmt}, shape={self.shape}, codes={self.codes.shape[0]}x{self.codes.shape[1]} bytes, "
                f"scales={sc}, tensor_scale={self.tensor_scale!r})")


def quantize(x, fmt, *, rht=None, sr_seed=None, sr_stream=0, block_2d=False):
    """Quantize x (any array-like; a float32 C-contiguous array or CPU tensor is not
    copied) into fmt's packed storage. rht: None, True (seed 1) or a seed: apply
    the 16-point random Hadamard transform along the last dimension first; "te":
    Transformer Engine's transform instead (each 16 times diag(s) H16 / 4 with TE's
    fixed signs, what TE applies to the weight-gradient operands; docs/formats.md).
    sr_seed: stochastic rounding with this Philox seed (None: round to nearest
    even); sr_stream: its stream (an int, or a tensor name, hashed as qerr
    does). block_2d: the format's 2-D-block variant (nvfp4 -> nvfp4-2d).

    >>> import numpy as np
    >>> q = quantize(np.full((2, 40), 3.0, dtype=np.float32), "mxfp8")
    >>> q.codes.shape, q.scales.shape, int(q.scales[0, 0])   # 40 padded to 64; E8M0 2^(1-8)
    ((2, 64), (2, 2), 120)
    """
    i = _index(fmt, block_2d)
    a = _as_f32(x)
    rows, cols = _rows_cols(a.shape)
    rht_on, rht_seed = _rht(rht)
    sr_on, seed, stream = _sr(sr_seed, sr_stream)
    row_bytes, srows, scols = _storage(i, rows, cols)
    info = format_info(None, _i=i)
    codes = _np.zeros((rows, row_bytes), dtype=_np.uint8)
    sb = info["scale_bytes"]
    raw = _np.zeros((srows, scols * sb), dtype=_np.uint8) if srows and sb else None
    inv = _np.ones(max(rows, 1) if info["row_scaled"] else 1, dtype=_F32)
    st = (_lib.ctypes.c_double * len(_lib.STATS))()
    L = _lib.lib()
    rc = L.qprec_quantize(i, _lib.ptr(a, _lib.ctypes.c_float), rows, cols, sr_on, seed, stream, rht_on, rht_seed,
                          _lib.ptr(codes, _lib.ctypes.c_uint8), _lib.ptr(raw, _lib.ctypes.c_uint8),
                          _lib.ptr(inv, _lib.ctypes.c_float), st)
    _lib.check(rc, fmt, "quantize")
    scales = None if raw is None else raw if sb == 1 else raw.view("<f4")
    rht_as = None if not rht_on else "te" if rht_on == _RHT_TE else rht_seed
    tscale = inv[:rows] if info["row_scaled"] else float(inv[0])
    return QTensor(info["name"], a.shape, codes, scales, tscale, rht_as,
                   seed if sr_on else None, _stats(st), i)


def qdq(x, fmt, *, rht=None, sr_seed=None, sr_stream=0, block_2d=False, out=None, return_stats=False):
    """dequantize(quantize(x)) in one pass (quant/'s qp_qdq), float32 in x's shape:
    what a tensor core multiplies (for nvfp4, element x block scale x tensor scale).
    out: a float32 C-contiguous array of x's size to write into (it may be x itself,
    e.g. a torch tensor's .numpy() view: then nothing is copied). With rht, the result
    is in the rotated basis. return_stats: also the quantization's statistics.

    >>> import numpy as np
    >>> qdq(np.array([1.0, 1.1, 1e-9, 500.0], dtype=np.float32), "fp8-e4m3")   # scale 448/500
    array([  0.97656244,   1.1160713 ,   0.        , 499.99997   ],
          dtype=float32)
    """
    i = _index(fmt, block_2d)
    a = _as_f32(x)
    rows, cols = _rows_cols(a.shape)
    if out is None:
        out = _np.empty(a.shape, dtype=_F32)
    else:
        if type(out).__module__.startswith("torch"):
            # its own storage or nothing: a converted copy would take the result away unseen
            if str(out.dtype) != "torch.float32" or out.device.type != "cpu" or not out.is_contiguous():
                raise ValueError("qprec: qdq: out must be a contiguous float32 CPU tensor")
            out = out.detach().numpy()
        if not (isinstance(out, _np.ndarray) and out.dtype == _F32 and out.flags.c_contiguous and out.size == a.size):
            raise ValueError("qprec: qdq: out must be a C-contiguous float32 array with as many elements as x")
    rht_on, rht_seed = _rht(rht)
    sr_on, seed, stream = _sr(sr_seed, sr_stream)
    st = (_lib.ctypes.c_double * len(_lib.STATS))()
    rc = _lib.lib().qprec_qdq(i, _lib.ptr(a, _lib.ctypes.c_float), _lib.ptr(out, _lib.ctypes.c_float), rows, cols,
                              sr_on, seed, stream, rht_on, rht_seed, st)
    _lib.check(rc, fmt, "qdq")
    y = out.reshape(a.shape) if out.shape != a.shape else out
    return (y, _stats(st)) if return_stats else y


def errors(x, fmt, *, rht=None, sr_seed=None, sr_stream=0, block_2d=False):
    """qerr's metrics of x in fmt, computed by the code qerr runs (quant/'s
    qp_metrics_for_format): a dict with qerr's JSON keys — format (qerr's
    variant name: nvfp4, nvfp4+rht, nvfp4+rht-te, nvfp4+sr, ...), rows, cols, rel_l2, snr_db
    (inf when exact), max_abs, cosine, sat_frac, zero_frac, amax, scale,
    n_blocks, block_scale_min/max/log2_mean (NaN without block scales),
    n_nonfinite; and the per-block scale statistics of the same quantization
    (quant/qp_metrics.h's qp_bscale_dist): block_scale_hist (an int64 array over
    block_scale_bins(), summing to n_blocks, zero-scale blocks included),
    block_scale_log2_std (population std of log2 scale over blocks with a scale
    > 0), block_scale_saturated_frac and block_scale_underflow_frac (blocks whose
    scale is the scale format's largest, or its zero/smallest with a non-zero
    amax), elems_flushed_frac and elems_saturated_frac (of all elements), and
    block_dynamic_range_max_log2 (max over blocks of log2(amax_b / smallest
    non-zero |x|), TE's max_blockwise_dynamic_range). `qerr --rht --sr --seed S FILE` is errors(x, fmt, rht=S,
    sr_seed=S, sr_stream=TENSOR_NAME) for each tensor of FILE.

    >>> import numpy as np
    >>> e = errors(np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32), "mxfp4")
    >>> e["format"], e["rows"], e["cols"], e["n_blocks"], round(e["snr_db"], 2)
    ('mxfp4', 2, 32, 2, 20.31)
    """
    i = _index(fmt, block_2d)
    a = _as_f32(x)
    rows, cols = _rows_cols(a.shape)
    rht_on, rht_seed = _rht(rht)
    sr_on, seed, stream = _sr(sr_seed, sr_stream)
    L = _lib.lib()
    m = (_lib.ctypes.c_double * len(_lib.METRICS))()
    b = (_lib.ctypes.c_double * len(_lib.BSTATS))()
    hist = _np.zeros(L.qprec_bshist_bins(), dtype=_np.int64)
    rc = L.qprec_errors(i, _lib.ptr(a, _lib.ctypes.c_float), rows, cols, sr_on, seed, stream, rht_on, rht_seed, m, b,
                        _lib.ptr(hist, _lib.ctypes.c_int64))
    _lib.check(rc, fmt, "errors")
    name = format_info(None, _i=i)["name"] + _rht_suffix(rht_on) + ("+sr" if sr_on else "")
    out = {"format": name, "rows": rows, "cols": cols}
    out.update({k: (int(v) if k in _lib.INT_FIELDS else float(v)) for k, v in zip(_lib.METRICS, m)})
    bs = dict(zip(_lib.BSTATS, b))
    out["block_scale_hist"] = [int(c) for c in hist]
    for k in _lib.BSTATS[1:]:
        out[k] = float(bs[k])
    return out


def block_scale_bins():
    """The fixed bins of errors()'s block_scale_hist, as (lower, upper) decoded
    block-scale bounds: bin 0 holds the scales that are 0, bin 1 the NaN scales
    (an MX block holding NaN/Inf), bin k >= 2 the scales s with
    floor(log2 s) = k - 151, i.e. [2^(k-151), 2^(k-150)): every positive float
    from 2^-149 to 2^127 has its bin. NVFP4's scales are the UE4M3 block scales
    before the tensor scale; FP8 blocks' the FP32 decode scales.

    >>> b = block_scale_bins()
    >>> len(b), b[0], b[151]
    (279, (0.0, 0.0), (1.0, 2.0))
    """
    L = _lib.lib()
    off = L.qprec_bshist_offset()
    nan = float("nan")
    return [(0.0, 0.0), (nan, nan)] + [(2.0 ** (k - off), 2.0 ** (k - off + 1))
                                       for k in range(2, L.qprec_bshist_bins())]
