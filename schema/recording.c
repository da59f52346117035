/* An hvprof recording on the generic FXT writer (recording.h). */
#include "schema/recording.h"

#include <inttypes.h>

#include <stdio.h>
#include <unistd.h>

static int emit_control(struct fxt_writer *w, size_t n, struct hv_err *err)
{
    return fxt_writer_emit(w, HVFXT_CONTROL_PROVIDER, w->scratch, n, err);
}

static int write_header(struct fxt_writer *w, uint32_t nvcpus, const char *vm_name,
                        struct hv_err *err);

int hvfxt_recording_open(struct fxt_writer *w, const char *path, uint64_t ticks_per_second,
                         uint32_t nvcpus, const char *vm_name, struct hv_err *err)
{
    if (nvcpus == 0 || nvcpus > HVFXT_MAX_VCPUS)
        return hv_errf(err, "recording: %u vCPUs out of range 1..%u", nvcpus, HVFXT_MAX_VCPUS);
    if (fxt_writer_open(w, path, ticks_per_second, nvcpus + 1, err) < 0)
        return -1;
    return write_header(w, nvcpus, vm_name, err);
}

int hvfxt_recording_open_fd(struct fxt_writer *w, int fd, const char *name,
                            uint64_t ticks_per_second, uint32_t nvcpus, const char *vm_name,
                            struct hv_err *err)
{
    if (nvcpus == 0 || nvcpus > HVFXT_MAX_VCPUS) {
        close(fd);
        return hv_errf(err, "recording: %u vCPUs out of range 1..%u", nvcpus, HVFXT_MAX_VCPUS);
    }
    if (fxt_writer_open_fd(w, fd, name, ticks_per_second, nvcpus + 1, err) < 0)
        return -1;
    return write_header(w, nvcpus, vm_name, err);
}

static int write_header(struct fxt_writer *w, uint32_t nvcpus, const char *vm_name,
                        struct hv_err *err)
{
    uint64_t *s = w->scratch;
    const size_t cap = FXT_MAX_RECORD_WORDS;
    if (fxt_writer_provider(w, HVFXT_CONTROL_PROVIDER, HVFXT_CONTROL_PROVIDER_NAME, err) < 0)
        goto fail;
    for (uint32_t i = 0; i < nvcpus; i++) {
        char name[16];
        snprintf(name, sizeof(name), "vcpu%u", i);
        if (fxt_writer_provider(w, hvfxt_vcpu_provider(i), name, err) < 0)
            goto fail;
    }
    if (emit_control(w, fxt_enc_kobj_process(s, cap, HVFXT_KOID_VM, vm_name ? vm_name : "vm"),
                     err) ||
        emit_control(w, fxt_enc_kobj_thread(s, cap, HVFXT_KOID_CONTROL, "hvprof", HVFXT_KOID_VM),
                     err))
        goto fail;
    for (uint32_t i = 0; i < nvcpus; i++) {
        char name[16];
        snprintf(name, sizeof(name), "vcpu %u", i);
        if (emit_control(w, fxt_enc_kobj_thread(s, cap, hvfxt_koid_vcpu(i), name, HVFXT_KOID_VM),
                         err))
            goto fail;
    }
    /* On disk now: a recording that exists is a valid (empty) one. */
    if (fxt_writer_flush(w, err) < 0)
        goto fail;
    return 0;
fail:
    fxt_writer_close(w, NULL);
    return -1;
}

int hvfxt_vcpu_ring_init(struct fxt_ring *r, uint64_t capacity_words, uint32_t vcpu,
                         struct hv_err *err)
{
    return fxt_ring_init(r, capacity_words, vcpu, hvfxt_enc_loss, HVFXT_LOSS_WORDS, err);
}

long hvfxt_drain_vcpu(struct fxt_writer *w, uint32_t vcpu, struct fxt_ring *r, bool final,
                      struct hv_err *err)
{
    return fxt_writer_drain_ring(w, hvfxt_vcpu_provider(vcpu), r, final, err);
}

int hvfxt_write_guest_process(struct fxt_writer *w, uint32_t as, const char *name,
                              int64_t guest_pid, struct hv_err *err)
{
    struct fxt_arg a = {
        .type = FXT_ARG_I64, .name = fxt_str_inline(HVFXT_ARG_GUEST_PID), .v.i64 = guest_pid};
    return emit_control(w,
                        fxt_enc_kobj(w->scratch, FXT_MAX_RECORD_WORDS, FXT_OBJ_PROCESS,
                                     hvfxt_koid_guest_process(as), fxt_str_inline(name), &a,
                                     guest_pid >= 0 ? 1 : 0),
                        err);
}

