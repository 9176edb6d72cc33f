#!/usr/bin/env python3
"""test_layout.py ROOT [--cap N] | --selftest — the house rules of the source tree.

(a) No folder holds more than N (default 6000) lines of C or CUDA directly
    (.c .h .cu .cuh .cpp files in it, not in its subfolders).
(b) The include graph between the top-level folders has no cycle, and
    neither has the graph between train/'s rooms (its subfolders). Each
    `#include "NAME"` is resolved as the compiler does here: a path relative
    to the including file if one exists there, else the folder that holds a
    file of that name (the including file's own folder first). A name held
    by no folder of the tree (a system or toolkit header) is no edge.

--selftest checks the checker: a made-up tree with a folder over the cap,
a cycle between top-level folders and one between train/'s rooms must fail
with each named, and the same tree without them must pass.

Prints the line counts and, on failure, each oversized folder or one cycle
per graph with an include that makes each of its edges; exits 1 then, 0 when
the tree keeps the rules, 2 on bad arguments.
"""
import os
import re
import sys

EXTS = (".c", ".h", ".cu", ".cuh", ".cpp")
SKIP_DIRS = {".git", "__pycache__", "node_modules"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def source_files(root):
    for d, subdirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        # build trees (build, build-cuda, ...) and hidden folders are not sources
        subdirs[:] = sorted(s for s in subdirs
                            if s not in SKIP_DIRS and not s.startswith(".") and
                            not (rel == "." and s.startswith("build")))
        for f in sorted(files):
            if f.endswith(EXTS):
                yield os.path.normpath(os.path.join(rel, f))


def count_lines(path):
    with open(path, "rb") as fh:
        return fh.read().count(b"\n")


def find_cycle(edges):
    """One cycle of the graph {node: {succ: example}} as a node list, or None."""
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def selftest():
    import contextlib
    import io
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        def put(path, text):
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as fh:
                fh.write(text)
        put("quant/q.h", "/* q */\n")
        put("train/run/r.h", '#include "m.h"\n#include "q.h"\n')
        put("train/model/m.h", "/* m */\n")
        put("kernels/k.c", '#include "r.h"\n#include <stdio.h>\n#include "cuda_fp8.h"\n')
        put("big/a.c", "x\n" * 40)

        def run(cap):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = main(["test_layout.py", root, "--cap", str(cap)])
            return rc, out.getvalue()
        rc, text = run(100)
        ok = rc == 0 and "0 failures" in text
        rc2, text2 = run(39)
        ok = ok and rc2 == 1 and "big" in text2 and "over the cap of 39 lines" in text2
        put("train/model/m.h", '#include "r.h"\n')  # a cycle between rooms
        put("quant/q.h", '#include "k.c"\n')  # quant -> kernels -> train -> quant
        rc3, text3 = run(100)
        ok = (ok and rc3 == 1 and "include cycle between top-level folders" in text3 and
              "include cycle between train/'s rooms" in text3 and "quant/q.h:1" in text3 and
              "train/model/m.h:1" in text3)
        print(text3 if not ok else "", end="")
        print(f"test_layout --selftest: {'passed' if ok else 'FAILED'}")
        return 0 if ok else 1


def main(argv):
    args = list(argv[1:])
    if args == ["--selftest"]:
        return selftest()
    cap = 6000
    if "--cap" in args:
        i = args.index("--cap")
        try:
            cap = int(args[i + 1])
        except (IndexError, ValueError):
            print("test_layout: --cap needs a whole number of lines")
            return 2
        del args[i:i + 2]
    if len(args) != 1 or not os.path.isdir(args[0]):
        print("usage: test_layout.py ROOT [--cap N] | --selftest")
        return 2
    root = os.path.abspath(args[0])
    files = list(source_files(root))

    failures = 0
    lines = {}
    for f in files:
        lines.setdefault(os.path.dirname(f) or ".", 0)
        lines[os.path.dirname(f) or "."] += count_lines(os.path.join(root, f))
    for d in sorted(lines):
        over = lines[d] > cap
        print(f"{d:28s} {lines[d]:6d}{'  over the cap of %d lines' % cap if over else ''}")
        failures += over

    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)

    def resolve(src, name):
        here = os.path.normpath(os.path.join(os.path.dirname(src), name))
        if os.path.isfile(os.path.join(root, here)):
            return here
        cands = by_name.get(os.path.basename(name), [])
        if not cands:
            return None
        same = [c for c in cands if os.path.dirname(c) == os.path.dirname(src)]
        return (same or cands)[0]

    def top(p):
        return p.split(os.sep)[0] if os.sep in p else "."

    def room(p):  # train/ROOM/... -> train/ROOM
        parts = p.split(os.sep)
        return os.sep.join(parts[:2]) if len(parts) > 2 and parts[0] == "train" else None

    graphs = {"top-level folders": {}, "train/'s rooms": {}}
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            for no, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                dst = resolve(f, m.group(1))
                if dst is None:
                    continue
                where = f"{f}:{no}: #include \"{m.group(1)}\" ({dst})"
                if top(f) != top(dst):
                    graphs["top-level folders"].setdefault(top(f), {}).setdefault(top(dst), where)
                if room(f) and room(dst) and room(f) != room(dst):
                    graphs["train/'s rooms"].setdefault(room(f), {}).setdefault(room(dst), where)

    for title, edges in graphs.items():
        arrows = ", ".join(f"{a} -> {b}" for a in sorted(edges) for b in sorted(edges[a]))
        print(f"includes between {title}: {arrows or 'none'}")
        cycle = find_cycle(edges)
        if cycle:
            failures += 1
            print(f"include cycle between {title}: {' -> '.join(cycle)}")
            for a, b in zip(cycle, cycle[1:]):
                print(f"  {edges[a][b]}")
    print(f"test_layout: {len(files)} files, {len(lines)} folders, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
