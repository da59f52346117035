#!/usr/bin/python3
"""Google's pprof, built from Debian's golang-github-google-pprof-dev, on `hvprof report`'s
profile.pb.gz of the demo guest (tests/consumers/record.sh). What a user runs, with what it must
show (docs/report.md, "Checked with"):

  -top        every function's flat samples equal `hvprof report --format top`'s self samples;
              a name two binaries share is shown once per binary ("_start (workload.elf)")
  -traces     a known user chain, root to leaf as the guest ran it
  -tags       vcpu 0 and 1 with the shares of top's per-vCPU table
  -tagfocus   vcpu=0 keeps exactly vcpu 0's samples (a numeric filter in pprof)
  -disasm     a kernel function and a user function, samples on their instructions, from the
              kernel ELF and the program found through PPROF_BINARY_PATH
  -list       the same functions' source lines, every sample on one (the lines hvprof wrote
              from the binaries' DWARF)
  -raw        every location in inlined code carries the inlined functions as frames of their
              own, each with its line, as binutils' `addr2line -i -f` prints them
  -diff_base  `hvprof diff`'s base.pb.gz and new.pb.gz (the base: report-base/): every
              function's flat samples equal the new top table's self samples minus the base's;
              `hvprof diff`'s own table shows the two tables' self shares

usage: check_pprof_tool.py PPROF OUT_DIR GUEST_BUILD_DIR
  PPROF: build_pprof.sh's binary; OUT_DIR: record.sh's directory (report/ inside)."""
import os
import re
import subprocess
import sys

PPROF, out_dir, guest = sys.argv[1:4]
report = os.path.join(out_dir, "report")
profile = os.path.join(report, "profile.pb.gz")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


ENV = dict(os.environ, HOME=out_dir,
           PPROF_BINARY_PATH=os.path.join(guest, "progs") + os.pathsep + guest)


