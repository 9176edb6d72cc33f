"""qprec._lib — loading libqprec.so (quant/, the run file's schema table, csrc/) with ctypes.

The library is, in this order: $QPREC_LIBRARY (a path; the project's tests
point it at build/lib/libqprec.so), or libqprec.so inside this package
(what `pip install ./python` puts there). Nothing here knows a format: the
list, the sizes and the packed layouts are asked of the library."""
import ctypes
import os

_ABI = 5

# the order of qprec_capi.c's output arrays
STATS = ("n", "n_nonfinite", "n_nonzero", "n_sat", "n_flushed", "amax", "scale", "scale_inv", "n_blocks",
         "block_scale_min", "block_scale_max", "block_scale_log2_mean")
METRICS = ("rel_l2", "snr_db", "max_abs", "cosine", "sat_frac", "zero_frac", "amax", "scale", "n_blocks",
           "block_scale_min", "block_scale_max", "block_scale_log2_mean", "n_nonfinite")
# qprec_errors' second output (qp_metrics.h's qp_bscale_dist and the element fractions)
BSTATS = ("block_scale_n_blocks", "block_scale_log2_std", "block_scale_saturated_frac", "block_scale_underflow_frac",
          "elems_flushed_frac", "elems_saturated_frac", "block_dynamic_range_max_log2")
INT_FIELDS = frozenset(("n", "n_nonfinite", "n_nonzero", "n_sat", "n_flushed", "n_blocks"))

_i64, _u64, _int, _f32p, _u8p, _dblp = (ctypes.c_int64, ctypes.c_uint64, ctypes.c_int,
                                         ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_uint8),
                                         ctypes.POINTER(ctypes.c_double))
_SIGNATURES = {
    "qprec_abi_version": (_int, []),
    "qp_version": (ctypes.c_char_p, []),
    "qprec_format_count": (_int, []),
    "qprec_format_index": (_int, [ctypes.c_char_p]),
    "qprec_format_name": (ctypes.c_char_p, [_int]),
    "qprec_format_description": (ctypes.c_char_p, [_int]),
    "qprec_format_info": (_int, [_int, ctypes.POINTER(_i64), _dblp]),
    "qprec_name_stream": (_u64, [ctypes.c_char_p]),
    "qprec_nstats": (_int, []),
    "qprec_nmetrics": (_int, []),
    "qprec_quantize": (_int, [_int, _f32p, _i64, _i64, _int, _u64, _u64, _int, _u64, _u8p, _u8p, _f32p, _dblp]),
    "qprec_dequantize": (_int, [_int, _i64, _i64, _u8p, _u8p, _f32p, _f32p]),
    "qprec_qdq": (_int, [_int, _f32p, _f32p, _i64, _i64, _int, _u64, _u64, _int, _u64, _dblp]),
    "qprec_errors": (_int, [_int, _f32p, _i64, _i64, _int, _u64, _u64, _int, _u64, _dblp, _dblp,
                            ctypes.POINTER(_i64)]),
    "qprec_nbstats": (_int, []),
    "qprec_bshist_bins": (_int, []),
    "qprec_bshist_offset": (_int, []),
    # the run file's schema (csrc/qprec_runschema.c): qprec.runfile's datasets and columns
    "qprec_runfile_schema": (_int, []),
    "qprec_runset_count": (_int, []),
    "qprec_runset_name": (ctypes.c_char_p, [_int]),
    "qprec_runset_path": (ctypes.c_char_p, [_int]),
    "qprec_runset_table": (_int, [_int]),
    "qprec_runset_ncols": (_int, [_int]),
    "qprec_runcol_name": (ctypes.c_char_p, [_int, _int]),
    "qprec_runcol_unit": (ctypes.c_char_p, [_int, _int]),
    "qprec_runcol_meaning": (ctypes.c_char_p, [_int, _int]),
    "qprec_runcol_since": (_int, [_int, _int]),
    "qprec_runcol_dtype": (_int, [_int, _int, ctypes.c_char_p, _int]),
    "qprec_runcol_dataset": (_int, [_int, _int, ctypes.c_char_p, _int]),
    # recipes and the precision dispatch (csrc/qprec_dispatch.c; qprec.torch)
    "qprec_block_gemm_count": (_int, []),
    "qprec_pass_count": (_int, []),
    "qprec_operand_count": (_int, []),
    "qprec_gemm_name": (ctypes.c_char_p, [_int]),
    "qprec_pass_name": (ctypes.c_char_p, [_int]),
    "qprec_operand_name": (ctypes.c_char_p, [_int]),
    "qprec_pass_operand": (_int, [_int, _int]),
    "qprec_recipe_names": (ctypes.c_char_p, []),
    "qprec_recipe_check": (_int, [ctypes.c_char_p, _int, ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t]),
    "qprec_recipe_text": (_int, [ctypes.c_char_p, _int, ctypes.c_uint, _int, ctypes.c_char_p, ctypes.c_size_t,
                                 ctypes.c_char_p, ctypes.c_size_t]),
    "qprec_dispatch_create": (ctypes.c_void_p, [ctypes.c_char_p, _int, ctypes.c_uint, _u64, _i64, ctypes.c_char_p,
                                                ctypes.c_size_t]),
    "qprec_dispatch_destroy": (None, [ctypes.c_void_p]),
    "qprec_dispatch_error": (ctypes.c_char_p, [ctypes.c_void_p]),
    "qprec_dispatch_use": (_int, [ctypes.c_void_p, _int, _int, _int, _int, ctypes.POINTER(_i64)]),
    "qprec_dispatch_bf16_blocks": (None, [ctypes.c_void_p, ctypes.POINTER(_int)]),
    "qprec_dispatch_begin_step": (None, [ctypes.c_void_p, _i64, _int]),
    "qprec_dispatch_begin_micro": (None, [ctypes.c_void_p, _int]),
    "qprec_dispatch_set_frozen": (None, [ctypes.c_void_p, _int]),
    "qprec_dispatch_flush": (_int, [ctypes.c_void_p]),
    "qprec_dispatch_event_counts": (None, [ctypes.c_void_p, ctypes.POINTER(_i64)]),
    "qprec_event_kind_count": (_int, []),
    "qprec_event_kind_name": (ctypes.c_char_p, [_int]),
    "qprec_dispatch_qerr_rows": (_i64, [ctypes.c_void_p]),
    "qprec_dispatch_forward": (_int, [ctypes.c_void_p, _int, _int, ctypes.c_void_p, ctypes.c_void_p, _int, _int, _int,
                                      ctypes.c_void_p, ctypes.c_void_p]),
    "qprec_dispatch_backward": (_int, [ctypes.c_void_p, _int, _int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                       _int, _int, _int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_void_p]),
    "qprec_has_runfile": (_int, []),
    # qtrain's batches (csrc/qprec_data.c)
    "qprec_data_open": (ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_double, ctypes.c_char_p, ctypes.c_size_t]),
    "qprec_data_close": (None, [ctypes.c_void_p]),
    "qprec_data_vocab": (_int, [ctypes.c_void_p]),
    "qprec_data_tokens": (_i64, [ctypes.c_void_p, _int]),
    "qprec_data_batch": (_int, [ctypes.c_void_p, _int, _u64, _i64, _int, _int, ctypes.c_void_p, ctypes.c_void_p]),
    # quant/'s own functions (qp_quant.h): the storage sizes of a format
    "qp_row_bytes": (_i64, [_int, _i64]),
    "qp_scale_shape": (None, [_int, _i64, _i64, ctypes.POINTER(_i64), ctypes.POINTER(_i64)]),
}

