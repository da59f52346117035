"""What BENCHMARKS.md says about the machine and the tree the numbers come from."""
import os
import platform
import subprocess
import time


def _first(path, key):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def _git(top, *args):
    try:
        return subprocess.run(["git", "-C", top, *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def kvm_module():
    mods = sorted(m for m in os.listdir("/sys/module") if m.startswith("kvm"))
    return ", ".join(mods) if mods else "none"


def machine_info(top):
    mem_kib = int(_first("/proc/meminfo", "MemTotal").split()[0])
    dirty = _git(top, "status", "--porcelain", "--untracked-files=no")
    perf_rate = "?"
    try:
        with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
            perf_rate = f.read().strip()
    except OSError:
        pass
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "host": platform.node(),
        "cpu": _first("/proc/cpuinfo", "model name"),
        "cores": os.cpu_count(),
        "mem_gib": round(mem_kib / 1048576, 1),
        "kernel": platform.release(),
        "kvm": kvm_module(),
        "commit": _git(top, "rev-parse", "--short=12", "HEAD"),
        "commit_subject": _git(top, "log", "-1", "--format=%s"),
        "dirty": bool(dirty and dirty != "?"),
        "perf_max_sample_rate": perf_rate,
        "compiler": subprocess.run(["cc", "--version"], capture_output=True,
                                   text=True).stdout.splitlines()[0],
    }
