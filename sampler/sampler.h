/* The recording engine behind `hvprof record`: per-vCPU timer exits, partial samples at the exit,
 * user-stack walks deferred until the guest thread is back in user mode (RFC-0274's model with
 * the hypervisor as "the kernel"), per-vCPU lock-free rings, one drain thread writing FXT.
 * docs/sampling.md describes the design; docs/fxt-samples.md the records.
 *
 *   struct sampler *s = sampler_create(&cfg, &err);    // opens the output: fails before boot
 *   struct vm_hooks h; sampler_hooks(s, &h);           // give them to vm_create (run_session_open)
 *   sampler_attach(s, vm, &boot.image, &err);          // guest memory, the file takes its name
 *   (the command confines itself here: sandbox/sandbox.h)
 *   sampler_start(s, &err);                            // the drain thread
 *   vm_run(vm, &res, &err);
 *   sampler_finish(s, &err);                           // drain, loss records, close the file
 *   sampler_print_summary(s, stderr, false);
 *   sampler_destroy(s);
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "diskfs/diskfs.h"
#include "sampler/exit/mode.h"
#include "sampler/source/config.h"
#include "sampler/source/source.h"
#include "vmm/boot/boot.h"
#include "vmm/vm.h"

#define SAMPLER_DEFAULT_HZ         1000u
#define SAMPLER_DEFAULT_BUFFER     (1u << 20) /* bytes per vCPU ring */
#define SAMPLER_DEFAULT_RECHECK_NS 200000ull  /* 200 us: see docs/sampling.md */
#define SAMPLER_DEFAULT_ABANDON    10u        /* sampling periods a continuation may stay open */
/* ... and at least this long: a guest system call or time slice outlasts 10 periods at 10 kHz */
#define SAMPLER_ABANDON_MIN_NS 10000000ull

struct sampler;

struct sampler *sampler_create(const struct sampler_config *cfg, struct hv_err *err);
void sampler_hooks(struct sampler *s, struct vm_hooks *out);
/* `kernel`: the ELF64 kernel the VMM loaded (cfg.kernel_elf names it), or NULL. */
int sampler_attach(struct sampler *s, struct vm *vm, const struct boot_kernel_image *kernel,
                   struct hv_err *err);
/* The drain thread, after sampler_attach (and after the command confined itself). */
int sampler_start(struct sampler *s, struct hv_err *err);
/* The recording's descriptor (to hand it to the user the process becomes), -1 for none. */
int sampler_output_fd(const struct sampler *s);
/* After vm_run returned: stop the drain thread, move what is left (with loss records), write
 * the session_stop marker and close the file. Returns -1 if the recording could not be written
 * completely (err says why; what was written before the failure is a valid prefix). */
int sampler_finish(struct sampler *s, struct hv_err *err);
/* The whole account (record -v, or a log); above SAMPLER_SUMMARY_VCPUS vCPUs their rows are
 * folded to the busiest and the idlest unless every_vcpu. */
#define SAMPLER_SUMMARY_VCPUS 32
void sampler_print_summary(const struct sampler *s, FILE *out, bool every_vcpu);
/* A few lines: samples, vCPUs, rate, time, what was missed or lost (record on a terminal). */
void sampler_print_brief(const struct sampler *s, FILE *out);
/* With cfg.ring_bytes: ask the drain thread for a snapshot of the flight recorder (written
 * within one pass, ~10 ms). Async-signal-safe: `record` calls it on SIGUSR2. */
void sampler_request_snapshot(struct sampler *s);
/* Before sampler_finish, with cfg.ring_bytes: the guest ended the recording itself (a reset, a
 * triple fault, an internal error; `why` names it): the flight recorder writes a snapshot
 * for it, and the file's session_stop says why. */
void sampler_guest_stopped(struct sampler *s, const char *why);
/* --quiet: only what the file lacks (records lost to a write error or dropped, metadata left
 * out), one line each. */
void sampler_print_warnings(const struct sampler *s, FILE *out);
/* One line per vCPU with the exit hook's mean time per stage (`hvprof record --stage-times`):
 *   stage-times vcpu=I samples=N user=.. kernel=.. idle=.. missed=.. dropped=.. exits=..
 *               rechecks=.. walk_fail=.. regs_ns=.. walk_ns=.. push_ns=.. total_ns=.. max_ns=..
 * regs = the vCPU snapshot (registers; the MP state at kernel-mode ticks); walk = identity, user
 * walk, completion records; push = the sample's kernel walk and ring record, and re-check timer
 * bookkeeping (sampler/exit/exit.c, sampler/exit/sample.c). */
void sampler_print_stage_times(const struct sampler *s, FILE *out);
void sampler_destroy(struct sampler *s);

void sampler_get_totals(const struct sampler *s, struct sampler_totals *t);
