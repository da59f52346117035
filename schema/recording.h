/* Writing an hvprof recording with the generic FXT writer (fxt/writer.h): the providers ("hvprof"
 * and one "vcpu<i>" per vCPU, hvfxt_vcpu_provider()), the kernel objects that name the VM, the
 * control thread, the vCPUs and the guest's address spaces and threads (koids: schema.h), session
 * markers, module and mapping records, and moving a vCPU's ring into its provider. Everything
 * that is not per vCPU goes to the control provider. Drain-thread side; see docs/fxt-samples.md.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "fxt/ring.h"
#include "fxt/writer.h"
#include "schema/encode.h"

/* Create `path` and write the recording's header: magic, provider info for "hvprof" and every
 * vCPU, then the VM process (named vm_name), the control thread and each vCPU thread. The header
 * is on disk when this returns. Timestamps are in ticks_per_second. */
int hvfxt_recording_open(struct fxt_writer *w, const char *path, uint64_t ticks_per_second,
                         uint32_t nvcpus, const char *vm_name, struct hv_err *err);
/* The same into an open, empty file (fxt_writer_open_fd: the writer owns fd). */
int hvfxt_recording_open_fd(struct fxt_writer *w, int fd, const char *name,
                            uint64_t ticks_per_second, uint32_t nvcpus, const char *vm_name,
                            struct hv_err *err);

/* The vCPU's ring: its loss records are hvprof's (hvfxt_enc_loss). */
int hvfxt_vcpu_ring_init(struct fxt_ring *r, uint64_t capacity_words, uint32_t vcpu,
                         struct hv_err *err);
/* Move vCPU `vcpu`'s ring into its provider (fxt_writer_drain_ring). */
long hvfxt_drain_vcpu(struct fxt_writer *w, uint32_t vcpu, struct fxt_ring *r, bool final,
                      struct hv_err *err);

/* Guest process `as` and guest thread `thread` of process `as` (schema.h koids), with the
 * guest's own pid / tid when known (>= 0; -1: none). Written again when the name changes: the
 * last record of a koid names it. */
int hvfxt_write_guest_process(struct fxt_writer *w, uint32_t as, const char *name,
                              int64_t guest_pid, struct hv_err *err);
/* A thread's ids in its own pid namespace (HVFXT_ARG_NS_*), written with its guest tid. */
struct hvfxt_thread_ns {
    int64_t ns_tid, ns_pid;
    uint64_t pid_ns;      /* the namespace's inode number */
    uint64_t mnt_ns;      /* its mount namespace's, 0: not written */
    const char *hostname; /* its UTS namespace's, NULL or "": not written */
};
int hvfxt_write_guest_thread(struct fxt_writer *w, uint32_t thread, uint32_t as, const char *name,
                             int64_t guest_tid, const struct hvfxt_thread_ns *ns,
                             struct hv_err *err);
/* A control group's record (HVFXT_KOID_GROUP_BASE, docs/containers.md): its path. */
int hvfxt_write_group(struct fxt_writer *w, uint32_t number, const char *path, struct hv_err *err);
int hvfxt_write_marker(struct fxt_writer *w, const char *name, uint64_t ts,
                       const struct fxt_arg *args, unsigned nargs, struct hv_err *err);
int hvfxt_write_module(struct fxt_writer *w, const struct hvfxt_module *m, struct hv_err *err);
int hvfxt_write_mapping(struct fxt_writer *w, const struct hvfxt_mapping *m, struct hv_err *err);
/* A runtime code record (blob 0x85). */
int hvfxt_write_code(struct fxt_writer *w, const struct hvfxt_code *c, struct hv_err *err);
/* syms[0..n) of module `module_id`, in as many symbol records as they need. */
int hvfxt_write_symbols(struct fxt_writer *w, uint64_t module_id, const struct hvfxt_symbol *syms,
                        size_t n, struct hv_err *err);
