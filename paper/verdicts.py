"""verdicts.py — every sentence of the paper that judges a number, written
from its interval, never from a mean alone:

  - a gap whose 95% interval excludes 0 is stated as a cost (or a gain),
    with the interval, when it also passes the family's multiplicity
    control (Holm across the gaps of a table, paper/intervals.py); one whose
    interval excludes 0 but whose adjusted p-value does not pass is written
    as unresolved, with the reason;
  - a gap whose interval includes 0 is written as unresolved, with the
    interval;
  - a gap measured on one seed has no interval and is written as such;
  - a difference between two recipes is judged by the interval of the
    per-seed difference of their paired gaps (the same seeds), not by
    comparing their means;
  - a block's share of a gap (per-layer attribution) is stated only with
    its Fieller interval, which is unbounded when the full gap is not
    resolved: then the share is written as unknown, with the reason;
  - a trend along an axis (tokens per parameter, model size) is a paired
    contrast: the per-seed slope of the gap per doubling of the axis, with
    its t interval over seeds; it grows or shrinks only when that interval
    excludes 0 (and passes the family's control), otherwise it is
    unresolved, with the interval;
  - a measured number set beside a published one says where the published
    value lies against the measured interval, and whether the measurement
    itself is resolved.
The wording rule (unqualified()): no sentence says grows, shrinks, larger,
smaller or "as published" unless it also says resolved or unresolved or
gives an interval [lo, hi].

The functions return plain text ("%" unescaped); gen_tables.py escapes it
for LaTeX. tests/paper/test_paper.py checks them on synthetic summaries."""
import math
import re


def _num(x, unit):
    return f"{x:+.2f}{unit}" if unit == "%" else f"{x:+.3f}{unit}"


def _ci(lo, hi, unit):
    return f"95% CI [{_num(lo, unit)}, {_num(hi, unit)}]"


def _held_back(p_adj, family):
    """The clause for an interval that excludes 0 whose Holm-adjusted p-value
    does not pass (None when it passes or no family was given)."""
    if p_adj is None or not math.isfinite(p_adj) or p_adj <= 0.05:
        return None
    return (f"its interval excludes 0, but not after Holm's correction across the {family} verdicts of its "
            f"family (adjusted p = {p_adj:.2f}), so it is unresolved")


def _passed(p_adj, family):
    if p_adj is None or not math.isfinite(p_adj):
        return ""
    return f"; Holm-adjusted p = {p_adj:.2g} across {family} verdicts"


def gap(label, mean, lo, hi, n, base="BF16", unit="%", noise=None, p_adj=None, family=None):
    """A recipe's gap to the baseline. noise: the noise floor's rms (same
    unit) to compare a resolved gap with, or None. p_adj, family: the gap's
    Holm-adjusted p-value and the size of its family, or None."""
    if mean is None or not math.isfinite(mean):
        return f"{label}: no finished run with a finished {base} partner."
    if n < 2 or not (math.isfinite(lo) and math.isfinite(hi)):
        return (f"{label} ends {_num(mean, unit)} from {base} on {n} seed: no interval, so the gap is "
                f"unresolved.")
    held = _held_back(p_adj, family) if (lo > 0 or hi < 0) else None
    if held:
        return f"{label}'s gap to {base} ({_num(mean, unit)}, {_ci(lo, hi, unit)}, {n} seeds): {held}."
    if lo > 0:
        s = (f"{label} costs {_num(mean, unit)} against {base} ({_ci(lo, hi, unit)}, {n} seeds"
             f"{_passed(p_adj, family)}): resolved.")
    elif hi < 0:
        s = (f"{label} ends {_num(mean, unit)} below {base} ({_ci(lo, hi, unit)}, {n} seeds"
             f"{_passed(p_adj, family)}): resolved.")
    else:
        return (f"{label}'s gap to {base} ({_num(mean, unit)}, {_ci(lo, hi, unit)}, {n} seeds) is unresolved: "
                f"the interval includes 0.")
    if noise is not None and math.isfinite(noise) and abs(mean) <= noise:
        s = s[:-len("resolved.")] + f"resolved, but no larger than the noise floor ({noise:.2f}{unit} rms)."
    return s


