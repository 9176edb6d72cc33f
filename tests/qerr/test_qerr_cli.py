#!/usr/bin/python3
"""test_qerr_cli.py -- the qerr command line, end to end.

  test_qerr_cli.py QERR WORKDIR

Builds small input files in WORKDIR (safetensors, HDF5, raw f32, broken
ones), then checks, table-style:
  - every error case: exit 2, nothing on stdout, exactly one line on stderr
    that names the problem (file and byte offset for broken headers);
  - --json keys and values, --csv header and rows, --h5 read back with h5py,
    all three agreeing number for number;
  - --threads 2 output byte-identical to --threads 1; --match, --sort,
    --top, --summary, --rht, --sr, --seed; the same data through safetensors,
    HDF5 and --raw giving the same metrics; the progress line only on a
    terminal and never on stdout.
Prints "N passed, M failed"; exit status 1 on any failure.
"""
import csv
import io
import json
import math
import os
import pty
import re
import struct
import subprocess
import sys
import threading

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from qp_testlib import Checks, write_safetensors  # noqa: E402

check = Checks()
QERR = None
DEFAULT_FORMATS = ["bf16", "fp8-e4m3", "mxfp8", "mxfp4", "nvfp4"]
KEYS = ["file", "tensor", "format", "rows", "cols", "rel_l2", "snr_db", "max_abs", "cosine", "sat_frac",
        "zero_frac", "amax", "scale", "n_blocks", "block_scale_min", "block_scale_max", "block_scale_log2_mean",
        "n_nonfinite", "block_scale_log2_std",
        "block_scale_saturated_frac", "block_scale_underflow_frac", "elems_flushed_frac", "elems_saturated_frac",
        "block_dynamic_range_max_log2", "block_scale_hist"]


