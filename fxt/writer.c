/* The FXT file writer: one file, provider 0 for the VM, provider i+1 for vCPU i (writer.h). */
#include "fxt/writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fxt/ring.h"

static int put(struct fxt_writer *w, const uint64_t *words, size_t n, struct hv_err *err)
{
    if (n && fwrite(words, 8, n, w->f) != n)
        return hv_errf_errno(err, "fxt writer: write");
    w->words_written += n;
    return 0;
}

int fxt_writer_select(struct fxt_writer *w, uint32_t provider, struct hv_err *err)
{
    if (provider > w->nvcpus)
        return hv_errf(err, "fxt writer: provider %u does not exist", provider);
    if (w->have_cur && w->cur_provider == provider)
        return 0;
    uint64_t rec[2];
    if (put(w, rec, fxt_enc_provider_section(rec, 2, provider), err))
        return -1;
    w->cur_provider = provider;
    w->have_cur = true;
    w->records_written++;
    if (!w->inited[provider]) {
        /* Readers keep the tick rate per provider (FXT spec "Provider section metadata"). */
        if (put(w, rec, fxt_enc_init(rec, 2, w->ticks_per_second), err))
            return -1;
        w->inited[provider] = 1;
        w->records_written++;
    }
    return 0;
}

int fxt_writer_append(struct fxt_writer *w, const uint64_t *words, size_t nwords,
                      struct hv_err *err)
{
    if (!w->have_cur)
        return hv_errf(err, "fxt writer: no provider selected");
    return put(w, words, nwords, err);
}

int fxt_writer_emit(struct fxt_writer *w, uint32_t provider, const uint64_t *words, size_t nwords,
                    struct hv_err *err)
{
    if (nwords == 0)
        return hv_errf(err, "fxt writer: record does not fit (encoder returned 0)");
    if (fxt_writer_select(w, provider, err) || put(w, words, nwords, err))
        return -1;
    w->records_written++;
    return 0;
}

static int emit_control(struct fxt_writer *w, size_t n, struct hv_err *err)
{
    return fxt_writer_emit(w, FXT_CONTROL_PROVIDER, w->scratch, n, err);
}

int fxt_writer_open(struct fxt_writer *w, const char *path, uint64_t ticks_per_second,
                    uint32_t nvcpus, const char *vm_name, struct hv_err *err)
{
    memset(w, 0, sizeof(*w));
    if (ticks_per_second == 0)
        return hv_errf(err, "fxt writer: ticks per second must not be 0");
    if (nvcpus == 0 || nvcpus > 0xefff)
        return hv_errf(err, "fxt writer: %u vCPUs out of range", nvcpus);
    w->ticks_per_second = ticks_per_second;
    w->nvcpus = nvcpus;
    w->inited = calloc((size_t)nvcpus + 1, 1);
    if (!w->inited)
        return hv_errf_errno(err, "fxt writer: allocating");
    w->f = fopen(path, "wb");
    if (!w->f) {
        hv_errf_errno(err, "fxt writer: create %s", path);
        goto fail;
    }
    setvbuf(w->f, NULL, _IOFBF, 1 << 20); /* the drain thread writes in large chunks */
    uint64_t *s = w->scratch;
    const size_t cap = sizeof(w->scratch) / 8;
    if (put(w, s, fxt_enc_magic(s, cap), err))
        goto fail;
    w->records_written++;
    if (put(w, s, fxt_enc_provider_info(s, cap, FXT_CONTROL_PROVIDER, "hvprof", 6), err))
        goto fail;
    w->records_written++;
    for (uint32_t i = 0; i < nvcpus; i++) {
        char name[16];
        int len = snprintf(name, sizeof(name), "vcpu%u", i);
        if (put(w, s, fxt_enc_provider_info(s, cap, fxt_vcpu_provider(i), name, (size_t)len), err))
            goto fail;
        w->records_written++;
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
    return 0;
fail:
    if (w->f)
        fclose(w->f);
    w->f = NULL;
    free(w->inited);
    w->inited = NULL;
    return -1;
}

int fxt_writer_close(struct fxt_writer *w, struct hv_err *err)
{
    int rc = 0;
    if (w->f && fclose(w->f) != 0)
        rc = hv_errf_errno(err, "fxt writer: close");
    w->f = NULL;
    free(w->inited);
    w->inited = NULL;
    return rc;
}

long fxt_writer_drain_ring(struct fxt_writer *w, uint32_t vcpu, struct fxt_ring *r, bool final,
                           struct hv_err *err)
{
    if (vcpu >= w->nvcpus)
        return hv_errf(err, "fxt writer: vCPU %u out of range", vcpu);
    uint32_t provider = fxt_vcpu_provider(vcpu);
    long moved = 0;
    uint32_t n;
    const uint64_t *rec;
    while ((rec = fxt_ring_peek(r, &n)) != NULL) {
        if (fxt_writer_select(w, provider, err) || put(w, rec, n, err))
            return -1;
        fxt_ring_release(r, n);
        w->records_written++;
        moved++;
    }
    struct fxt_loss l;
    if (final && fxt_ring_take_pending_loss(r, &l)) {
        size_t k = fxt_enc_loss(w->scratch, FXT_LOSS_WORDS, &l);
        if (fxt_writer_emit(w, provider, w->scratch, k, err))
            return -1;
        moved++;
    }
    return moved;
}

int fxt_writer_guest_process(struct fxt_writer *w, uint64_t koid, const char *name,
                             struct hv_err *err)
{
    return emit_control(w, fxt_enc_kobj_process(w->scratch, FXT_MAX_RECORD_WORDS, koid, name), err);
}

int fxt_writer_guest_thread(struct fxt_writer *w, uint64_t koid, const char *name,
                            uint64_t process_koid, struct hv_err *err)
{
    return emit_control(
        w, fxt_enc_kobj_thread(w->scratch, FXT_MAX_RECORD_WORDS, koid, name, process_koid), err);
}

int fxt_writer_marker(struct fxt_writer *w, const char *name, uint64_t ts,
                      const struct fxt_arg *args, unsigned nargs, struct hv_err *err)
{
    return emit_control(w, fxt_enc_marker(w->scratch, FXT_MAX_RECORD_WORDS, name, ts, args, nargs),
                        err);
}

int fxt_writer_module(struct fxt_writer *w, const struct fxt_module *m, struct hv_err *err)
{
    return emit_control(w, fxt_enc_module(w->scratch, FXT_MAX_RECORD_WORDS, m), err);
}

int fxt_writer_mapping(struct fxt_writer *w, const struct fxt_mapping *m, struct hv_err *err)
{
    return emit_control(w, fxt_enc_mapping(w->scratch, FXT_MAX_RECORD_WORDS, m), err);
}
