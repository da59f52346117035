#!/usr/bin/env python3
"""Report time and memory of two hvprof binaries side by side on synthetic recordings of growing
length (bench_mkrecording: the sampler's writer and record layout, the test guest's real
stacks), each format run by both builds in turn, round by round. Prints a markdown table of wall
time and peak RSS (os.wait4); nothing fails on a number. A size the base cannot load in this
host's memory is skipped for it (--before-max).

    bench/report_compare.py --top . --build BUILD --before BIN_A --after BIN_B \
        [--samples 1000000,10000000,100000000] [--before-max 10000000] [--rounds 3]
"""
import argparse
import os
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hvbench import runs  # noqa: E402
from hvbench.stats import median  # noqa: E402

FORMATS = ("top", "folded", "pprof")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", required=True)
    ap.add_argument("--build", required=True, help="build directory (bench_mkrecording, guest)")
    ap.add_argument("--before", required=True, help="the base's hvprof binary")
    ap.add_argument("--after", required=True, help="the change's hvprof binary")
    ap.add_argument("--samples", default="1000000,10000000,100000000")
    ap.add_argument("--before-max", type=int, default=10000000,
                    help="the largest recording the base is given (its memory grows with it)")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    top = os.path.abspath(a.top)
    build = os.path.abspath(a.build)
    progs = os.path.join(build, "tests", "guest", "progs")
    kernel = os.path.join(build, "tests", "guest", "hvprof-guest.elf")
    rows = []
    with tempfile.TemporaryDirectory(prefix="hvprof-report-compare-") as tmp:
        r = runs.Runner(top, build, tmp)
        for n in (int(x) for x in a.samples.split(",")):
            rec = os.path.join(tmp, "rec.fxt")
            r.run(f"synthetic recording, {n} samples",
                  [os.path.join(build, "bench", "bench_mkrecording"), "-o", rec, "-n", str(n),
                   "--workload", os.path.join(progs, "workload.elf"), "--kernel", kernel,
                   "--vcpus", "2"], 7200)
            size = os.path.getsize(rec)
            d = {}
            for _ in range(a.rounds):
                for fmt in FORMATS:
                    for side, binary in (("before", a.before), ("after", a.after)):
                        if side == "before" and n > a.before_max:
                            continue
                        res = r.run_measured(
                            f"report {fmt}, {n} samples, {side}",
                            [binary, "report", rec, "--format", fmt, "-q", "--force", "-o",
                             os.path.join(tmp, "out"), "--symbols", progs, "--vmlinux", kernel],
                            7200)
                        d.setdefault((fmt, side), []).append((res.wall_s, res.maxrss_kib))
            for fmt in FORMATS:
                cells = []
                for side in ("before", "after"):
                    v = d.get((fmt, side))
                    if not v:
                        cells += ["not run (its memory grows with samples)", ""]
                        continue
                    cells += [f"{median([w for w, _ in v]):.2f} s",
                              f"{median([m for _, m in v]) / 1024:.0f} MiB"]
                rows.append((n, size, fmt, *cells))
            os.remove(rec)
    print("| samples | file | format | before: time | before: peak RSS | after: time | "
          "after: peak RSS |")
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    for n, size, fmt, bt, bm, at, am in rows:
        print(f"| {n:,} | {size / 1048576:.0f} MiB | {fmt} | {bt} | {bm} | {at} | {am} |")


if __name__ == "__main__":
    main()
