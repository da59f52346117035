"""The measurements of each BENCHMARKS.md section. Each returns plain data (lists of per-round
values); hvbench.render turns it into tables."""
import os
import re

from hvbench import accuracy as acc
from hvbench import runs
from hvbench.render import render  # noqa: F401  (bench.py calls sections.render)
from hvbench.runs import BenchError


def _guest(r, vcpus, cmdline):
    return ["--guest", "demo", "--vcpus", str(vcpus), "--cmdline", cmdline]


def _timeout(cfg, seconds=None):
    return 120 + 4 * (seconds or cfg.seconds)


def _folded(r, fxt):
    res = r.run("report folded", [r.hvprof, "report", fxt, "--format", "folded", "-q",
                                  "--symbols", r.progs, "--vmlinux", r.kernel_elf], 600)
    return acc.folded(res.out)


# ---- 1, 2, 5: overhead, the perf kvm peer, accuracy ------------------------------------------

def overhead(r, cfg, perf, tmp):
    """Interleaved rounds: per vCPU count, (a) no profiling, then per rate (b) exit floor,
    (c) full sampling, (p) perf kvm; plus (s) the syscall program per rate for the
    kernel-mode completion accuracy. Each run keeps the guest's units/s (its own wall clock)
    and units per CPU-second of the command (host CPU time of the VMM, and of perf for (p))."""
    workload_elf = os.path.join(r.progs, "workload.elf")
    knames = acc.kernel_names(r.kernel_elf, [workload_elf, os.path.join(r.progs, "syscall.elf")])
    d = {"a": {}, "b": {}, "c": {}, "p": {}, "acc": {}, "perf_acc": {}, "sys": {}, "summ": {},
         "perf_counts": {}, "split": {}}

    def keep(kind, key, res):
        ups, units, split = runs.workload_units(res.out)
        d[kind].setdefault(key, []).append({"ups": ups, "upc": units / res.cpu_s
                                            if res.cpu_s else float("nan")})
        return split

    for rnd in range(cfg.rounds):
        for v in cfg.vcpus:
            cl = runs.guest_cmdline("workload", cfg.seconds, procs=v)
            g = _guest(r, v, cl)
            res = r.run("a: no profiling", [r.hvprof, "run", *g], _timeout(cfg))
            d["split"].setdefault(v, []).extend(keep("a", v, res))
            for hz in cfg.rates:
                key = (v, hz)
                out = os.path.join(tmp, "floor.fxt")
                res = r.run("b: exit floor", [r.hvprof, "record", *g, "--hz", str(hz), "--mode",
                                              "exits", "-o", out], _timeout(cfg))
                keep("b", key, res)
                out = os.path.join(tmp, "full.fxt")
                res = r.run("c: full sampling", [r.hvprof, "record", *g, "--hz", str(hz),
                                                 "-o", out], _timeout(cfg))
                keep("c", key, res)
                d["summ"].setdefault(key, []).append(runs.record_summary(res.err))
                d["acc"].setdefault(key, []).append(acc.workload_accuracy(_folded(r, out), knames))
                if perf:
                    _perf_run(r, d, perf, key, g, hz, tmp, workload_elf, keep, cfg)
        for hz in cfg.rates:
            cl = runs.guest_cmdline("syscall", cfg.seconds)
            out = os.path.join(tmp, "syscall.fxt")
            res = r.run("s: syscall program", [r.hvprof, "record", *_guest(r, 1, cl), "--hz",
                                               str(hz), "-o", out], _timeout(cfg))
            d["sys"].setdefault(hz, []).append(acc.syscall_accuracy(_folded(r, out), knames))
    return d


def _perf_run(r, d, perf, key, g, hz, tmp, workload_elf, keep, cfg):
    """perf kvm system-wide around one `hvprof run`; the VMM's pid (written by the shell that
    execs it) separates its guest's samples from other VMs on the host."""
    _perf_rate_allows(hz, d)
    data, pidfile = os.path.join(tmp, "perf.data"), os.path.join(tmp, "vmm.pid")
    res = r.run("p: perf kvm", [perf, "kvm", "--guest", "record", "-a", "-F", str(hz), "-o",
                                data, "--", "sh", "-c", 'echo $$ > "$0"; exec "$@"', pidfile,
                                r.hvprof, "run", *g], _timeout(cfg))
    keep("p", key, res)
    with open(pidfile) as f:
        vmm_pid = int(f.read())
    dump = r.run("perf script -D", [perf, "script", "-D", "-i", data], 600).out
    ips, counts = acc.perf_guest_samples(dump, vmm_pid)
    if not ips:
        raise BenchError("perf kvm recorded no guest user samples of the benchmark's VM")
    d["perf_acc"].setdefault(key, []).append(acc.perf_accuracy(ips, workload_elf))
    counts["guest_user"] = len(ips)
    d["perf_counts"].setdefault(key, []).append(counts)
    os.unlink(data)


