/* The disks of `run`/`record`, settled once before anything boots (docs/security.md, "Disk
 * images"): each disk's format decided (as given, or probed once and then pinned, so that the
 * block device, its file systems and the boot loader all read the same thing), its qcow2 chain
 * resolved by hvprof's rules, and one line each before boot that says what will happen: a
 * probed format, the chain, the private overlay that drops the guest's writes. Every file of
 * every chain is kept as an input no output may name. */
#pragma once

#include <stdio.h>

#include "common/err.h"

struct run_opts;

/* 0, or -1 with the disk's error; notes go to `out` (NULL: none). */
int run_disks_prepare(struct run_opts *o, FILE *out, struct hv_err *err);

struct vm;
/* After the guest stopped: one warning per disk whose guest was refused a first sector that
 * would have changed the image's probed format (printed even with --quiet: it is an attack or
 * a guest that needs format=raw). */
void run_disks_warnings(const struct vm *vm, const struct run_opts *o, FILE *out);
