"""qprec.runfile — a qtrain run file (docs/runfile.md) as pandas DataFrames.

RUN below is a run file, e.g. "sweeps/quick/runs/recipe=fp8_seed=1.h5" (the
tests run these examples on a 30-step fp8 run qtrain writes for them):

>>> r = qprec.runfile.load(RUN)
>>> r.attrs["recipe"], r.status.state.iloc[-1], len(r.train)
('fp8', 'done', 30)
>>> list(r.train.columns[:3]), r.train.step.is_monotonic_increasing
(['step', 'attn_ms', 'batch_hash'], True)
>>> sorted(set(r.quant_error.gemm)), sorted(set(r.quant_error["pass"]))
(['attproj', 'fc', 'fcproj', 'qkv'], ['dgrad', 'fprop', 'wgrad'])
>>> errs = r.quant_error.groupby(["gemm", "operand"]).rel_l2.mean()   # mean error per GEMM operand
>>> bool((errs > 0).all() and (errs < 0.2).all())
True

The file is opened the way qtrain writes it (SWMR, so a run still being
written reads too), read whole and closed. Nothing here hard-codes a
dataset or a column: the schema is the library's (schema(), the table
qtrain writes by and qplot and qsweep read by), and load() reads every
group of 1-D series as a DataFrame of its columns (a live run's series can
differ by a row: the shortest wins, as the schema says; an (n, k) dataset
becomes k columns NAME[0..k-1]) and every compound dataset as a DataFrame
of its fields, strings decoded; RunFile names each of the schema's
datasets by the schema's name for it.

>>> s = qprec.runfile.schema()
>>> s[s.column == "rel_l2"][["dataset", "path", "dtype"]].values.tolist()
[['quant_error', '/quant/error', 'float64']]

pandas and h5py are imported here, when a file is read, never by
`import qprec`; without them load() says which to install (the package's
"runfile" extra: pip install 'qprec[runfile]').
"""
import os

__all__ = ["RunFile", "load", "load_sweep", "schema"]


class RunFile:
    """One run: attrs (root attributes, str), a DataFrame per dataset of the
    schema under the schema's name for it (train, eval, quant_error,
    quant_outliers: each block GEMM input's amax, kurtosis and top-k channel
    energy share, events: the recalibration events, divergence, status; empty
    when the file lacks it), and tables (every table by its path in the file,
    these included)."""

    def __init__(self, path, attrs, tables):
        self.path, self.attrs, self.tables = path, attrs, tables
        empty = _pd().DataFrame()
        for name, where in _datasets().items():
            setattr(self, name, tables.get(where.lstrip("/"), empty))

    def __repr__(self):
        parts = ", ".join(f"{k}: {len(v)} rows" for k, v in self.tables.items())
        return f"RunFile({self.path!r}, recipe={self.attrs.get('recipe')!r}; {parts})"


def _datasets():
    """{name: path} of the schema's datasets, as the library has them."""
    from . import _lib
    L = _lib.lib()
    return {L.qprec_runset_name(i).decode(): L.qprec_runset_path(i).decode() for i in range(L.qprec_runset_count())}


def schema():
    """The run file's schema, from the library (the table qtrain writes by):
    a DataFrame with a row per column: dataset (its name here, a RunFile
    attribute), path (the dataset's path in the file), table (True: one
    compound dataset; False: a group of 1-D series), column, hdf5 (the
    HDF5 dataset that holds the column), dtype (numpy's name of its type in
    the file), unit, since (the schema version that added it) and meaning.
    The current version is attrs["runfile_schema"] of the files it writes."""
    import ctypes
    from . import _lib
    L = _lib.lib()
    buf = ctypes.create_string_buffer(256)
    rows = []
    for s in range(L.qprec_runset_count()):
        name, path, table = L.qprec_runset_name(s).decode(), L.qprec_runset_path(s).decode(), bool(L.qprec_runset_table(s))
        for c in range(L.qprec_runset_ncols(s)):
            L.qprec_runcol_dataset(s, c, buf, len(buf))
            hdf5 = buf.value.decode()
            L.qprec_runcol_dtype(s, c, buf, len(buf))
            rows.append((name, path, table, L.qprec_runcol_name(s, c).decode(), hdf5, buf.value.decode(),
                         L.qprec_runcol_unit(s, c).decode(), L.qprec_runcol_since(s, c),
                         L.qprec_runcol_meaning(s, c).decode()))
    _require(("pandas",))
    return _pd().DataFrame(rows, columns=["dataset", "path", "table", "column", "hdf5", "dtype", "unit", "since",
                                          "meaning"])


