/* Test data from a real guest: the pages of guest memory the Linux layer reads, captured at the
 * end of a recording by `hvprof-capture` (tests/tools/capture/main.c: `hvprof record` with a
 * hook, built beside hvprof, never part of it; docs/linux-introspection.md, "Captured
 * guests"). guestos/tests/test_captured.c runs the layer on them again and compares with what
 * the guest printed about itself. The capture swaps the process's SIGSEGV handler and writes a
 * file: test tooling, kept out of the product.
 *
 * How: guest RAM is copied, VMCOREINFO is found in the copy, then the copy is made inaccessible
 * and every page the layer touches while it describes the kernel, reads each CPU's current task,
 * lists the kernel modules with their symbols and reads the user processes' executables from the
 * page cache (exe_files.h) is recorded (a SIGSEGV handler opens each page
 * on its first touch). Only those pages are written:
 *
 *   "HVCAPT01"  u32 nslots  u32 npages  { u64 gpa, u64 size } x nslots  { u64 gpa, 4096 bytes } x
 * npages
 *
 * little-endian; the VMCOREINFO page is among them, so a scan of the sparse image finds it. */
#pragma once

#include <stdio.h>

#include "common/err.h"
#include "guestwalk/gmem.h"

#define LX_CAPTURE_MAGIC "HVCAPT01"

/* Capture `mem` (the guest stopped) into `path`; prints what the layer read to `log`. */
int lx_capture(const struct gmem *mem, const char *path, FILE *log, struct hv_err *err);
