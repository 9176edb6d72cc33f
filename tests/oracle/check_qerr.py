#!/usr/bin/python3
"""check_qerr.py -- check `qerr --json` against the numpy reference
(ref_formats.py) on a safetensors file.

  check_qerr.py QERR FILE [--formats LIST] [--generate SEED] [-v]

--generate SEED first writes FILE with tools/gen_demo_tensors.py (seed SEED).
For every tensor and format: rel_l2 must agree to 1e-6 (relative), amax
exactly (as float32), sat_frac and zero_frac to 1e-9 (absolute), and snr_db
must be null exactly when the reference is exact. snr_db (0.01 dB), cosine
(1e-6) and max_abs (0.1%) disagreements are reported as warnings.
With nvfp4-4o6 among the formats, its rel_l2 (qerr's) must also be <= the
reference's NVFP4 under the same tensor scale (amax -> 6 * 256) on every
tensor: Four Over Six picks, per block, the better of that and the block
scaled to 4.
Prints a table of the largest differences per format; exits 1 on any
disagreement, 2 if qerr fails to run or its output cannot be parsed.
"""
import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))

import ref_formats as ref  # noqa: E402
import gen_demo_tensors as gen  # noqa: E402

DEFAULT_FORMATS = ("bf16,fp8-e4m3,fp8-e5m2,mxfp8,mxfp4,nvfp4,nvfp4-2d,mxfp8-rceil,mxfp4-rceil,fp8-block,"
                   "fp8-block-2d,fp8-block-pow2,fp8-block-2d-pow2,nvfp4-4o6,mxfp6-e2m3,mxfp6-e3m2,nvfp4-row")
REL_TOL = 1e-6
FRAC_TOL = 1e-9


def rel_diff(a, b):
    """|a-b| / |b|, with 0 for equal values (zeros and infinities included)."""
    if a is None or b is None:
        return 0.0 if a is b else math.inf
    a, b = float(a), float(b)
    if a == b:
        return 0.0
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return math.inf
    return abs(a - b) / max(abs(b), 1e-300)


