#!/usr/bin/env python3
"""What confinement costs (docs/security.md): the same build, confined (the default) and with
--no-sandbox, interleaved round by round so the host's load falls on both alike. Per rate: the
exit floor (b: `record --mode exits`) and full sampling (c: `record`), the workload program's
throughput by the guest's clock and per host CPU-second, and the exit hook's own time per sample
(`record --stage-times`, the recurse program at 32 frames). Prints a markdown table; nothing
fails on a number.

    bench/sandbox_cost.py --top . --build build [--rounds 5] [--rates 1000,4000] [--seconds 3]
"""
import argparse
import os
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hvbench import runs  # noqa: E402
from hvbench.stats import median, ms  # noqa: E402

MODES = {"confined": [], "--no-sandbox": ["--no-sandbox"]}


def _guest(cmdline):
    return ["--guest", "demo", "--vcpus", "1", "--cmdline", cmdline]


def one_round(r, mode, rates, seconds, tmp, d):
    flags = MODES[mode]
    cl = runs.guest_cmdline("recurse", seconds, extra="depth=28")
    res = r.run(f"stage times ({mode})", [r.hvprof, "record", *flags, "--stage-times",
                                          *_guest(cl), "--hz", "1000", "-o",
                                          os.path.join(tmp, "recurse.fxt")], 300)
    row = runs.record_stats(res.err)[0]
    for k in ("regs_ns", "walk_ns", "push_ns", "total_ns"):
        d.setdefault(("hook", k), []).append(row[k])
    cl = runs.guest_cmdline("workload", seconds, procs=1)
    for hz in rates:
        for kind, extra in (("b", ["--mode", "exits"]), ("c", [])):
            res = r.run(f"{kind} ({mode})", [r.hvprof, "record", *flags, *_guest(cl), "--hz",
                                             str(hz), *extra, "-o",
                                             os.path.join(tmp, f"{kind}.fxt")], 300)
            ups, units, _ = runs.workload_units(res.out)
            d.setdefault((kind, hz, "clock"), []).append(ups)
            d.setdefault((kind, hz, "cpu"), []).append(units / res.cpu_s if res.cpu_s else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--rates", default="1000,4000")
    a = ap.parse_args()
    top = os.path.abspath(a.top)
    rates = [int(x) for x in a.rates.split(",")]
    data = {m: {} for m in MODES}
    with tempfile.TemporaryDirectory(prefix="hvprof-sandbox-cost-") as tmp:
        r = runs.Runner(top, os.path.abspath(a.build), tmp)
        for rnd in range(a.rounds):
            order = list(MODES) if rnd % 2 == 0 else list(reversed(list(MODES)))
            for m in order:
                one_round(r, m, rates, a.seconds, tmp, data[m])
    print(f"{a.rounds} rounds, confined and unconfined interleaved; median (min–max)\n")
    print("| measure | --no-sandbox | confined | confined / --no-sandbox |")
    print("| --- | --- | --- | --- |")
    for key in sorted(data["confined"].keys(), key=str):
        u, c = data["--no-sandbox"].get(key, []), data["confined"].get(key, [])
        if key[0] == "hook":
            name, digits = f"record --stage-times, 32 frames, {key[1]} per sample", 0
        else:
            what = "units/s by the guest's clock" if key[2] == "clock" else \
                "units per host CPU-second"
            kind = "(b) exit floor" if key[0] == "b" else "(c) full sampling"
            name, digits = f"{kind} at {key[1]} Hz, workload {what}", 0
        rel = median(c) / median(u) if u and c and median(u) else float("nan")
        print(f"| {name} | {ms(u, digits)} | {ms(c, digits)} | {rel:.3f} |")


if __name__ == "__main__":
    main()