PERF_RATE = "/proc/sys/kernel/perf_event_max_sample_rate"


def _perf_rate_allows(hz, d):
    """The kernel lowers perf_event_max_sample_rate when sampling interrupts run long; perf then
    refuses -F above it. Raise it back to the rate measured (root only) and count it."""
    try:
        with open(PERF_RATE) as f:
            cur = int(f.read())
        if cur < hz:
            with open(PERF_RATE, "w") as f:
                f.write(str(hz))
            d["perf_rate_raised"] = d.get("perf_rate_raised", 0) + 1
    except (OSError, ValueError):
        pass


# ---- 3: per-sample cost ---------------------------------------------------------------------

RECURSE_DEPTH = {8: 4, 32: 28, 128: 124}  # frames = depth + 4 (_start, main, descend x d+1, leaf)


def breakdown(r, cfg, tmp):
    sc = r.run("sample cost", [os.path.join(r.build, "bench", "bench_sample_cost"),
                               str(cfg.sc_batches)], 600)
    d = {"micro": runs.sample_cost(sc.out), "insitu": {}}
    for _ in range(cfg.bd_rounds):
        for frames, depth in RECURSE_DEPTH.items():
            cl = runs.guest_cmdline("recurse", cfg.bd_seconds, extra=f"depth={depth}")
            out = os.path.join(tmp, "recurse.fxt")
            # The bench's own console file, replaced each round (outputs are never replaced
            # without --force: docs/security.md).
            res = r.run("in-VMM stage timers", [r.hvprof, "record", "--stage-times", "--force",
                                                *_guest(r, 1, cl), "--hz", "1000", "-o", out,
                                                "--console", os.path.join(tmp, "console.log")],
                        _timeout(cfg, cfg.bd_seconds))
            row = runs.record_stats(res.err)[0]
            rows = acc.folded(r.run("report folded", [r.hvprof, "report", out, "--format",
                                                      "folded", "-q", "--user"], 600).out)
            tot = sum(n for _, n in rows)
            row["depth_ok_pct"] = (100.0 * sum(n for f, n in rows if len(f) == frames) / tot
                                   if tot else float("nan"))
            d["insitu"].setdefault(frames, []).append(row)
    return d


# ---- 4: throughput --------------------------------------------------------------------------

def throughput(r, cfg, tmp):
    fxt = r.run("fxt micro-benchmark", [os.path.join(r.build, "schema", "bench_fxt")], 600)
    rec = os.path.join(tmp, "big.fxt")
    mk = r.run("synthetic recording", [os.path.join(r.build, "bench", "bench_mkrecording"),
                                       "-o", rec, "-n", str(cfg.report_samples), "--workload",
                                       os.path.join(r.progs, "workload.elf"), "--kernel",
                                       r.kernel_elf, "--vcpus", "2"], 600)
    d = {"fxt_out": fxt.out, "mk": mk.out.strip(), "bytes": os.path.getsize(rec), "report": {}}
    for _ in range(cfg.report_rounds):
        for fmt in ("folded", "top", "pprof"):
            res = r.run_measured(f"report {fmt} (timed)",
                                 [r.hvprof, "report", rec, "--format", fmt, "-q", "--force", "-o",
                                  os.path.join(tmp, "report.out"), "--symbols", r.progs,
                                  "--vmlinux", r.kernel_elf], 1200)
            d["report"].setdefault(fmt, []).append({"wall_s": res.wall_s,
                                                     "maxrss_kib": res.maxrss_kib})
    # Report cost with 10^4-10^6 processes, each its own address space, name and mapping (one
    # sample each): what was quadratic in processes and mappings (docs/reliability.md 2c).
    d["many"] = []
    for procs in cfg.many_procs:
        many = os.path.join(tmp, "many.fxt")
        r.run(f"synthetic recording, {procs} processes",
              [os.path.join(r.build, "bench", "bench_mkrecording"), "-o", many, "-n", str(procs),
               "--workload", os.path.join(r.progs, "workload.elf"), "--kernel", r.kernel_elf,
               "--vcpus", "2", "--procs", str(procs)], 1200)
        size = os.path.getsize(many)
        res = r.run_measured(f"report top, {procs} processes (timed)",
                             [r.hvprof, "report", many, "--format", "top", "-q", "--force", "-o",
                              os.path.join(tmp, "report.out"), "--symbols", r.progs], 1200)
        d["many"].append({"procs": procs, "bytes": size, "wall_s": res.wall_s,
                          "maxrss_kib": res.maxrss_kib})
        os.remove(many)
    rows = _folded(r, rec)
    d["symbolized"] = sum(n for _, n in rows)
    d["unsymbolized_frames"] = sum(n for f, n in rows if any(x.startswith("0x") for x in f))
    return d