def as2d(a):
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(1, -1)
    return a.reshape(-1, a.shape[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("qerr")
    ap.add_argument("file")
    ap.add_argument("--formats", default=DEFAULT_FORMATS)
    ap.add_argument("--generate", type=int, metavar="SEED")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every tensor")
    args = ap.parse_args(argv)

    if args.generate is not None:
        gen.main(["--out", args.file, "--seed", str(args.generate)])

    cmd = [args.qerr, "--json", "--formats", args.formats, args.file]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        print(f"FAIL: {' '.join(cmd)} exited {p.returncode}\n{p.stderr}", file=sys.stderr)
        return 2
    try:
        rows = json.loads(p.stdout)
        assert isinstance(rows, list)
    except Exception as e:  # noqa: BLE001
        print(f"FAIL: qerr --json output is not a JSON array: {e}\n{p.stdout[:2000]}", file=sys.stderr)
        return 2

    tensors, _ = gen.read_safetensors(args.file)
    formats = args.formats.split(",")
    errors, warnings = [], []
    seen = set()
    stat = {f: {"n": 0, "rel": 0.0, "rel_at": "", "sat": 0.0, "zero": 0.0, "amax_bad": 0,
                "snr": 0.0, "bad": 0} for f in formats}
    cache = {}
    four_six = {"n": 0, "better": 0, "gain": 0.0}
    for r in rows:
        name, fmt = r.get("tensor"), r.get("format")
        key = (name, fmt)
        if name not in tensors:
            errors.append(f"{name}/{fmt}: qerr reports a tensor that is not in the file")
            continue
        if fmt not in stat:
            errors.append(f"{name}/{fmt}: qerr reports a format that was not asked for")
            continue
        if key in seen:
            errors.append(f"{name}/{fmt}: reported twice")
        seen.add(key)
        x = as2d(tensors[name])
        if (r.get("rows"), r.get("cols")) != x.shape:
            errors.append(f"{name}/{fmt}: qerr shape {r.get('rows')}x{r.get('cols')}, "
                          f"expected {x.shape[0]}x{x.shape[1]} (rows = prod(shape[:-1]))")
            if isinstance(r.get("rows"), int) and isinstance(r.get("cols"), int) \
                    and r["rows"] * r["cols"] == x.size:
                x = x.reshape(r["rows"], r["cols"])
            else:
                continue
        if key not in cache:
            cache[key] = ref.metrics(fmt, x)
        m = cache[key]
        s = stat[fmt]
        s["n"] += 1
        bad = []
        d = rel_diff(r.get("rel_l2"), m["rel_l2"])
        if d > s["rel"]:
            s["rel"], s["rel_at"] = d, name
        if d > REL_TOL:
            bad.append(f"rel_l2 qerr {r.get('rel_l2')!r} ref {m['rel_l2']!r} (rel diff {d:.3g})")
        qa = r.get("amax")
        if qa is None or np.float32(qa) != np.float32(m["amax"]):
            s["amax_bad"] += 1
            bad.append(f"amax qerr {qa!r} ref {m['amax']!r}")
        for k, col in (("sat_frac", "sat"), ("zero_frac", "zero")):
            v = r.get(k)
            dd = math.inf if v is None else abs(float(v) - m[k])
            s[col] = max(s[col], dd)
            if not dd <= FRAC_TOL:
                n = x.size if k == "sat_frac" else None
                extra = f" ({m['n_sat']} of {n} saturated in ref)" if n else \
                        f" ({m['n_flushed']} flushed in ref)"
                bad.append(f"{k} qerr {v!r} ref {m[k]!r}{extra}")
        qs, rs = r.get("snr_db"), m["snr_db"]
        if (qs is None) != (rs is None):
            bad.append(f"snr_db qerr {qs!r} ref {rs!r} (null exactly when exact)")
        elif qs is not None:
            dd = abs(float(qs) - rs) if math.isfinite(rs) else (0.0 if float(qs) == rs else math.inf)
            s["snr"] = max(s["snr"], dd)
            if dd > 0.01:
                warnings.append(f"{name}/{fmt}: snr_db qerr {qs!r} ref {rs!r}")
        if r.get("cosine") is not None and abs(float(r["cosine"]) - m["cosine"]) > 1e-6:
            warnings.append(f"{name}/{fmt}: cosine qerr {r['cosine']!r} ref {m['cosine']!r}")
        if r.get("max_abs") is not None and rel_diff(r["max_abs"], m["max_abs"]) > REL_TOL:
            warnings.append(f"{name}/{fmt}: max_abs qerr {r['max_abs']!r} ref {m['max_abs']!r}")
        if fmt == "nvfp4-4o6" and r.get("rel_l2") is not None:
            y6, _ = ref.q_nvfp4_fast(np.ascontiguousarray(x, dtype=np.float32), 1, 16, scale_max=256.0)
            fin = np.isfinite(x)
            xf = x[fin].astype(np.float64)
            d6 = xf - y6[fin].astype(np.float64)
            ex = float(np.dot(xf, xf))
            rel6 = math.sqrt(float(np.dot(d6, d6))) / math.sqrt(ex) if ex > 0 else 0.0
            four_six["n"] += 1
            four_six["better"] += float(r["rel_l2"]) < rel6
            four_six["gain"] = max(four_six["gain"], 1.0 - float(r["rel_l2"]) / rel6 if rel6 > 0 else 0.0)
            if not float(r["rel_l2"]) <= rel6 * (1 + 1e-12):
                bad.append(f"rel_l2 {r['rel_l2']!r} above always-6's {rel6!r} under the same tensor scale")
        if bad:
            s["bad"] += 1
            errors += [f"{name}/{fmt} ({x.shape[0]}x{x.shape[1]}): {b}" for b in bad]
        if args.verbose:
            print(f"  {name:34s} {fmt:10s} rel_l2 qerr {r.get('rel_l2')!s:>22s} ref {m['rel_l2']!r:>22s}"
                  f"  sat {m['sat_frac']:.3g} zero {m['zero_frac']:.3g}")
    for name in tensors:
        for fmt in formats:
            if (name, fmt) not in seen:
                errors.append(f"{name}/{fmt}: missing from qerr's output")

    print(f"qerr vs numpy reference on {args.file}: {len(tensors)} tensors")
    print(f"{'format':17s} {'n':>3s} {'max rel diff rel_l2':>20s} {'max |d sat|':>12s} "
          f"{'max |d zero|':>12s} {'amax bad':>8s} {'max d snr':>10s} {'status':>6s}  worst tensor")
    for f in formats:
        s = stat[f]
        ok = "ok" if s["bad"] == 0 and s["n"] == len(tensors) else "FAIL"
        print(f"{f:17s} {s['n']:3d} {s['rel']:20.3g} {s['sat']:12.3g} {s['zero']:12.3g} "
              f"{s['amax_bad']:8d} {s['snr']:10.3g} {ok:>6s}  {s['rel_at']}")
    if four_six["n"]:
        print(f"nvfp4-4o6 <= always-6 under the same tensor scale on {four_six['n']} tensors: strictly better on "
              f"{four_six['better']}, best relative gain {four_six['gain']:.3f}")
    for w in warnings:
        print("warning:", w)
    for e in errors:
        print("DISAGREE:", e)
    print("PASS" if not errors else f"FAIL: {len(errors)} disagreement(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