# the optional dependencies of this module: the "runfile" extra of python/pyproject.toml
_EXTRA = "runfile"
_NEEDS = ("h5py", "pandas")


def _require(needs=_NEEDS):
    """h5py and pandas, or an ImportError that names what is missing and the extra that brings it."""
    import importlib
    missing = []
    for name in needs:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ImportError(f"qprec.runfile needs {' and '.join(missing)} (not installed): "
                          f"pip install 'qprec[{_EXTRA}]'") from None


def _pd():
    import pandas
    return pandas


def _text(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if hasattr(v, "shape") and getattr(v, "shape", ()) == () and hasattr(v, "item"):
        v = v.item()
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
    return str(v) if not isinstance(v, str) else v


def _frame_of_table(arr):
    """A compound (structured) array as a DataFrame, fixed-width strings decoded."""
    pd = _pd()
    cols = {}
    for name in arr.dtype.names:
        col = arr[name]
        if col.dtype.kind == "S":
            cols[name] = [b.decode("utf-8", "replace") for b in col.tolist()]
        elif col.dtype.kind == "O":
            cols[name] = [_text(b) for b in col.tolist()]
        elif col.ndim > 1:
            for j in range(col.shape[1]):
                cols[f"{name}[{j}]"] = col[:, j]
        else:
            cols[name] = col
    return pd.DataFrame(cols, columns=[c for c in cols])


def _frame_of_group(group):
    """A group of parallel 1-D series (/train, /eval) as one DataFrame."""
    import h5py
    series = {}
    for name, ds in group.items():
        if isinstance(ds, h5py.Dataset) and ds.ndim >= 1 and ds.dtype.names is None:
            series[name] = ds[()]
    n = min((len(v) for v in series.values()), default=0)
    cols = {}
    for name in sorted(series, key=lambda k: (k != "step", k)):  # step first, then by name
        v = series[name]
        v = v[:n]
        if v.ndim == 1:
            cols[name] = [_text(s) for s in v.tolist()] if v.dtype.kind in "SO" else v
        else:
            flat = v.reshape(n, -1)
            for j in range(flat.shape[1]):
                cols[f"{name}[{j}]"] = flat[:, j]
    return _pd().DataFrame(cols)


def _open(path):
    import h5py
    if not os.path.isfile(path):
        raise FileNotFoundError(f"qprec.runfile: {path}: no such file")
    try:
        return h5py.File(path, "r", libver="latest", swmr=True, locking=False)
    except (OSError, ValueError, TypeError):
        return h5py.File(path, "r")


def load(path):
    """Read the run file at path into a RunFile."""
    _require()
    import h5py
    train = _datasets()["train"]
    with _open(path) as f:
        if train not in f:
            raise ValueError(f"qprec.runfile: {path}: not a qtrain run file (no {train})")
        attrs = {k: _text(v) for k, v in f.attrs.items()}
        tables = {}

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.dtype.names is not None:
                tables[name] = _frame_of_table(obj[()])
            elif isinstance(obj, h5py.Group) and any(isinstance(v, h5py.Dataset) and v.dtype.names is None
                                                     for v in obj.values()):
                tables[name] = _frame_of_group(obj)

        f.visititems(visit)
    return RunFile(path, attrs, tables)


def load_sweep(folder):
    """Every run file of a qsweep folder (DIR/runs/NAME.h5), as {name: RunFile}.

    >>> runs = qprec.runfile.load_sweep("sweeps/quick")        # doctest: +SKIP
    >>> pd.concat({n: r.train for n, r in runs.items()}, names=["run"])   # doctest: +SKIP
    """
    d = os.path.join(folder, "runs")
    if not os.path.isdir(d):
        raise FileNotFoundError(f"qprec.runfile: {folder}: no runs/ folder (not a qsweep folder)")
    return {n[:-3]: load(os.path.join(d, n)) for n in sorted(os.listdir(d))
            if n.endswith(".h5") and not n.endswith(".ckpt.h5")}