def run(*args):
    p = subprocess.run([QERR, *args], capture_output=True, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def run_json(*args):
    rc, out, err = run("--json", *args)
    if not check(rc == 0, f"qerr --json {args}: rc {rc}, stderr {err!r}"):
        return [], err
    return json.loads(out), err


TORCH_METADATA = {"format": "pt"}  # the __metadata__ Hugging Face checkpoints carry: qerr reads past it


def bf16(a):
    """float32 -> bfloat16 bits, round to nearest even (finite inputs)."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def fixtures(w):
    rng = np.random.default_rng(1)
    q = rng.standard_normal((64, 128)).astype(np.float32)
    q[3, 5] = 40.0  # an outlier, so formats differ
    f = {}
    f["q"] = q
    f["model"] = os.path.join(w, "model.safetensors")
    write_safetensors(f["model"], [
        ("layers.0.attn.q.weight", "F32", q.astype("<f4")),
        ("layers.0.mlp.up.weight", "BF16", bf16(rng.standard_normal((32, 64)) * 0.02)),
        ("layers.1.attn.q.weight", "F16", (rng.standard_normal((4, 8, 32)) * 3).astype("<f2")),
        ("bias", "F32", rng.standard_normal(30).astype("<f4")),
        ("exact", "F32", np.arange(-8, 8, dtype="<f4").reshape(2, 8)),
        ("step", "I64", np.array([7], "<i8")),
        ("scalar", "F32", np.array(0.75, "<f4")),
        ("empty", "F32", np.zeros((0, 4), "<f4")),
    ], TORCH_METADATA)
    f["float_tensors"] = ["layers.0.attn.q.weight", "layers.0.mlp.up.weight", "layers.1.attn.q.weight", "bias",
                          "exact", "scalar"]
    f["many"] = os.path.join(w, "many.safetensors")
    write_safetensors(f["many"], [(f"t{i:02d}", "F32", (rng.standard_normal((16, 32 + 16 * (i % 3))) *
                                                        10.0 ** (i % 5 - 2)).astype("<f4")) for i in range(60)],
                      TORCH_METADATA)
    f["h5"] = os.path.join(w, "model.h5")
    with h5py.File(f["h5"], "w") as h:
        h["layers/0/q"] = q
        h["layers/0/ids"] = np.arange(5, dtype=np.int64)
    f["raw"] = os.path.join(w, "q.bin")
    q.astype("<f4").tofile(f["raw"])
    f["short"] = os.path.join(w, "short.bin")
    with open(f["short"], "wb") as fh:
        fh.write(bytes(12))
    bad = b'{"w":{"dtype":"F32","shape":[1],}}'
    f["corrupt"] = os.path.join(w, "corrupt.safetensors")
    with open(f["corrupt"], "wb") as fh:
        fh.write(struct.pack("<Q", len(bad)) + bad)
    f["corrupt_off"] = 8 + bad.index(b",}") + 1
    f["trunc"] = os.path.join(w, "trunc.safetensors")
    with open(f["trunc"], "wb") as fh:
        fh.write(b"\x10\x00\x00")
    f["fake_h5"] = os.path.join(w, "fake.h5")
    with open(f["fake_h5"], "w") as fh:
        fh.write("this is not HDF5\n")
    f["past"] = os.path.join(w, "past.safetensors")
    hdr = b'{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}'
    with open(f["past"], "wb") as fh:
        fh.write(struct.pack("<Q", len(hdr)) + hdr + bytes(8))
    f["past_off"] = 8 + hdr.index(b"[0,16]")
    return f


def error_cases(f, w):
    names = None
    rc, out, err = run("--formats", "nope", f["model"])
    m = re.search(r"\(valid: (.*)\)$", err.strip())
    if check(m is not None, f"format list in {err!r}"):
        names = [n.strip() for n in m.group(1).split(",")]
        check(set(DEFAULT_FORMATS) <= set(names) and "nvfp4-2d" in names, f"valid formats {names}")
    cases = [
        ("missing file", [os.path.join(w, "missing.safetensors")],
         r"^qerr: .*/missing\.safetensors: No such file or directory$"),
        ("corrupt header", [f["corrupt"]],
         rf"^qerr: .*corrupt\.safetensors: byte {f['corrupt_off']}: invalid JSON header: expected a string key"),
        ("truncated file", [f["trunc"]], r"^qerr: .*trunc\.safetensors: byte 0: truncated file: 3 bytes"),
        ("offsets past data", [f["past"]],
         rf"^qerr: .*past\.safetensors: byte {f['past_off']}: tensor 'w': data_offsets \[0, 16\] past end of data "
         r"\(8 bytes\)$"),
        ("good file, then a bad one", [f["model"], f["corrupt"]], r"corrupt\.safetensors: byte"),
        ("unknown format", ["--formats", "bf16,fp7", f["model"]],
         r"^qerr: unknown format 'fp7' \(valid: .*bf16.*nvfp4.*\)$"),
        ("empty format list", ["--formats", ",", f["model"]], r"^qerr: --formats: no format given"),
        ("unknown option", ["--bogus", f["model"]], r"^qerr: unknown option '--bogus' \(see --help\)$"),
        ("unknown short option", ["-x", f["model"]], r"^qerr: unknown option '-x'"),
        ("typo'd option", ["--formts", "bf16", f["model"]], r"^qerr: unknown option '--formts' \(did you mean --formats\?\)$"),
        ("flag given a value", ["--csv=1", f["model"]], r"^qerr: --csv takes no value \(see --help\)$"),
        ("missing value", [f["model"], "--seed"], r"^qerr: --seed needs a value \(see --help\)$"),
        ("bad number", ["--top", "x", f["model"]], r"^qerr: --top expects an integer >= 0, not 'x'$"),
        ("negative number", ["--seed", "-1", f["model"]], r"^qerr: --seed expects an integer in 0\.\.18446744073709551615, not '-1'$"),
        ("threads 0", ["--threads", "0", f["model"]], r"^qerr: --threads expects an integer in 1\.\.256, not '0'$"),
        ("threads too many", ["--threads", "999", f["model"]], r"^qerr: --threads expects an integer in 1\.\.256, not '999'$"),
        ("bad raw spec", ["--raw", "f32:10", f["raw"]], r"^qerr: bad --raw spec 'f32:10': expected f32:ROWSxCOLS"),
        ("bad raw dtype", ["--raw", "f16:2x2", f["raw"]], r"^qerr: bad --raw spec 'f16:2x2'"),
        ("zero raw dim", ["--raw", "f32:0x4", f["raw"]], r"^qerr: bad --raw spec 'f32:0x4'"),
        ("raw dim overflow", ["--raw", "f32:99999999999x99999999999", f["raw"]], r"^qerr: bad --raw spec"),
        ("raw without file", ["--raw", "f32:2x2"], r"^qerr: --raw f32:2x2 needs a FILE after the spec$"),
        ("raw size mismatch", ["--raw", "f32:2x2", f["short"]],
         r"^qerr: .*short\.bin: size 12 bytes, but f32:2x2 needs 16$"),
        ("raw file missing", ["--raw", "f32:2x2", os.path.join(w, "nope.bin")], r"nope\.bin: No such file"),
        ("not HDF5 but .h5", [f["fake_h5"]], r"^qerr: .*fake\.h5: not an HDF5 file$"),
        ("directory", [w], r"^qerr: .*: not a regular file$"),
        ("csv and json", ["--csv", "--json", f["model"]], r"^qerr: --csv and --json exclude each other$"),
        ("bad sort key", ["--sort", "nope", f["model"]], r"^qerr: unknown --sort key 'nope' \(valid: file, tensor, "),
        ("bad regex", ["--match", "(", f["model"]], r"^qerr: --match: bad regular expression '\(': "),
        ("no inputs", [], r"^qerr: no input files \(see --help\)$"),
        ("h5 output not writable", ["--h5", os.path.join(w, "no", "dir", "x.h5"), f["model"]],
         r"^qerr: .*x\.h5: cannot create HDF5 file$"),
    ]
    for what, args, pattern in cases:
        rc, out, err = run(*args)
        check(rc == 2, f"{what}: exit {rc}, want 2")
        check(out == "", f"{what}: stdout not empty: {out[:200]!r}")
        # Notes about inputs read before the failure may precede it; the
        # error itself is one line, and the last.
        lines = [x for x in err.splitlines() if not x.startswith("qerr: note: ")]
        check(len(lines) == 1 and err.endswith(lines[0] + "\n") if lines else False,
              f"{what}: want one error line, last, got {err!r}")
        check(re.search(pattern, lines[0] if lines else "") is not None, f"{what}: {err!r} !~ {pattern!r}")
    return names


def close(a, b, rel=0.0):
    if a is None or b is None:
        return a is None and b is None
    if math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
        return (a == b) or (math.isnan(a) and math.isnan(b))
    return a == b if rel == 0 else abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def json_cases(f):
    rows, err = run_json(f["model"])
    ft = f["float_tensors"]
    check(len(rows) == len(ft) * len(DEFAULT_FORMATS), f"json rows {len(rows)}")
    check(all(list(r) == KEYS for r in rows), "json keys and their order")
    check([r["tensor"] for r in rows[::len(DEFAULT_FORMATS)]] == ft, "tensors in file order")
    check([r["format"] for r in rows[:len(DEFAULT_FORMATS)]] == DEFAULT_FORMATS, "formats in --formats order")
    by = {(r["tensor"], r["format"]): r for r in rows}
    r = by.get(("layers.1.attn.q.weight", "mxfp4"), {})
    check(r.get("rows") == 32 and r.get("cols") == 32, f"3-d tensor is 32 x 32: {r.get('rows')}, {r.get('cols')}")
    r = by.get(("scalar", "bf16"), {})
    check(r.get("rows") == 1 and r.get("cols") == 1, "0-d tensor is 1 x 1")
    r = by.get(("bias", "bf16"), {})
    check(r.get("rows") == 1 and r.get("cols") == 30, "1-d tensor is 1 x n")
    r = by.get(("exact", "bf16"), {})
    check(r.get("snr_db", 0) is None and r.get("rel_l2") == 0 and r.get("cosine") == 1, f"exact bf16: {r}")
    r = by.get(("layers.0.attn.q.weight", "mxfp4"), {})
    check(r.get("amax") == 40.0 and r.get("rel_l2", 0) > 0.05 and r.get("n_blocks") == 64 * 4, f"mxfp4 q: {r}")
    check(r.get("block_scale_min") is not None, "block scale stats present for mxfp4")
    r = by.get(("layers.0.attn.q.weight", "bf16"), {})
    check(r.get("block_scale_min", 0) is None and r.get("n_blocks") == 0, "no block stats for bf16 (null)")
    check(all(x["file"] == f["model"] for x in rows), "file key")
    check("tensor 'step': dtype I64 is not read, skipped" in err, f"I64 note: {err!r}")
    check("tensor 'empty' is empty, skipped" in err, f"empty note: {err!r}")

    # text: same numbers at text precision
    rc, out, _ = run(f["model"])
    lines = out.splitlines()
    head = lines[0].split() if lines else []
    check(rc == 0 and head[:6] == ["tensor", "format", "rows", "cols", "rel_l2", "snr_db"], f"text header {head}")
    check(len(lines) == len(rows) + 1, f"text lines {len(lines)}")
    ok = True
    for line, r in zip(lines[1:], rows):
        cells = line.split()
        ok &= cells[0] == r["tensor"] and cells[1] == r["format"] and float(cells[4]) == float(f"{r['rel_l2']:.4g}")
        ok &= cells[5] == ("inf" if r["snr_db"] is None else f"{r['snr_db']:.2f}")
    check(ok, "text rows agree with json")
    widths = {len(line) for line in lines if not line.endswith(" ")}
    check(len(lines[0]) >= max(len(x.rstrip()) for x in lines[1:]) - 20, f"aligned text table {widths}")

    # csv: header, rows, and every value equal to the json one
    rc, out, _ = run("--csv", f["model"])
    recs = list(csv.reader(io.StringIO(out)))
    check(rc == 0 and recs and recs[0] == KEYS, f"csv header {recs[0] if recs else None}")
    check(len(recs) == len(rows) + 1, f"csv rows {len(recs)}")
    ok = True
    for rec, r in zip(recs[1:], rows):
        for k, v in zip(KEYS, rec):
            if isinstance(r[k], str):
                ok &= v == r[k]
            elif r[k] is None:
                ok &= v in ("", "inf")
            else:
                ok &= float(v) == r[k]
    check(ok, "csv values equal json values")
    return rows


def h5_cases(f, w, rows):
    out_h5 = os.path.join(w, "report.h5")
    rc, out, err = run("--json", "--h5", out_h5, f["model"])
    check(rc == 0 and json.loads(out) == rows, "--h5 leaves --json output unchanged")
    with h5py.File(out_h5, "r") as h:
        t = h["qerr"][()]
        check(list(t.dtype.names) == KEYS, f"h5 columns {t.dtype.names}")
        check(len(t) == len(rows), f"h5 rows {len(t)}")
        ok = True
        for rec, r in zip(t, rows):
            for k in KEYS:
                v = rec[k]
                if isinstance(r[k], str):
                    ok &= v.decode() == r[k]
                elif r[k] is None:
                    ok &= bool(np.isnan(v) or (k == "snr_db" and v == np.inf))
                else:
                    ok &= float(v) == r[k]
        check(ok, "h5 values equal json values")
        a = h["qerr"].attrs
        check(str(a.get("tool", "")).startswith("qerr "), f"tool attr {a.get('tool')}")
        check("--h5" in str(a.get("command", "")), "command attr")
        check(str(a.get("seed")) == "1", "seed attr")
    rc, out, err = run("--summary", "--json", "--h5", out_h5, f["model"])
    with h5py.File(out_h5, "r") as h:
        s = h["qerr_summary"][()]
        check([x.decode() for x in s["format"]] == DEFAULT_FORMATS, "h5 summary formats")
        check(rc == 0 and [x["mean_rel_l2"] for x in json.loads(out)] == list(s["mean_rel_l2"]),
              "h5 summary = json summary")


def feature_cases(f, rows):
    many = f["many"]
    # threads: byte-identical output, whatever the format
    for extra in (["--json", "--rht", "--sr"], [], ["--csv", "--formats", "nvfp4,nvfp4-2d,mxfp8-e5m2"]):
        r1 = run("--threads", "1", *extra, many, f["model"])
        r2 = run("--threads", "2", *extra, many, f["model"])
        r3 = run("--threads", "3", *extra, many, f["model"])
        check(r1[0] == 0 and r1[1] == r2[1] == r3[1] and r1[1], f"--threads 1/2/3 identical for {extra}")

    # --match
    got, _ = run_json("--match", "attn", f["model"])
    check({r["tensor"] for r in got} == {"layers.0.attn.q.weight", "layers.1.attn.q.weight"}, "--match attn")
    got, _ = run_json("--match", r"^layers\.0\.", f["model"])
    check({r["tensor"] for r in got} == {"layers.0.attn.q.weight", "layers.0.mlp.up.weight"}, "--match anchored")
    got, err = run_json("--match", "^nothing$", f["model"])
    check(got == [] and "no tensors to report" in err, "--match nothing: [] and a note")

    # --sort / --top
    got, _ = run_json("--sort", "rel_l2", "--top", "4", f["model"])
    want = sorted(rows, key=lambda r: -r["rel_l2"])[:4]
    check([(r["tensor"], r["format"]) for r in got] == [(r["tensor"], r["format"]) for r in want],
          "--sort rel_l2 --top 4: the 4 largest, descending")
    got, _ = run_json("--sort", "snr_db", f["model"])
    snr = [r["snr_db"] for r in got]
    finite = [x for x in snr if x is not None]
    check(finite == sorted(finite) and snr[-1] is None and snr[:len(finite)] == finite,
          "--sort snr_db: ascending, exact (null) last")
    got, _ = run_json("--sort", "tensor", f["model"])
    check([r["tensor"] for r in got] == sorted(r["tensor"] for r in rows), "--sort tensor ascending")
    got, _ = run_json("--sort", "rows", f["model"])
    check([(r["tensor"], r["format"]) for r in got] ==
          [(r["tensor"], r["format"]) for r in sorted(rows, key=lambda r: -r["rows"])],
          "--sort rows: descending, ties in input order")
    got, _ = run_json("--top", "0", f["model"])
    check(got == [], "--top 0")
    got, _ = run_json("--top", "3", f["model"])
    check(got == rows[:3], "--top without --sort keeps input order")

    # --summary
    got, _ = run_json("--summary", f["model"])
    check([s["format"] for s in got] == DEFAULT_FORMATS, "summary per format")
    ok = True
    for s in got:
        mine = [r for r in rows if r["format"] == s["format"]]
        snrs = [r["snr_db"] for r in mine if r["snr_db"] is not None]
        worst = max(mine, key=lambda r: r["rel_l2"])
        ok &= s["tensors"] == len(mine) and s["exact"] == len(mine) - len(snrs)
        ok &= close(s["mean_rel_l2"], sum(r["rel_l2"] for r in mine) / len(mine), 1e-12)
        ok &= close(s["mean_snr_db"], sum(snrs) / len(snrs), 1e-12)
        ok &= s["worst_tensor"] == worst["tensor"] and s["worst_rel_l2"] == worst["rel_l2"]
    check(ok, "summary means and worst tensor")
    sorted_sum, _ = run_json("--summary", "--sort", "tensor", "--top", "1", f["model"])
    check(sorted_sum == got, "summary does not depend on --sort/--top")
    rc, out, _ = run("--summary", f["model"])
    check(rc == 0 and len(out.splitlines()) == 1 + len(DEFAULT_FORMATS) and out.split()[0] == "format",
          "text summary: header and one line per format")
    rc, out, _ = run("--summary", "--csv", f["model"])
    check(rc == 0 and len(list(csv.reader(io.StringIO(out)))) == 1 + len(DEFAULT_FORMATS), "csv summary")

    # --rht / --sr / --seed
    got, err = run_json("--rht", "--formats", "nvfp4", f["model"])
    fm = {(r["tensor"], r["format"]) for r in got}
    check(("layers.0.attn.q.weight", "nvfp4+rht") in fm and ("bias", "nvfp4") in fm, "+rht rows")
    check(("bias", "nvfp4+rht") not in fm and ("scalar", "nvfp4+rht") not in fm, "+rht skipped for cols % 16")
    check("tensor 'bias': cols 30 is not a multiple of 16, skipped for +rht" in err, f"rht note: {err!r}")
    rht = {r["tensor"]: r for r in got if r["format"] == "nvfp4+rht"}
    plain = {r["tensor"]: r for r in got if r["format"] == "nvfp4"}
    q = "layers.0.attn.q.weight"
    check(rht[q]["rel_l2"] != plain[q]["rel_l2"] and rht[q]["amax"] < plain[q]["amax"],
          "RHT spreads the outlier (lower amax, different error)")
    s1, _ = run_json("--sr", "--seed", "1", "--formats", "mxfp4", f["model"])
    s1b, _ = run_json("--sr", "--seed", "1", "--formats", "mxfp4", f["model"])
    s2, _ = run_json("--sr", "--seed", "2", "--formats", "mxfp4", f["model"])
    check(s1 == s1b, "--sr is reproducible for one seed")
    check([r["format"] for r in s1[:2]] == ["mxfp4", "mxfp4+sr"], "+sr follows its format")
    diff_sr = [a["rel_l2"] != b["rel_l2"] for a, b in zip(s1, s2) if a["format"].endswith("+sr")]
    same_rn = [a == b for a, b in zip(s1, s2) if not a["format"].endswith("+sr")]
    check(any(diff_sr) and all(same_rn), "--seed changes +sr rows only")
    both, _ = run_json("--sr", "--rht", "--formats", "bf16", f["model"])
    check([r["format"] for r in both[:4]] == ["bf16", "bf16+rht", "bf16+sr", "bf16+rht+sr"], "--rht --sr variants")
    names = DEFAULT_FORMATS + ["fp8-e5m2", "nvfp4-2d"]
    got, _ = run_json("--formats", ",".join(names + ["bf16"]), "--match", "^exact$", f["model"])
    check([r["format"] for r in got] == names, "--formats: any order, duplicates dropped")


def source_cases(f):
    """The same matrix through safetensors, HDF5 and --raw gives the same metrics."""
    fields = [k for k in KEYS if k not in ("file", "tensor")]
    st, _ = run_json("--match", r"^layers\.0\.attn", f["model"])
    h5, err = run_json(f["h5"])
    raw, _ = run_json("--raw", "f32:64x128", f["raw"])
    check([r["tensor"] for r in h5[::len(DEFAULT_FORMATS)]] == ["/layers/0/q"], f"h5 names {h5[:1]}")
    check("dataset '/layers/0/ids' is not floating point (integer), skipped" in err, f"h5 int note {err!r}")
    check(raw and raw[0]["tensor"] == f["raw"] and raw[0]["rows"] == 64 and raw[0]["cols"] == 128, "raw tensor")
    strip = lambda rows: [{k: r[k] for k in fields} for r in rows]  # noqa: E731
    check(strip(st) == strip(h5) == strip(raw) and st, "safetensors, HDF5 and raw agree")
    rc, out, _ = run(f["model"], "--raw", "f32:64x128", f["raw"])
    lines = out.splitlines()
    check(rc == 0 and lines[0].split()[0] == "file" and lines[-1].split()[0] == f["raw"],
          "text shows the file column with several inputs")
    rc, out, _ = run(f["model"])
    check(rc == 0 and out.split()[0] == "tensor", "no file column with one input")


def misc_cases(f, names):
    rc, out, err = run("--version")
    check(rc == 0 and re.fullmatch(r"qerr \d+\.\d+\.\d+\n", out) is not None and err == "", f"--version {out!r}")
    rc, out, err = run("--help")
    check(rc == 0 and out.startswith("usage: qerr") and err == "", "--help on stdout, exit 0")
    for opt in ["--formats", "--rht", "--sr", "--seed", "--raw", "--csv", "--json", "--h5", "--match", "--sort",
                "--top", "--summary", "--threads", "--help", "--version"]:
        check(opt in out, f"--help mentions {opt}")
    for n in names or []:
        check(n in out, f"--help lists format {n}")
    rc2, out2, _ = run("-h")
    check(rc2 == 0 and out2 == out, "-h == --help")
    rc, out, _ = run("--formats=bf16", "--top=2", "--", f["model"])
    check(rc == 0 and len(out.splitlines()) == 3, "--opt=value and -- work")


def progress_cases(f):
    """A progress line on a terminal's stderr, never on stdout or a pipe."""
    args = [QERR, "--threads", "2", "--json", f["many"]]
    plain = subprocess.run(args, capture_output=True)
    check(plain.returncode == 0 and b"tensors" not in plain.stderr, f"no progress on a pipe: {plain.stderr[:200]!r}")
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []

    def drain():
        while True:
            try:
                b = os.read(master, 4096)
            except OSError:
                return
            if not b:
                return
            chunks.append(b)

    t = threading.Thread(target=drain)
    t.start()
    out, _ = p.communicate(timeout=120)
    t.join(timeout=10)
    os.close(master)
    tty = b"".join(chunks)
    check(p.returncode == 0 and out == plain.stdout, "stdout identical with a terminal on stderr")
    check(b"\rqerr: " in tty and b"60/60 tensors" in tty, f"progress on the terminal: {tty[:200]!r}")


def main():
    global QERR
    QERR, w = sys.argv[1], sys.argv[2]
    os.makedirs(w, exist_ok=True)
    f = fixtures(w)
    names = error_cases(f, w)
    rows = json_cases(f)
    h5_cases(f, w, rows)
    feature_cases(f, rows)
    source_cases(f)
    misc_cases(f, names)
    progress_cases(f)
    return check.summary("qerr_cli")


if __name__ == "__main__":
    sys.exit(main())