def gaps(items, base="BF16", unit="%"):
    """Several gaps of one table: each resolved one in its own sentence
    (gap()), the unresolved ones (interval through 0, or no interval) folded
    into one sentence that lists each with its interval, so a table of
    unresolved rows is not retold row by row. items: (label, mean, lo, hi,
    n) tuples, optionally with p_adj and family."""
    out, folded = [], []
    for it in items:
        label, mean, lo, hi, n = it[:5]
        p_adj, family = (it[5], it[6]) if len(it) > 6 else (None, None)
        t = gap(label, mean, lo, hi, n, base=base, unit=unit, p_adj=p_adj, family=family)
        if "unresolved" in t and mean is not None and math.isfinite(mean):
            ci = f"[{_num(lo, unit)}, {_num(hi, unit)}]" if math.isfinite(lo) and math.isfinite(hi) else "no interval"
            folded.append((f"{label} {_num(mean, unit)} {ci}", t))
        else:
            out.append(t)
    if len(folded) == 1:
        out.append(folded[0][1])
    elif folded:
        out.append(f"Unresolved against {base} (each interval includes 0, or there is none): " +
                   "; ".join(f for f, _ in folded) + ".")
    return " ".join(out)


def within(label, mean, lo, hi, n, bound, base="BF16", unit="%"):
    """Whether a gap is shown to stay within +-bound: only when the whole
    interval does."""
    if n < 2 or not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{label} ends {_num(mean, unit)} from {base} on {n} seed: too few seeds to bound its gap."
    if -bound < lo and hi < bound:
        return (f"{label} stays within {bound:g}{unit} of {base}: {_num(mean, unit)} ({_ci(lo, hi, unit)}, "
                f"{n} seeds).")
    return (f"{label} is not shown to stay within {bound:g}{unit} of {base}: {_num(mean, unit)} "
            f"({_ci(lo, hi, unit)}, {n} seeds) reaches past it.")


def compare(a, b, mean, lo, hi, n, unit="%", what="gap", p_adj=None, family=None):
    """a's gap minus b's, paired by seed: mean and interval of the per-seed
    differences (p_adj, family: as in gap())."""
    if n < 2 or not (math.isfinite(lo) and math.isfinite(hi)):
        return f"Whether {a}'s {what} differs from {b}'s is unresolved: {n} paired seed(s), no interval."
    held = _held_back(p_adj, family) if (lo > 0 or hi < 0) else None
    if held:
        return (f"{a}'s {what} minus {b}'s is {_num(mean, unit)} ({_ci(lo, hi, unit)}, {n} paired seeds): "
                f"{held}.")
    if lo > 0:
        return (f"{a}'s {what} is larger than {b}'s by {_num(mean, unit)} ({_ci(lo, hi, unit)}, {n} paired "
                f"seeds): resolved.")
    if hi < 0:
        return (f"{a}'s {what} is smaller than {b}'s by {_num(-mean, unit)[1:]} ({_ci(lo, hi, unit)} for "
                f"{a} minus {b}, {n} paired seeds): resolved.")
    return (f"The difference between {a}'s and {b}'s {what} ({_num(mean, unit)}, {_ci(lo, hi, unit)}, {n} paired "
            f"seeds) is unresolved: the interval includes 0.")


def trend(label, mean, lo, hi, n, xname, unit="%", p_adj=None, family=None):
    """Whether a gap grows or shrinks along an axis, from its paired slope
    (intervals.paired_slope): mean and t interval over seeds of each seed's
    least-squares change of the gap per doubling of xname."""
    per = f"per doubling of {xname}"
    if n < 2 or not (math.isfinite(lo) and math.isfinite(hi)):
        return (f"{label}: the change {per} has no interval ({n} seed(s) with two or more {xname} values), so "
                "the trend is unresolved.")
    ci = f"{_num(mean, unit)} {per}, {_ci(lo, hi, unit)}, {n} seeds paired"
    held = _held_back(p_adj, family) if (lo > 0 or hi < 0) else None
    if held:
        return f"{label} changes by {ci}: {held}."
    if lo > 0:
        return f"{label} grows with {xname} ({ci}{_passed(p_adj, family)}): resolved."
    if hi < 0:
        return f"{label} shrinks with {xname} ({ci}{_passed(p_adj, family)}): resolved."
    return f"{label} changes by {ci}: the trend is unresolved (the interval includes 0)."