def pprof(*args, target=profile):
    r = subprocess.run([PPROF, "-sample_index=samples", *args, target], env=ENV,
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        failures.append("pprof %s exited %d: %s" % (" ".join(args), r.returncode, r.stderr))
        print("FAIL pprof %s: %s" % (" ".join(args), r.stderr))
        return ""
    return r.stdout


# hvprof's own table: self samples per (object, symbol); per-vCPU shares.
self_samples, objects_of, vcpu_share = {}, {}, {}
total = None
section = "functions"
with open(os.path.join(report, "top.txt")) as f:
    for line in f:
        m = re.match(r"# hvprof report: (\d+) samples", line)
        if m:
            total = int(m.group(1))
        if line.startswith("# Per process"):
            section = "processes"
        elif line.startswith("# Per vCPU"):
            section = "vcpus"
        if line.startswith("#") or not line.strip():
            continue
        cols = line.split()
        if section == "functions":
            # Children Self Samples SharedObject [.]|[k] Symbol
            obj, sym, n = cols[3], " ".join(cols[5:]), int(cols[2])
            self_samples[(obj, sym)] = n
            objects_of.setdefault(sym, set()).add(obj)
        elif section == "vcpus":
            vcpu_share[cols[3]] = cols[0]
check(total is not None and total > 500, "top.txt: %s samples" % total)


def pprof_name(obj, sym):
    return "%s (%s)" % (sym, obj) if len(objects_of[sym]) > 1 else sym


def symbolized(sym):
    """A name from a symbol table, not an address or module+offset stand-in."""
    return not sym.startswith("0x") and "+0x" not in sym


# -top: every function, flat samples as counts. hvprof's table counts a sample in inlined code
# for the function it was inlined into: pprof's -noinlines (without it, pprof gives the inlined
# function its own row; checked below).
top = pprof("-top", "-noinlines", "-nodecount=1000000", "-nodefraction=0", "-edgefraction=0")
flat = {}
for line in top.splitlines():
    m = re.match(r"\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+\d+\s+[\d.]+%\s+(.+)$", line)
    if m:
        flat[m.group(2)] = int(m.group(1))
m = re.search(r"of (\d+) total", top)
check(m is not None and int(m.group(1)) == total,
      "-top: total %s equals hvprof's %s" % (m.group(1) if m else None, total))
compared, wrong = 0, []
for (obj, sym), n in self_samples.items():
    if n == 0 or not symbolized(sym):
        continue
    compared += 1
    got = flat.get(pprof_name(obj, sym))
    if got != n:
        wrong.append("%s: pprof %s, hvprof %d" % (pprof_name(obj, sym), got, n))
check(compared >= 10 and not wrong,
      "-top: flat samples of %d functions equal hvprof's self samples%s"
      % (compared, "" if not wrong else ": " + "; ".join(wrong[:8])))
shared = sorted(s for s, objs in objects_of.items() if len(objs) > 1 and symbolized(s))
check("_start" in shared and all("_start (%s)" % o in flat for o in objects_of["_start"]),
      "-top: _start kept apart per binary: %s" % sorted(k for k in flat if k.startswith("_start")))
check(not any(s in flat for s in shared),
      "-top: no shared name left unqualified (%d shared)" % len(shared))

# -traces: the demo's hot_leaf chain, leaf first as pprof prints it.
traces = pprof("-traces")
chain = ["hot_leaf", "alpha", "main (workload.elf)", "_start (workload.elf)"]


def frames(block):
    """A -traces block's function names, leaf first: the first frame line carries the value."""
    names = []
    for ln in block.splitlines():
        ln = ln.strip()
        if not ln or ln.startswith("-") or re.match(r"^\w+:\s", ln):
            continue  # the separator's rest, or a label line (vcpu:  0)
        names.append(re.sub(r"^\d+\s+", "", ln) if not names else ln)
    return names


def has_chain(block):
    names = frames(block)
    return any(names[i:i + len(chain)] == chain for i in range(len(names)))


blocks = traces.split("-----------+")
check(any(has_chain(b) for b in blocks), "-traces: %s" % " <- ".join(chain))

# -tags: vcpu 0 and 1, with top's per-vCPU shares.
tags = pprof("-tags")
vblock = tags.split(" vcpu:")[1] if " vcpu:" in tags else ""
vcpus = dict((v, pct + "%") for pct, v in re.findall(r"\(\s*([\d.]+)%\):\s*(\d+)", vblock))
check(vcpus and vcpus == vcpu_share,
      "-tags: vcpu shares %s equal top's per-vCPU table %s" % (vcpus, vcpu_share))

# -tagfocus=vcpu=0: exactly vcpu 0's samples.
focus = pprof("-tagfocus=vcpu=0", "-top", "-nodefraction=0", "-edgefraction=0")
m = re.search(r"accounting for (\d+),", focus)
want = round(total * float(vcpu_share.get("0", "0%").rstrip("%")) / 100) if total else -1
check(m is not None and abs(int(m.group(1)) - want) <= 1,
      "-tagfocus=vcpu=0: %s samples, vcpu 0 has %d" % (m.group(1) if m else None, want))


def routine(text, name, line_rx):
    """(flat, cum) of pprof's ROUTINE header, and the flat and cum samples summed over the
    instruction or source lines (line_rx: what follows the two value columns)."""
    m = re.search(r"ROUTINE =+ %s\b.*\n\s*(\d+)\s+(\d+) \(flat, cum\)" % re.escape(name), text)
    rows = re.findall(r"^\s+(\d+|\.)\s+(\d+|\.)\s+" + line_rx, text, re.M)
    num = lambda v: 0 if v == "." else int(v)
    return ((int(m.group(1)), int(m.group(2))) if m else None,
            (sum(num(a) for a, _ in rows), sum(num(b) for _, b in rows)))


# -disasm and -list. pprof takes one address space: it computes a binary's base from the
# first sample address it meets, so the samples are narrowed to the function's own
# (-show_from) and, for a user function, to user mode (-tagfocus=cpl=3), where no other
# binary's frames sit above it (docs/report.md). Regexps are unanchored in pprof: \b.
for name, obj, cpl, src in (("kbusy_spin", "hvprof-guest.elf", "0", "syscall.c"),
                            ("hot_leaf", "workload.elf", "3", "workload.c")):
    want = self_samples.get((obj, name), 0)
    narrow = ["-tagfocus=cpl=" + cpl, r"-show_from=\b%s\b" % name]
    dis = pprof(*narrow, r"-disasm=\b%s\b" % name)
    head, on_insns = routine(dis, name, r"[0-9a-f]+: \w")
    check(head == (want, want) and on_insns == (want, want) and want > 0,
          "-disasm=%s: %s (flat, cum), %s on its instructions, hvprof %d"
          % (name, head, on_insns, want))
    # hvprof's own source lines (the binaries' DWARF, inlined code at its call site): no
    # symbolization by pprof.
    lst = pprof(*narrow, "-noinlines", r"-list=\b%s\b" % name)
    head, on_lines = routine(lst, name, r"\d+:")
    check(head == (want, want) and on_lines == (want, want) and want > 0 and
          re.search(r"ROUTINE =+ %s in \S*/%s" % (name, src), lst) is not None,
          "-list=%s: in %s, %s (flat, cum), %s on its source lines, hvprof %d"
          % (name, src, head, on_lines, want))

# Inlined frames (pprof's Location.line, innermost first): every location of the demo's
# binaries, as -raw prints it, against `addr2line -i -f` at its address (a return address's
# call at address - 1): the same functions and lines, frame by frame.
raw = pprof("-raw")
mapping_file = {}
for m in re.finditer(r"^(\d+): 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S+)", raw, re.M):
    base = os.path.basename(m.group(2))
    for d in (guest, os.path.join(guest, "progs")):
        if os.path.exists(os.path.join(d, base)):
            mapping_file[m.group(1)] = os.path.join(d, base)
locations = re.findall(r"^\s+\d+: (0x[0-9a-f]+) M=(\d+) (.*)\n((?:\s{13}\S.*\n)*)",
                       raw.split("\nMappings")[0] + "\n", re.M)


def raw_frame(text):
    """"name (binary) /path/file.c:12 s=10(system)" -> "name file.c:12"."""
    m = re.match(r"(\S+)(?: \(\S+\))? (\S+):(\d+) s=", text.strip())
    return (m.group(1), os.path.basename(m.group(2)), int(m.group(3))) if m else None


def addr2line_frames(binary, addr):
    r = subprocess.run(["addr2line", "-i", "-f", "-e", binary, "0x%x" % addr],
                       capture_output=True, text=True)
    out = r.stdout.splitlines()
    frames = []
    for name, at in zip(out[0::2], out[1::2]):
        at = at.split(" (discriminator")[0]
        f, _, ln = at.rpartition(":")
        frames.append((name, os.path.basename(f), int(ln) if ln.isdigit() else 0))
    return frames


inlined, wrong = 0, []
for addr, mapping, first, rest in locations:
    if mapping not in mapping_file or not rest.strip():
        continue
    ours = [raw_frame(first)] + [raw_frame(x) for x in rest.splitlines() if x.strip()]
    if None in ours:
        continue
    inlined += 1
    a = int(addr, 16)
    if ours not in (addr2line_frames(mapping_file[mapping], a),
                    addr2line_frames(mapping_file[mapping], a - 1)):
        wrong.append("%s: %s, addr2line %s" % (addr, ours,
                                               addr2line_frames(mapping_file[mapping], a)))
check(inlined >= 3 and not wrong,
      "-raw: %d locations in inlined code, their frames those of addr2line -i -f%s"
      % (inlined, "" if not wrong else ": " + "; ".join(wrong[:4])))
tinl = pprof("-top", "-nodecount=1000000", "-nodefraction=0", "-edgefraction=0")
check(re.search(r"\swork_unit\b", tinl) is not None,
      "-top: the inlined work_unit has samples of its own without -noinlines")

# -diff_base: the base recording (record.sh: the workload program alone) subtracted, as
# pprof does it (its samples negated), on the two files `hvprof diff --format pprof` wrote
# (a name two binaries share in either recording is qualified in both); then `hvprof diff`'s
# own table against the two reports' tables.
def parse_top(path):
    own, tot = {}, None
    with open(path) as f:
        for line in f:
            m = re.match(r"# hvprof report: (\d+) samples", line)
            if m:
                tot = int(m.group(1))
            if line.startswith("# Per process"):
                break
            if line.startswith("#") or not line.strip():
                continue
            cols = line.split()
            own[(cols[3], " ".join(cols[5:]))] = int(cols[2])
    return own, tot


base_profile = os.path.join(report, "diff", "base.pb.gz")
base_self, base_total = parse_top(os.path.join(out_dir, "report-base", "top.txt"))
objects_both = {}
for obj, sym in list(base_self) + list(self_samples):
    objects_both.setdefault(sym, set()).add(obj)
dtop = pprof("-top", "-nodecount=1000000", "-nodefraction=0", "-edgefraction=0",
             "-diff_base=" + base_profile, target=os.path.join(report, "diff", "new.pb.gz"))
dflat = {}
for line in dtop.splitlines():
    m = re.match(r"\s*(-?\d+)\s+-?[\d.]+%\s+-?[\d.]+%\s+-?\d+\s+-?[\d.]+%\s+(.+)$", line)
    if m:
        dflat[m.group(2)] = int(m.group(1))
compared, wrong = 0, []
for key in set(base_self) | set(self_samples):
    obj, sym = key
    want = self_samples.get(key, 0) - base_self.get(key, 0)
    if want == 0 or not symbolized(sym):
        continue
    compared += 1
    name = "%s (%s)" % (sym, obj) if len(objects_both[sym]) > 1 else sym
    if dflat.get(name) != want:
        wrong.append("%s: pprof %s, hvprof %d" % (name, dflat.get(name), want))
check(compared >= 10 and not wrong,
      "-diff_base: flat samples of %d functions equal the new self samples minus the base's%s"
      % (compared, "" if not wrong else ": " + "; ".join(wrong[:8])))

rows, wrong = 0, []
with open(os.path.join(report, "diff", "diff.txt")) as f:
    for line in f:
        if line.startswith("#") or not line.strip():
            continue
        cols = line.split()
        key = (cols[6], " ".join(cols[8:]))
        rows += 1
        want = ("%.2f%%" % (100.0 * base_self.get(key, 0) / base_total),
                "%.2f%%" % (100.0 * self_samples.get(key, 0) / total))
        if (cols[0], cols[1]) != want:
            wrong.append("%s: diff %s %s, report %s %s" % (key, cols[0], cols[1], *want))
check(rows >= 10 and not wrong,
      "hvprof diff: the self shares of its %d rows equal the two reports' tables%s"
      % (rows, "" if not wrong else ": " + "; ".join(wrong[:8])))

if failures:
    print("\n%d check(s) failed" % len(failures))
    sys.exit(1)
print("\nall pprof checks passed")
