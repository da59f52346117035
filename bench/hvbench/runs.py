"""Running the programs scripts/bench.sh measures, and parsing what they print.

Every command goes through `Runner.run`, which records its exact argument list (BENCHMARKS.md
quotes them) and fails loudly on a non-zero exit: a broken benchmark must not pass silently,
whatever the numbers say.
"""
import os
import re
import resource
import shlex
import subprocess
import sys
import time


class BenchError(RuntimeError):
    pass


class Result:
    def __init__(self, argv, rc, out, err, wall_s, maxrss_kib, cpu_s=0.0):
        self.argv, self.rc, self.out, self.err = argv, rc, out, err
        self.wall_s, self.maxrss_kib, self.cpu_s = wall_s, maxrss_kib, cpu_s


class Runner:
    """Runs commands, remembers one example of each kind for the report."""

    def __init__(self, top, build, tmp, verbose=True):
        self.top, self.build, self.tmp, self.verbose = top, build, tmp, verbose
        self.hvprof = os.path.join(build, "cli", "hvprof")
        self.progs = os.path.join(build, "tests", "guest", "progs")
        self.kernel_elf = os.path.join(build, "tests", "guest", "hvprof-guest.elf")
        self.examples = {}  # kind -> command line (first seen)
        self.count = 0

    def rel(self, path):
        return os.path.relpath(path, self.top) if path.startswith(self.top) else path

    def run(self, kind, argv, timeout, ok_codes=(0,)):
        line = " ".join(shlex.quote(self.rel(a)) for a in argv)
        self.examples.setdefault(kind, line)
        self.count += 1
        if self.verbose:
            print(f"bench: [{kind}] {line}", file=sys.stderr, flush=True)
        # Commands run one at a time, so the growth of RUSAGE_CHILDREN is this command's CPU
        # time (its own threads and every descendant it waited for: perf's child included).
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=self.top)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise BenchError(f"timed out after {timeout}s: {line}")
        wall = time.monotonic() - t0
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        if p.returncode not in ok_codes:
            raise BenchError(f"exit status {p.returncode}: {line}\n--- stderr ---\n"
                             f"{err[-3000:]}\n--- stdout ---\n{out[-2000:]}")
        return Result(argv, p.returncode, out, err, wall, 0, cpu)

    def run_measured(self, kind, argv, timeout):
        """Run with the child's own peak RSS (os.wait4), for report memory."""
        line = " ".join(shlex.quote(self.rel(a)) for a in argv)
        self.examples.setdefault(kind, line)
        self.count += 1
        if self.verbose:
            print(f"bench: [{kind}] {line}", file=sys.stderr, flush=True)
        out_path = os.path.join(self.tmp, "measured.out")
        with open(out_path, "w") as fo, open(os.devnull, "w") as fe:
            t0 = time.monotonic()
            p = subprocess.Popen(argv, stdout=fo, stderr=fe, cwd=self.top)
            _, status, ru = os.wait4(p.pid, 0)
            wall = time.monotonic() - t0
            p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise BenchError(f"exit status {p.returncode}: {line}")
        return Result(argv, 0, "", "", wall, ru.ru_maxrss)


# ---- the guest's workload ----------------------------------------------------------------

UNITS_RE = re.compile(r"^workload: pid=(\d+) units=(\d+) elapsed_us=(\d+) units_per_sec=(\d+) "
                      r"split_pct=(\d+):(\d+):(\d+)", re.M)


def workload_units(out):
    """Sum of units_per_sec over the workload processes of one run (its throughput), the
    units done in total, and each process's own split_pct."""
    m = UNITS_RE.findall(out)
    if not m:
        raise BenchError("no 'workload: ... units_per_sec=' line on the guest console")
    return (sum(int(x[3]) for x in m), sum(int(x[1]) for x in m),
            [tuple(int(v) for v in x[4:7]) for x in m])


def guest_cmdline(progs, seconds, procs=None, extra=""):
    words = [f"progs={progs}", f"seconds={seconds}"]
    if procs is not None:
        words.append(f"procs={procs}")
    if extra:
        words.append(extra)
    return " ".join(words)


# ---- hvprof record's summary ------------------------------------------------------------

SUMMARY_COLS = ["user", "kernel", "idle", "missed", "complete", "abandon", "dropped", "us_sample"]


def record_summary(err):
    """The 'total' row of hvprof record's summary table, plus its exit counts."""
    m = re.search(r"^\s+total\s+" + r"\s+".join([r"(\d+)"] * 7) + r"\s+([\d.]+)\s*$", err, re.M)
    if not m:
        raise BenchError("no summary table from hvprof record:\n" + err[-2000:])
    d = {k: float(v) for k, v in zip(SUMMARY_COLS, m.groups())}
    e = re.search(r"(\d+) timer exits, (\d+) re-check exits, (\d+) records (?:written|in the file)", err)
    if e:
        d["exits"], d["rechecks"], d["records"] = (float(x) for x in e.groups())
    d["samples"] = d["user"] + d["kernel"] + d["idle"]
    return d


RS_RE = re.compile(r"^stage-times (.*)$", re.M)


def record_stats(out):
    """`hvprof record --stage-times` per-vCPU lines (on stderr), as dicts of floats."""
    rows = []
    for line in RS_RE.findall(out):
        rows.append({k: float(v) for k, v in (kv.split("=", 1) for kv in line.split())})
    if not rows:
        raise BenchError("no stage-times lines (hvprof record --stage-times)")
    return rows


SC_RE = re.compile(r"^sample_cost depth=(\d+) stage=(\S+) median_ns=([\d.]+) p10_ns=([\d.]+) "
                   r"p90_ns=([\d.]+)", re.M)


def sample_cost(out):
    d = {}
    for depth, stage, med, p10, p90 in SC_RE.findall(out):
        d[(int(depth), stage)] = (float(med), float(p10), float(p90))
    if not d:
        raise BenchError("no sample_cost lines")
    return d