_JUDGING = re.compile(r"\b(grows?|grew|growing|shrinks?|shrank|shrinking|larger|smaller)\b|as published", re.I)
_QUALIFIED = re.compile(r"\bresolved\b|\bunresolved\b|\[\s*[-+\u2212]?[0-9.]+[^\]\[]*,\s*[-+\u2212]?[0-9.]+[^\]\[]*\]")


def sentences(text):
    """Plain text split into sentences (at a period, ? or ! followed by
    space and a capital, a digit or a parenthesis, or the end)."""
    text = re.sub(r"\s+", " ", text)
    return [x.strip() for x in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9(\\])", text) if x.strip()]


def unqualified(text):
    """The sentences of text that say grows, shrinks, larger, smaller or "as
    published" without also saying resolved or unresolved or giving an
    interval [lo, hi]: the wording rule's violations (empty when it holds)."""
    return [x for x in sentences(text) if _JUDGING.search(x) and not _QUALIFIED.search(x)]


def _pct1(x):
    return f"{x:+.1f}%"


def share(label, block, mean, lo, hi, n, method):
    """Block `block`'s share of `label`'s gap (per-layer attribution), in %
    of the full gap, with its paired Fieller interval; method is qsweep's
    share_method: fieller, unbounded, none (one seed) or kept."""
    what = f"block {block}" if block != "sum" else "the blocks' gaps added up"
    if method == "kept":
        return f"{label} keeps block {block} in BF16: it carries none of the gap by construction."
    if mean is None or not math.isfinite(mean):
        return f"{label}, {what}: no finished pair of runs."
    if method == "none" or n < 2:
        return f"{label}, {what}: {_pct1(mean)} of the gap on {n} seed, no interval: unresolved."
    if method == "unbounded" or not (math.isfinite(lo) and math.isfinite(hi)):
        return (f"{label}, {what}: {_pct1(mean)} of the gap, but its interval is unbounded because the full gap "
                f"itself is unresolved ({n} seeds): the share is unknown.")
    ci = f"95% CI [{_pct1(lo)}, {_pct1(hi)}], {n} seeds"
    if block == "sum":
        if lo <= 100 <= hi:
            return (f"{label}'s per-block gaps add up to {_pct1(mean)} of its full gap ({ci}): consistent with "
                    f"the blocks' costs adding up.")
        return (f"{label}'s per-block gaps add up to {_pct1(mean)} of its full gap ({ci}): resolved away from 100%, "
                f"so the blocks' costs {'compound' if hi < 100 else 'overlap'} rather than add.")
    if lo > 0:
        return f"{label}, {what}: carries {_pct1(mean)} of the gap ({ci}): resolved."
    if hi < 0:
        return f"{label}, {what}: reduces the gap by {_pct1(-mean)[1:]} of it ({ci}): resolved."
    return f"{label}, {what}: its share ({_pct1(mean)}, {ci}) is unresolved: the interval includes 0."


def published(label, pub, mean, lo, hi, n, unit=" nats"):
    """A measured gap beside a published one (a number, or a (low, high)
    range): where the published value lies against the measured 95%
    interval, and whether the measured gap is resolved from 0."""
    ptxt = f"{pub[0]:+.3f} to {pub[1]:+.3f}{unit}" if isinstance(pub, tuple) else f"{pub:+.3f}{unit}"
    plo, phi = (pub if isinstance(pub, tuple) else (pub, pub))
    if mean is None or not math.isfinite(mean):
        return f"{label}: not measured here (published {ptxt})."
    if n < 2 or not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{label}: {_num(mean, unit)} on {n} seed, no interval (published {ptxt}): unresolved."
    ci = f"95% CI [{_num(lo, unit)}, {_num(hi, unit)}], {n} seeds"
    res = "resolved above 0" if lo > 0 else "resolved below 0" if hi < 0 else "unresolved (the interval includes 0)"
    where = ("inside the interval" if lo <= plo and phi <= hi else "above the interval" if plo > hi
             else "below the interval" if phi < lo else "overlapping the interval")
    return f"{label}: {_num(mean, unit)} ({ci}), {res}; the published {ptxt} lies {where}."
