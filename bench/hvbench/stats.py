"""Medians and spreads, and the way BENCHMARKS.md prints them."""
import math
import statistics


def clean(xs):
    return [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]


def median(xs):
    xs = clean(xs)
    return statistics.median(xs) if xs else float("nan")


def spread(xs):
    """(min, max) of the values (rounds are few: min-max is the honest spread)."""
    xs = clean(xs)
    return (min(xs), max(xs)) if xs else (float("nan"), float("nan"))


def fmt(x, digits=1):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if abs(x) >= 100000:
        return f"{x:,.0f}".replace(",", " ")
    return f"{x:.{digits}f}"


def ms(xs, digits=1, unit=""):
    """'median (min–max)' of a list of per-round values."""
    xs = clean(xs)
    if not xs:
        return "n/a"
    lo, hi = spread(xs)
    if len(xs) == 1:
        return f"{fmt(xs[0], digits)}{unit}"
    return f"{fmt(median(xs), digits)}{unit} ({fmt(lo, digits)}–{fmt(hi, digits)})"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)
