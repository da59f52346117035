"""Accuracy against the test guest's ground truth (docs/test-guest.md, "Ground truth").

hvprof's side comes from `hvprof report --format folded` (symbolized with the program ELFs and
the guest kernel ELF); perf kvm's from the raw guest IPs in `perf script -D`, mapped to the
workload's symbols with `nm` (the program is static, linked at 0x400000).
"""
import bisect
import re
import subprocess

# workload: the known split of user time and the known chains (outermost first).
TRUTH = {"hot_leaf": 60.0, "warm_leaf": 30.0, "gamma": 10.0}
CHAINS = {
    ("_start", "main", "alpha", "hot_leaf"),
    ("_start", "main", "beta", "warm_leaf"),
    ("_start", "main", "gamma"),
}
# Frames a correct walk may also end in: main, alpha and beta themselves (a few rdtsc a round).
CHAIN_PREFIXES = {("_start", "main"), ("_start", "main", "alpha"), ("_start", "main", "beta")}

# syscall: the user stack under every kernel-mode sample of the kbusy path.
SYSCALL_USER = ("_start", "main", "do_kernel_work", "sys_kbusy")
SYSCALL_CALLERS = ("_start", "main", "do_kernel_work")
KBUSY_MARK = "ksys_kbusy"


def folded(text):
    """(frames tuple without the process label, count) per line."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        rows.append((tuple(frames[1:]), int(count)))
    return rows


def kernel_names(kernel_elf, user_elfs):
    """Function names only the guest kernel has (both have `_start`, `memcpy`, ...)."""
    user = {name for elf in user_elfs for _, name in nm_functions(elf)}
    return {name for _, name in nm_functions(kernel_elf)} - user


def _is_kernel(frame, knames):
    return frame in knames or frame.startswith("0xffff") or frame.startswith("hvprof-guest.elf")


def split_user_kernel(frames, knames):
    """The user part (from _start or thread_start up to the first kernel frame) and the kernel
    part of one folded stack."""
    for i, f in enumerate(frames):
        if _is_kernel(f, knames):
            return frames[:i], frames[i:]
    return frames, ()


def workload_accuracy(rows, knames):
    """Flat profile of workload user-mode samples by leaf function, and the exact-chain share."""
    leaf = {}
    total = exact = 0
    for frames, n in rows:
        user, kern = split_user_kernel(frames, knames)
        if kern or not user or user[0] != "_start":
            continue
        if "main" not in user:
            continue
        total += n
        leaf[user[-1]] = leaf.get(user[-1], 0) + n
        if user in CHAINS or user in CHAIN_PREFIXES:
            exact += n
    return flat_result(leaf, total, exact)


def flat_result(leaf, total, exact=None):
    share = {f: (100.0 * leaf.get(f, 0) / total if total else 0.0) for f in TRUTH}
    err = max(abs(share[f] - TRUTH[f]) for f in TRUTH) if total else float("nan")
    mean_err = sum(abs(share[f] - TRUTH[f]) for f in TRUTH) / len(TRUTH) if total else float("nan")
    r = {"samples": total, "share": share, "max_err_pp": err, "mean_err_pp": mean_err}
    if exact is not None:
        r["exact_pct"] = 100.0 * exact / total if total else float("nan")
    return r


def syscall_accuracy(rows, knames):
    """Kernel-mode samples of the kbusy path: completed with the exact user stack, with the
    right callers but another leaf, with some other user stack, or with none."""
    c = {"kernel": 0, "exact": 0, "callers": 0, "other": 0, "none": 0}
    for frames, n in rows:
        user, kern = split_user_kernel(frames, knames)
        if KBUSY_MARK not in kern:
            continue
        c["kernel"] += n
        if not user:
            c["none"] += n
        elif user == SYSCALL_USER:
            c["exact"] += n
        elif user[:3] == SYSCALL_CALLERS:
            c["callers"] += n
        else:
            c["other"] += n
    k = c["kernel"]
    pct = {f"{key}_pct": (100.0 * c[key] / k if k else float("nan"))
           for key in ("exact", "callers", "other", "none")}
    c.update(pct)
    c["completed_pct"] = (100.0 * (k - c["none"]) / k) if k else float("nan")
    return c


def nm_functions(elf):
    """(address, name) of text symbols, sorted."""
    out = subprocess.run(["nm", "-n", "--defined-only", elf], check=True, capture_output=True,
                         text=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWw":
            syms.append((int(parts[0], 16), parts[2]))
    return syms


class Symbolizer:
    def __init__(self, elf):
        self.syms = nm_functions(elf)
        self.addrs = [a for a, _ in self.syms]

    def name(self, ip):
        i = bisect.bisect_right(self.addrs, ip) - 1
        return self.syms[i][1] if i >= 0 else None


SAMPLE_RE = re.compile(r"PERF_RECORD_SAMPLE\(IP, (0x[0-9a-f]+)\): (\d+)/(\d+): (0x[0-9a-f]+)")
MISC_GUEST_KERNEL, MISC_GUEST_USER = 4, 5  # PERF_RECORD_MISC_CPUMODE (perf_event.h)


def perf_guest_samples(dump, vmm_pid):
    """From `perf script -D`: guest user IPs of the VMM process `vmm_pid`, and counts of its
    guest kernel samples, of host samples, and of guest samples of other VMs on the host
    (`-a` samples every guest: other engineers' test VMs included)."""
    user_ips, c = [], {"guest_kernel": 0, "host": 0, "other_vms": 0}
    for misc, pid, _tid, ip in SAMPLE_RE.findall(dump):
        mode = int(misc, 16) & 7
        if mode in (MISC_GUEST_USER, MISC_GUEST_KERNEL) and int(pid) != vmm_pid:
            c["other_vms"] += 1
        elif mode == MISC_GUEST_USER:
            user_ips.append(int(ip, 16))
        elif mode == MISC_GUEST_KERNEL:
            c["guest_kernel"] += 1
        else:
            c["host"] += 1
    return user_ips, c


def perf_accuracy(user_ips, workload_elf):
    sym = Symbolizer(workload_elf)
    leaf = {}
    for ip in user_ips:
        n = sym.name(ip) or "?"
        leaf[n] = leaf.get(n, 0) + 1
    r = flat_result(leaf, len(user_ips))
    r["distinct_ips"] = len(set(user_ips))
    return r
