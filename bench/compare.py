#!/usr/bin/env python3
"""Two hvprof builds side by side (a change against the commit before it): the per-sample
stages (bench_sample_cost), the exit hook's own time in a real recording (`record
--stage-times`, the recurse program at 32 frames) and the overhead against the exit floor
((c)/(b) by host CPU and by the guest's clock, the workload program, 1 vCPU), and the syscall
program's kernel-mode samples (re-check exits, completions with the exact user stack, the
calls the program made: what the re-checks cost it), measured in one
run with the two builds interleaved round by round, so the host's load falls on both alike.
Prints a markdown table; nothing fails on a number.

    bench/compare.py --top . --before BUILD_A --after BUILD_B [--rounds 5] [--rates 1000,4000]
"""
import argparse
import os
import re
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hvbench import accuracy as acc  # noqa: E402
from hvbench import runs  # noqa: E402
from hvbench.stats import median, ms  # noqa: E402


def _guest(cmdline):
    return ["--guest", "demo", "--vcpus", "1", "--cmdline", cmdline]


def _units(res):
    ups, units, _ = runs.workload_units(res.out)
    return ups, (units / res.cpu_s if res.cpu_s else float("nan"))


def _syscall(r, hz, seconds, tmp, d):
    """The syscall program (2 ms at CPL 0 per call, then ~1 ms of user work) at one rate."""
    out = os.path.join(tmp, "syscall.fxt")
    res = r.run("s: syscall program", [r.hvprof, "record", *_guest(
        runs.guest_cmdline("syscall", seconds)), "--hz", str(hz), "-o", out], 300)
    m = re.search(r"kbusy_calls=(\d+)", res.out + res.err)
    d.setdefault(("sys_calls", hz), []).append(float(m.group(1)) if m else float("nan"))
    summ = runs.record_summary(res.err)
    d.setdefault(("sys_rechecks", hz), []).append(summ.get("rechecks", float("nan")) / seconds)
    rep = r.run("report folded", [r.hvprof, "report", out, "--format", "folded", "-q",
                                  "--symbols", r.progs, "--vmlinux", r.kernel_elf], 300)
    names = acc.kernel_names(r.kernel_elf, [os.path.join(r.progs, "syscall.elf")])
    a = acc.syscall_accuracy(acc.folded(rep.out), names)
    d.setdefault(("sys_completed", hz), []).append(a["completed_pct"])
    d.setdefault(("sys_exact", hz), []).append(a["exact_pct"])


def one_round(r, rates, seconds, tmp, d):
    sc = r.run("sample cost", [os.path.join(r.build, "bench", "bench_sample_cost"), "21"], 600)
    for (depth, stage), (med, _, _) in runs.sample_cost(sc.out).items():
        d.setdefault(("stage", depth, stage), []).append(med)
    cl = runs.guest_cmdline("recurse", seconds, extra="depth=28")
    res = r.run("stage times", [r.hvprof, "record", "--stage-times", *_guest(cl), "--hz", "1000",
                                "-o", os.path.join(tmp, "recurse.fxt")], 300)
    row = runs.record_stats(res.err)[0]
    for k in ("regs_ns", "walk_ns", "push_ns", "total_ns"):
        d.setdefault(("hook", k), []).append(row[k])
    cl = runs.guest_cmdline("workload", seconds, procs=1)
    for hz in rates:
        b = r.run("b: exit floor", [r.hvprof, "record", *_guest(cl), "--hz", str(hz), "--mode",
                                    "exits", "-o", os.path.join(tmp, "floor.fxt")], 300)
        c = r.run("c: full sampling", [r.hvprof, "record", *_guest(cl), "--hz", str(hz), "-o",
                                       os.path.join(tmp, "full.fxt")], 300)
        (bu, bc), (cu, cc) = _units(b), _units(c)
        d.setdefault(("ratio_cpu", hz), []).append(bc / cc if cc else float("nan"))
        d.setdefault(("ratio_clock", hz), []).append(bu / cu if cu else float("nan"))
        _syscall(r, hz, seconds, tmp, d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", required=True)
    ap.add_argument("--before", required=True, help="build directory of the base")
    ap.add_argument("--after", required=True, help="build directory of the change")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--rates", default="1000,4000")
    a = ap.parse_args()
    top = os.path.abspath(a.top)
    rates = [int(x) for x in a.rates.split(",")]
    data = {"before": {}, "after": {}}
    with tempfile.TemporaryDirectory(prefix="hvprof-compare-") as tmp:
        runners = {k: runs.Runner(top, os.path.abspath(b), tmp)
                   for k, b in (("before", a.before), ("after", a.after))}
        for rnd in range(a.rounds):
            # Alternate which build goes first, so a drift of the host's load is shared.
            order = ("before", "after") if rnd % 2 == 0 else ("after", "before")
            for k in order:
                one_round(runners[k], rates, a.seconds, tmp, data[k])
    keys = sorted(data["after"].keys(), key=str)
    print(f"{a.rounds} rounds, builds interleaved; median (min–max)\n")
    print("| measure | before | after | after / before |")
    print("| --- | --- | --- | --- |")
    for key in keys:
        b, f = data["before"].get(key, []), data["after"].get(key, [])
        if key[0] == "stage":
            name, digits = f"bench_sample_cost depth {key[1]}, {key[2]} (ns)", 1
        elif key[0] == "hook":
            name, digits = f"record --stage-times, 32 frames, {key[1]}", 0
        elif key[0].startswith("sys_"):
            name, digits = {
                "sys_calls": "syscall program at %d Hz: calls made",
                "sys_rechecks": "syscall program at %d Hz: re-check exits per second",
                "sys_completed": "syscall program at %d Hz: kernel samples completed %%",
                "sys_exact": "syscall program at %d Hz: completed with the exact user stack %%",
            }[key[0]] % key[1], 1
        else:
            what = "host CPU" if key[0] == "ratio_cpu" else "guest clock"
            name, digits = f"(c)/(b) at {key[1]} Hz, 1 vCPU, by {what}", 3
        rel = median(f) / median(b) if b and f and median(b) else float("nan")
        print(f"| {name} | {ms(b, digits)} | {ms(f, digits)} | {rel:.3f} |")


if __name__ == "__main__":
    main()