# ---- 6: scale -------------------------------------------------------------------------------

def scale(r, cfg, tmp):
    d = {"vcpus": {}, "procs": {}}
    out = os.path.join(tmp, "scale.fxt")
    for _ in range(cfg.scale_rounds):
        for v in cfg.scale_vcpus:
            cl = runs.guest_cmdline("workload", cfg.scale_seconds, procs=v)
            res = r.run("scale: vCPUs", [r.hvprof, "record", *_guest(r, v, cl), "--hz",
                                         str(cfg.scale_rate), "-o", out],
                        _timeout(cfg, cfg.scale_seconds))
            s = runs.record_summary(res.err)
            s["units"] = runs.workload_units(res.out)[0]
            s["upc"] = runs.workload_units(res.out)[1] / res.cpu_s
            d["vcpus"].setdefault(v, []).append(s)
        for p in cfg.scale_procs:
            cl = runs.guest_cmdline("workload", cfg.scale_seconds, procs=p)
            res = r.run("scale: address spaces", [r.hvprof, "record", *_guest(r, 2, cl),
                                                  "--hz", str(cfg.scale_rate), "-o",
                                                  out], _timeout(cfg, cfg.scale_seconds + p))
            s = runs.record_summary(res.err)
            s["units"] = runs.workload_units(res.out)[0]
            s["upc"] = runs.workload_units(res.out)[1] / res.cpu_s
            s["nproc"] = len(runs.UNITS_RE.findall(res.out))
            d["procs"].setdefault(p, []).append(s)
    return d


# ---- 7: Linux guests on the nested test bed ---------------------------------------------------

LINUX_CMDLINE = ("console=ttyS0 reboot=k panic=-1 pci=off pti=off hvtest.plan=work "
                 "hvtest.ms=3000")
LINUX_KINDS = [  # (name, hvprof command, options)
    ("run", "run", "--timeout 180"),
    ("exits-1k", "record", "--hz 1000 --mode exits --timeout 180"),
    ("record-1k", "record", "--hz 1000 --timeout 180"),
    # The same without Linux introspection (no task read at the exits): the exit path's cost of
    # knowing each sample's guest task is the difference.
    ("record-1k-generic", "record", "--hz 1000 --guest-os generic --timeout 180"),
    ("record-4k", "record", "--hz 4000 --timeout 180"),
]
BUSY_RE = re.compile(r"HVTEST result hv_busy rounds=(\d+) ms=(\d+)")


def linux(r, cfg, tmp):
    """Debian's generic kernel (2 vCPUs) on the test bed (docs/linux.md): the same boot with
    all four workloads under hvprof run, record --mode exits and record at 1 and 4 kHz, rounds
    interleaved in one outer VM. Measured: hv_busy's own work rate (the guest's clock), and
    the recorder's summary."""
    if cfg.quick:
        return {"skipped": "not in --quick runs (the outer VM alone takes minutes)"}
    cache = os.path.join(r.build, "linux-testbed")
    r.run("linux: prepare", ["bash", os.path.join(r.top, "tests/linux/prepare.sh"), cache], 900)
    scen = os.path.join(tmp, "linux.scenarios")
    with open(scen, "w") as f:
        for k in range(cfg.linux_rounds):
            for name, cmd, opts in LINUX_KINDS:
                f.write(f"{name}.{k}|{cmd}|generic|2|512M|{LINUX_CMDLINE}|{opts}\n")
    out = os.path.join(tmp, "linux")
    r.run("linux: test bed", ["bash", os.path.join(r.top, "tests/linux/run.sh"), cache,
                              r.hvprof, scen, out], 3600)
    d = {name: [] for name, _, _ in LINUX_KINDS}
    for k in range(cfg.linux_rounds):
        for name, _, _ in LINUX_KINDS:
            sdir = os.path.join(out, f"{name}.{k}")
            try:
                with open(os.path.join(sdir, "console.log"), errors="replace") as f:
                    console = f.read()
                with open(os.path.join(sdir, "summary.txt"), errors="replace") as f:
                    summary = f.read()
            except OSError:
                continue  # the outer VM died in it three times: a missing point, not a number
            m = BUSY_RE.search(console)
            if not m or "triple-fault" in summary:
                continue
            s = {"busy": int(m.group(1)) / (int(m.group(2)) / 1000.0)}
            if name != "run":
                s.update(runs.record_summary(summary))
                e = re.search(r"exit path: mean ([\d.]+) us", summary)
                s["exit_us"] = float(e.group(1)) if e else 0.0
            d[name].append(s)
    return d


