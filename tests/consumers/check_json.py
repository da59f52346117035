#!/usr/bin/env python3
"""hvprof's JSON outputs read as a program reads them (docs/json.md): the consumer recording's
profile.json and diff/diff.json valid against their published schemas (python3-jsonschema, the
reference validator), and their numbers consistent: the stacks' weights add up to the samples,
each frame names a listed function, each function's self weight is the stacks' with it at the
leaf, a diff's stacks add up to both recordings' samples.
usage: check_json.py REPORT_DIR SCHEMA_DIR"""
import collections
import json
import os
import sys

import jsonschema

report, schemas = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def load(name):
    with open(os.path.join(report, name)) as f:
        return json.load(f)


def schema(name):
    with open(os.path.join(schemas, name)) as f:
        return json.load(f)


prof = load("profile.json")
try:
    jsonschema.validate(prof, schema("hvprof-report.schema.json"))
    check(True, "profile.json is valid against hvprof-report.schema.json")
except jsonschema.ValidationError as e:
    check(False, "profile.json: %s at %s" % (e.message, list(e.absolute_path)))
funcs, stacks = prof["functions"], prof["stacks"]
check(sum(s["weight"] for s in stacks) == prof["samples"],
      "profile.json: the %d stacks' weights add up to its %d samples" % (len(stacks), prof["samples"]))
check(all(f < len(funcs) for s in stacks for f in s["frames"]),
      "profile.json: every frame is an index into its %d functions" % len(funcs))
leaf = collections.Counter()
for s in stacks:
    if s["frames"]:
        leaf[s["frames"][0]] += s["weight"]
check(all(funcs[i]["self"] == leaf[i] for i in range(len(funcs))),
      "profile.json: each function's self weight is that of the stacks with it at the leaf")
check(prof["recording"]["hvprof_version"] != "" and prof["recording"]["vcpus"] == 2,
      "profile.json: the recording's header (hvprof %s, %d vCPUs)" %
      (prof["recording"]["hvprof_version"], prof["recording"]["vcpus"]))

diff = load("diff/diff.json")
try:
    jsonschema.validate(diff, schema("hvprof-diff.schema.json"))
    check(True, "diff/diff.json is valid against hvprof-diff.schema.json")
except jsonschema.ValidationError as e:
    check(False, "diff.json: %s at %s" % (e.message, list(e.absolute_path)))
new = sum(s["new"] for s in diff["stacks"])
check(new == diff["new"]["samples"],
      "diff.json: the stacks' new counts add up to NEW's %d samples" % diff["new"]["samples"])
check(all(f["base_total"] or f["new_total"] for f in diff["functions"]),
      "diff.json: every function is in one recording at least")
if failures:
    sys.exit("%d check(s) failed" % len(failures))
