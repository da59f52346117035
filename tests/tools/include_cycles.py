#!/usr/bin/env python3
"""No include circle among a library's modules (docs/architecture.md, "No circles").

A module is a file stem: x.c with its x.h (a header without a .c, such as a library's private
header sampler_priv.h or a types-only header, is a module of its own). Module A depends on B when
x.c or x.h of A includes B's header. A circle (A depends on B ... depends on A) means neither can
be understood, tested or replaced without the other: the drain thread's features calling each
other by name, a runtime's frames merged inside native symbolization. Exit status 1 lists every
circle found.

Usage: include_cycles.py ROOT DIR...   (DIRs relative to ROOT: sampler report runtime python)
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def modules(root, dirs):
    files = {}
    for d in dirs:
        for dp, _, names in os.walk(os.path.join(root, d)):
            for n in names:
                if n.endswith((".c", ".h")):
                    rel = os.path.relpath(os.path.join(dp, n), root)
                    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                        files[rel] = INCLUDE.findall(f.read())
    graph = {}
    for rel, incs in files.items():
        mod = rel[:-2]
        deps = graph.setdefault(mod, set())
        for inc in incs:
            if inc.endswith(".h") and inc in files and inc[:-2] != mod:
                deps.add(inc[:-2])
    return graph


def circles(graph):
    found, state, stack = set(), {}, []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == 1:
                cyc = stack[stack.index(v):]
                k = cyc.index(min(cyc))
                found.add(tuple(cyc[k:] + cyc[:k]))
            elif not state.get(v):
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(graph):
        if not state.get(u):
            visit(u)
    return sorted(found)


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    sys.setrecursionlimit(100000)
    graph = modules(sys.argv[1], sys.argv[2:])
    found = circles(graph)
    for c in found:
        print("include circle: " + " -> ".join(c + (c[0],)))
    print(f"{len(graph)} modules in {' '.join(sys.argv[2:])}: {len(found)} circles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