# ---- the modules' own micro-benchmarks --------------------------------------------------------

MODULE_BENCHES = [
    # (section, binary under the build dir, full args, quick args, what it measures, notes file)
    ("vmm", "vmm/bench_vmm", [], ["20000"],
     "exit round trips and timer-tick delivery on this host (bench/vmm_bench.c)", "vmm"),
    ("test guest", "tests/integration/bench_guest", [], ["--quick"],
     "boot time and workload throughput under `hvprof run`'s VMM (bench/guest_bench.c)",
     "test-guest"),
    ("exit events", "tests/integration/bench_exit_events", ["7", "2"], ["1", "1"],
     "what `record --events exits` costs per exit, beside the same recording without "
     "(bench/exit_events_bench.c)", "exit-events"),
    ("virtio-blk", "vmm/bench_virtio_blk", ["1024"], ["64"],
     "the virtio block device beside the raw file it serves, request by request "
     "(bench/virtio_blk_bench.c)", "virtio-blk"),
    ("qcow2 reads", "vmm/bench_qcow_read", ["64"], ["16"],
     "qcow2 read paths: hvprof's reader (QEMU's map, pread, libqcow for compressed clusters) "
     "beside raw pread and QEMU's block layer over NBD (qemu-storage-daemon, libnbd) "
     "(bench/qcow_read_bench.c)", "qcow"),
    ("guestwalk", "guestwalk/bench_guestwalk", ["1001"], ["51"],
     "translation and frame-pointer walks on a synthetic guest image (bench/guestwalk_bench.c)",
     "guestwalk"),
    ("guestos", "guestos/bench_guestos", ["1001"], ["51"],
     "reading a Linux guest's current task at an exit, beside the exit's user walk "
     "(bench/guestos_bench.c)", "guestos"),
    ("off-CPU visits", "guestos/bench_off_cpu", ["101"], ["5"],
     "`record --off-cpu`'s visits of a guest's threads on memory captured from Debian 5.10, "
     "6.1 and 7.2 guests: listing, and a thread's registers and ORC kernel stack "
     "(bench/off_cpu_bench.c)", "off-cpu"),
    ("python frames", "python/bench_python", ["101"], ["5"],
     "a 32-frame stack of Debian's python3.11 read from outside: thread state and frame chain, "
     "the same through a vCPU walker in guest memory as at an exit, then names and lines "
     "(bench/python_bench.c)", "python"),
    ("fxt", "schema/bench_fxt", [], [],
     "record encoding and the per-vCPU ring (bench/fxt_bench.c)", "fxt"),
    ("symbolize", "report/bench_symbolize", [], [],
     "symbol lookup, ELF loading, symbolization and report writers (bench/symbolize_bench.c)",
     "symbolize"),
]


def modules(r, cfg):
    out = []
    for name, rel, full, quick, what, notes in MODULE_BENCHES:
        path = os.path.join(r.build, rel)
        m = {"name": name, "what": what, "notes": f"bench/module-notes/{notes}.md"}
        if not os.path.exists(path):
            out.append({**m, "cmd": rel, "missing": True})
            continue
        args = quick if cfg.quick else full
        res = r.run(f"module {name}", [path, *args], 900)
        out.append({**m, "cmd": " ".join([r.rel(path), *args]), "out": res.out.rstrip(),
                    "wall_s": res.wall_s})
    return out
