#!/usr/bin/env python3
"""check_paper.py — the built paper's checks, run by paper/build.sh after
LaTeX and by tests/paper/test_paper.py (layout, wording) on known inputs:

    check_paper.py log LATEX.log        the layout: every "Overfull \\hbox"
                                        or "\\vbox" wider than 5 pt and every
                                        "Float too large" warning, one line
                                        each; exit 1 if any
    check_paper.py text PAPER.tex MACROS.tex
                                        the wording rule of paper/verdicts.py
                                        over the paper's prose with every
                                        \\qp{key}{field} expanded from the
                                        generated macros: each sentence that
                                        says grows, shrinks, larger, smaller
                                        or "as published" without resolved,
                                        unresolved or an interval [lo, hi];
                                        exit 1 if any

Why a separate check: LaTeX only warns about boxes that spill into the
other column or floats cut off at the page's foot, and the paper's prose is
assembled from generated pieces that no single function sees whole."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verdicts  # noqa: E402

LIMIT_PT = 5.0


def log_problems(text):
    """The layout problems of a LaTeX log: [(kind, detail)]."""
    out = []
    for m in re.finditer(r"Overfull \\([hv])box \(([0-9.]+)pt too (wide|high)\)([^\n]*)", text):
        if float(m.group(2)) > LIMIT_PT:
            out.append(("overfull", f"\\{m.group(1)}box {m.group(2)} pt too {m.group(3)}{m.group(4)}"))
    for m in re.finditer(r"Float too large for page by ([0-9.]+)pt([^\n]*)", text):
        out.append(("float", f"float too large for the page by {m.group(1)} pt{m.group(2)}"))
    return out


def macros_of(path):
    """{(key, field): value} of gen_tables.py's macros.tex."""
    out = {}
    pat = re.compile(r"\\expandafter\\def\\csname qp@([^@]*)@([^\\]*)\\endcsname\{(.*)\}$")
    with open(path) as f:
        for line in f:
            m = pat.match(line.rstrip("\n"))
            if m:
                out[(m.group(1), m.group(2))] = m.group(3)
    return out


def prose(tex, macros):
    """The paper's running text: macros expanded, comments, floats and math
    dropped, commands reduced to their text."""
    tex = re.sub(r"(?<!\\)%.*", "", tex)
    tex = re.sub(r"\\qp\{([^}]*)\}\{([^}]*)\}", lambda m: macros.get((m.group(1), m.group(2)), "??"), tex)
    tex = tex.split("\\begin{document}", 1)[-1]
    tex = re.sub(r"\\begin\{(figure\*?|table\*?)\}.*?\\end\{\1\}", " ", tex, flags=re.S)
    tex = re.sub(r"\$[^$]*\$", "x", tex)
    tex = re.sub(r"\\(?:ref|label|input|includegraphics|cite)\{[^}]*\}", "1", tex)
    tex = re.sub(r"\\[a-zA-Z]+\*?(\[[^\]]*\])?", " ", tex)
    tex = tex.replace("{", "").replace("}", "").replace("~", " ").replace("\\%", "%").replace("--", "-")
    return tex


def main(argv):
    if len(argv) >= 3 and argv[1] == "log":
        with open(argv[2], errors="replace") as f:
            probs = log_problems(f.read())
        for kind, detail in probs:
            print(f"check_paper: {kind}: {detail}")
        return 1 if probs else 0
    if len(argv) >= 4 and argv[1] == "text":
        with open(argv[2]) as f:
            tex = f.read()
        bad = verdicts.unqualified(prose(tex, macros_of(argv[3])))
        for x in bad:
            print(f"check_paper: a sentence breaks the wording rule: {x}")
        return 1 if bad else 0
    print("usage: check_paper.py log LATEX.log | text PAPER.tex MACROS.tex", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