# the run-file writer (csrc/qprec_runfile.c), in libraries built with HDF5
_strs = ctypes.POINTER(ctypes.c_char_p)
_RUNFILE_SIGNATURES = {
    "qprec_runlog_create": (ctypes.c_void_p, [ctypes.c_char_p, _strs, _strs, _int, ctypes.c_char_p, ctypes.c_size_t]),
    "qprec_runlog_train": (_int, [ctypes.c_void_p, _strs, _dblp, _int, ctypes.c_char_p, ctypes.c_size_t]),
    "qprec_runlog_eval": (_int, [ctypes.c_void_p, _i64, ctypes.c_double, ctypes.c_char_p, ctypes.c_size_t]),
    "qprec_runlog_status": (_int, [ctypes.c_void_p, _i64, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                   ctypes.c_size_t]),
    "qprec_runlog_flush": (_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]),
    "qprec_runlog_close": (_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]),
    "qprec_runlog_attach": (None, [ctypes.c_void_p, ctypes.c_void_p]),
    "qprec_runlog_outliers": (_int, [ctypes.c_void_p, _i64, _int, _int, ctypes.c_void_p, _i64, _int, ctypes.c_char_p,
                                     ctypes.c_size_t]),
}

_lib = None


def _path():
    p = os.environ.get("QPREC_LIBRARY")
    if p:
        return p
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libqprec.so")


def lib():
    """The loaded library (loaded on first use)."""
    global _lib
    if _lib is None:
        p = _path()
        if not os.path.exists(p):
            raise ImportError(f"qprec: {p} not found: install the package with `pip install ./python` "
                              f"(it compiles quant/), or set QPREC_LIBRARY to a built libqprec.so")
        L = ctypes.CDLL(p)
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(L, name)
            fn.restype, fn.argtypes = res, args
        if L.qprec_abi_version() != _ABI:
            raise ImportError(f"qprec: {p} speaks ABI {L.qprec_abi_version()}, this package {_ABI}: rebuild it")
        if (L.qprec_nstats() != len(STATS) or L.qprec_nmetrics() != len(METRICS)
                or L.qprec_nbstats() != len(BSTATS)):
            raise ImportError(f"qprec: {p} and qprec/_lib.py disagree on the statistics they pass")
        if L.qprec_has_runfile():
            for name, (res, args) in _RUNFILE_SIGNATURES.items():
                fn = getattr(L, name)
                fn.restype, fn.argtypes = res, args
        _lib = L
    return _lib


def ptr(a, ctype):
    """A ctypes pointer into numpy array a (None for None)."""
    return None if a is None else a.ctypes.data_as(ctypes.POINTER(ctype))


def check(rc, fmt, what):
    if rc == 0:
        return
    if rc == -1:
        raise ValueError(f"qprec: {what}: unknown format {fmt!r}")
    if rc == -2:
        raise ValueError(f"qprec: {what}: the random Hadamard transform needs the last dimension to be a multiple "
                         f"of 16")
    if rc == -3:
        raise MemoryError(f"qprec: {what}: out of memory")
    raise RuntimeError(f"qprec: {what}: libqprec returned {rc}")
