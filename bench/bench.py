#!/usr/bin/env python3
"""hvprof's benchmark run (scripts/bench.sh calls this): overhead, the perf kvm peer, per-sample
cost, throughput, accuracy and scale, plus every module micro-benchmark; writes BENCHMARKS.md
(or prints it with --no-write). Every number in the file comes from one run of this script.

Measurements are interleaved (one round = every configuration once, in a fixed order) and
reported as the median over rounds with the min–max spread. Nothing here fails on a number;
a command that fails, or output that cannot be parsed, fails the script loudly.
"""
import argparse
import json
import os
import pickle
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hvbench import sections  # noqa: E402
from hvbench.machine import machine_info, load_average  # noqa: E402
from hvbench.runs import BenchError, Runner  # noqa: E402


class Config:
    def __init__(self, quick):
        self.quick = quick
        if quick:  # under 2 minutes, whatever the host: a smoke run of every section
            self.rounds, self.seconds = 2, 1
            self.rates, self.vcpus = [1000], [1]
            self.sc_batches, self.bd_rounds, self.bd_seconds = 21, 1, 1
            self.report_samples, self.report_rounds = 100000, 1
            self.many_procs = [10000]
            self.scale_vcpus, self.scale_procs, self.scale_rounds, self.scale_seconds = [1, 2], [2, 16], 1, 1
            self.scale_rate = 1000
            self.linux_rounds = 0
        else:
            self.rounds, self.seconds = 7, 3
            self.rates, self.vcpus = [100, 1000, 4000, 10000], [1, 2]
            self.sc_batches, self.bd_rounds, self.bd_seconds = 201, 3, 2
            self.report_samples, self.report_rounds = 1000000, 3
            self.many_procs = [100000, 300000]
            self.scale_vcpus, self.scale_procs, self.scale_rounds, self.scale_seconds = [1, 2, 4, 8], [2, 16, 64], 3, 2
            self.scale_rate = 1000
            self.linux_rounds = 3


def _jsonable(x):
    """Raw results for build/bench-results.json (tuple keys become strings)."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="hvprof build directory")
    ap.add_argument("--top", required=True, help="source tree")
    ap.add_argument("--quick", action="store_true", help="short smoke run (< 2 minutes)")
    ap.add_argument("--no-write", action="store_true", help="print, do not write BENCHMARKS.md")
    ap.add_argument("--out", help="markdown output (default TOP/BENCHMARKS.md)")
    ap.add_argument("--command", default="scripts/bench.sh", help="how the run was started")
    ap.add_argument("--no-perf", action="store_true", help="skip the perf kvm peer")
    ap.add_argument("--rerender", metavar="PICKLE",
                    help="only rewrite the markdown from a previous run's bench-results.pickle")
    a = ap.parse_args()
    if a.rerender:
        with open(a.rerender, "rb") as f:
            saved = pickle.load(f)
        md = sections.render(saved["info"], Config(saved["quick"]), saved["command"],
                             saved["examples"], saved["data"], saved["have_perf"])
        return _emit(a, md, os.path.abspath(a.top))

    cfg = Config(a.quick)
    top, build = os.path.abspath(a.top), os.path.abspath(a.build)
    tmp = tempfile.mkdtemp(prefix="hvprof-bench-")
    r = Runner(top, build, tmp)
    for need in (r.hvprof, r.kernel_elf, os.path.join(r.progs, "workload.elf")):
        if not os.path.exists(need):
            raise BenchError(f"missing {need}: build first (scripts/build.sh)")
    perf = None if a.no_perf else shutil.which("perf")
    t_start = time.time()
    info = machine_info(top)
    info["load_start"] = load_average()

    data = {}
    try:
        data["overhead"] = sections.overhead(r, cfg, perf, tmp)
        data["breakdown"] = sections.breakdown(r, cfg, tmp)
        data["throughput"] = sections.throughput(r, cfg, tmp)
        data["scale"] = sections.scale(r, cfg, tmp)
        data["linux"] = sections.linux(r, cfg, tmp)
        data["modules"] = sections.modules(r, cfg)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    info["load_end"] = load_average()
    info["duration_s"] = time.time() - t_start
    info["runs"] = r.count

    # Raw results first: a rendering bug must not lose a 20-minute run (--rerender).
    with open(os.path.join(build, "bench-results.json"), "w") as f:
        json.dump(_jsonable({"info": info, "data": data}), f, indent=1, default=str)
    with open(os.path.join(build, "bench-results.pickle"), "wb") as f:
        pickle.dump({"info": info, "quick": cfg.quick, "command": a.command,
                     "examples": r.examples, "data": data, "have_perf": perf is not None}, f)
    md = sections.render(info, cfg, a.command, r.examples, data, perf is not None)
    _emit(a, md, top)


def _emit(a, md, top):
    if a.no_write:
        sys.stdout.write(md)
    else:
        out = a.out or os.path.join(top, "BENCHMARKS.md")
        with open(out, "w") as f:
            f.write(md)
        print(f"bench: wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"bench: FAILED: {e}", file=sys.stderr)
        sys.exit(1)