int hvfxt_write_guest_thread(struct fxt_writer *w, uint32_t thread, uint32_t as, const char *name,
                             int64_t guest_tid, const struct hvfxt_thread_ns *ns,
                             struct hv_err *err)
{
    /* The "process" koid argument first: Perfetto and trace2json need it (fxt_enc_kobj_thread). */
    struct fxt_arg a[7] = {
        {.type = FXT_ARG_KOID,
         .name = fxt_str_inline("process"),
         .v.u64 = hvfxt_koid_guest_process(as)},
    };
    unsigned n = 1;
    if (guest_tid >= 0)
        a[n++] = (struct fxt_arg){
            .type = FXT_ARG_I64, .name = fxt_str_inline(HVFXT_ARG_GUEST_TID), .v.i64 = guest_tid};
    if (guest_tid >= 0 && ns) {
        a[n++] = (struct fxt_arg){
            .type = FXT_ARG_I64, .name = fxt_str_inline(HVFXT_ARG_NS_TID), .v.i64 = ns->ns_tid};
        a[n++] = (struct fxt_arg){
            .type = FXT_ARG_I64, .name = fxt_str_inline(HVFXT_ARG_NS_PID), .v.i64 = ns->ns_pid};
        a[n++] = (struct fxt_arg){
            .type = FXT_ARG_U64, .name = fxt_str_inline(HVFXT_ARG_PID_NS), .v.u64 = ns->pid_ns};
        if (ns->mnt_ns)
            a[n++] = (struct fxt_arg){
                .type = FXT_ARG_U64, .name = fxt_str_inline(HVFXT_ARG_MNT_NS), .v.u64 = ns->mnt_ns};
        if (ns->hostname && ns->hostname[0])
            a[n++] = (struct fxt_arg){.type = FXT_ARG_STRING,
                                      .name = fxt_str_inline(HVFXT_ARG_HOSTNAME),
                                      .v.str = fxt_str_inline(ns->hostname)};
    }
    return emit_control(w,
                        fxt_enc_kobj(w->scratch, FXT_MAX_RECORD_WORDS, FXT_OBJ_THREAD,
                                     hvfxt_koid_guest_thread(thread), fxt_str_inline(name), a, n),
                        err);
}

int hvfxt_write_group(struct fxt_writer *w, uint32_t number, const char *path, struct hv_err *err)
{
    return emit_control(w,
                        fxt_enc_kobj(w->scratch, FXT_MAX_RECORD_WORDS, FXT_OBJ_JOB,
                                     hvfxt_koid_group(number), fxt_str_inline(path), NULL, 0),
                        err);
}

int hvfxt_write_marker(struct fxt_writer *w, const char *name, uint64_t ts,
                       const struct fxt_arg *args, unsigned nargs, struct hv_err *err)
{
    return emit_control(
        w, hvfxt_enc_marker(w->scratch, FXT_MAX_RECORD_WORDS, name, ts, args, nargs), err);
}

int hvfxt_write_module(struct fxt_writer *w, const struct hvfxt_module *m, struct hv_err *err)
{
    return emit_control(w, hvfxt_enc_module(w->scratch, FXT_MAX_RECORD_WORDS, m), err);
}

int hvfxt_write_code(struct fxt_writer *w, const struct hvfxt_code *c, struct hv_err *err)
{
    size_t n = hvfxt_enc_code(w->scratch, FXT_MAX_RECORD_WORDS, c, false);
    if (!n)
        return hv_errf(err,
                       "runtime code record: the code object at 0x%" PRIx64 " cannot be encoded",
                       c->code);
    return emit_control(w, n, err);
}

int hvfxt_write_symbols(struct fxt_writer *w, uint64_t module_id, const struct hvfxt_symbol *syms,
                        size_t n, struct hv_err *err)
{
    while (n) {
        size_t taken;
        size_t words =
            hvfxt_enc_symbols(w->scratch, FXT_MAX_RECORD_WORDS, module_id, syms, n, &taken);
        if (!words)
            return hv_errf(err, "symbol record: the symbol at 0x%" PRIx64 " cannot be encoded",
                           syms->addr);
        if (emit_control(w, words, err) < 0)
            return -1;
        syms += taken;
        n -= taken;
    }
    return 0;
}

int hvfxt_write_mapping(struct fxt_writer *w, const struct hvfxt_mapping *m, struct hv_err *err)
{
    return emit_control(w, hvfxt_enc_mapping(w->scratch, FXT_MAX_RECORD_WORDS, m), err);
}
