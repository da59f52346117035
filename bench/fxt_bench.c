/* fxt benchmark (not a test): sample records encoded per second on one core, ring push
 * (reserve + encode + commit) and pop in ns, and a two-thread ring throughput.
 * Targets from the fxt issue: >= 10M sample records/s, push <= 50 ns. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fxt/flight.h"
#include "schema/recording.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const uint64_t kstack[8] = {0xffffffff81000010, 0xffffffff81000020, 0xffffffff81000030,
                                   0xffffffff81000040, 0xffffffff81000050, 0xffffffff81000060,
                                   0xffffffff81000070, 0xffffffff81000080};
static uint64_t ustack[16];

/* The partial record written at a CPL-0 exit: ts, pid, tid, vcpu, cpl, pc, 8 kernel frames,
 * walk, continuation (19 words). */
static void partial(struct hvfxt_sample *s, uint64_t i)
{
    *s = (struct hvfxt_sample){.fields = HVFXT_SF_CONTINUATION | HVFXT_SF_PID | HVFXT_SF_TID |
                                         HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                                         HVFXT_SF_PC | HVFXT_SF_KERNEL_STACK | HVFXT_SF_WALK,
                               .continuation = i,
                               .pid = 0x10000001,
                               .tid = 0x40000002,
                               .ts = i,
                               .vcpu = 1,
                               .cpl = 0,
                               .pc = 0xffffffff81000000 + i,
                               .kernel_stack = kstack,
                               .n_kernel = 8,
                               .walk = hvfxt_walk_word(HVFXT_STOP_END, HVFXT_STOP_DEFERRED, 0, 0)};
}

static void bench_encode(void)
{
    static uint64_t buf[64];
    const uint64_t n = 20000000;
    uint64_t sum = 0;
    struct hvfxt_sample s;
    double t0 = now();
    for (uint64_t i = 0; i < n; i++) {
        partial(&s, i);
        sum += hvfxt_enc_sample(buf, 64, &s);
        sum += buf[5];
    }
    double dt = now() - t0;
    printf("encode partial sample (19 words):     %6.1f M records/s  (%.1f ns each, chk %" PRIu64
           ")\n",
           n / dt / 1e6, dt / n * 1e9, sum % 10);
    struct hvfxt_sample c = {.fields = HVFXT_SF_CONTINUATION_COMPLETION | HVFXT_SF_USER_STACK |
                                       HVFXT_SF_VCPU,
                             .user_stack = ustack,
                             .n_user = 16,
                             .vcpu = 1};
    t0 = now();
    for (uint64_t i = 0; i < n; i++) {
        c.completion = i;
        sum += hvfxt_enc_sample(buf, 64, &c);
        sum += buf[2];
    }
    dt = now() - t0;
    printf("encode completion, 16 user frames:    %6.1f M records/s  (%.1f ns each, chk %" PRIu64
           ")\n",
           n / dt / 1e6, dt / n * 1e9, sum % 10);
}

static void bench_ring_single(void)
{
    struct fxt_ring r;
    struct hv_err err;
    if (hvfxt_vcpu_ring_init(&r, 1 << 16, 0, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    const int rounds = 20000, batch = 1000;
    double tpush = 0, tpop = 0;
    uint64_t sum = 0, i = 0;
    struct hvfxt_sample s;
    for (int k = 0; k < rounds; k++) {
        double t0 = now();
        for (int j = 0; j < batch; j++, i++) {
            partial(&s, i);
            uint32_t nw = (uint32_t)hvfxt_sample_words(&s);
            uint64_t *p = fxt_ring_reserve(&r, nw, i);
            if (p)
                fxt_ring_commit(&r, (uint32_t)hvfxt_enc_sample(p, nw, &s));
        }
        double t1 = now();
        uint32_t n;
        const uint64_t *rec;
        while ((rec = fxt_ring_peek(&r, &n)) != NULL) {
            sum += rec[1];
            fxt_ring_release(&r, n);
        }
        tpop += now() - t1;
        tpush += t1 - t0;
    }
    double total = (double)rounds * batch;
    printf("ring push (reserve+encode+commit):   %6.1f ns   pop (peek+release): %5.1f ns  "
           "(dropped %" PRIu64 ", chk %" PRIu64 ")\n",
           tpush / total * 1e9, tpop / total * 1e9, fxt_ring_dropped_total(&r), sum % 10);
    fxt_ring_destroy(&r);
}

struct xrun {
    struct fxt_ring r;
    uint64_t n;
    _Atomic int done;
};

static void *xproducer(void *arg)
{
    struct xrun *x = arg;
    struct hvfxt_sample s;
    for (uint64_t i = 0; i < x->n; i++) {
        partial(&s, i);
        uint32_t nw = (uint32_t)hvfxt_sample_words(&s);
        uint64_t *p = fxt_ring_reserve(&x->r, nw, i);
        if (p)
            fxt_ring_commit(&x->r, (uint32_t)hvfxt_enc_sample(p, nw, &s));
    }
    atomic_store(&x->done, 1);
    return NULL;
}

static void bench_ring_two_threads(void)
{
    static struct xrun x;
    struct hv_err err;
    if (hvfxt_vcpu_ring_init(&x.r, 1 << 18, 0, &err))
        exit(1);
    x.n = 20000000;
    pthread_t t;
    double t0 = now();
    pthread_create(&t, NULL, xproducer, &x);
    uint64_t got = 0;
    for (;;) {
        int done = atomic_load(&x.done);
        uint32_t n;
        const uint64_t *rec = fxt_ring_peek(&x.r, &n);
        if (!rec) {
            if (done)
                break;
            continue;
        }
        got += rec[0] >> 63; /* touch */
        got++;
        fxt_ring_release(&x.r, n);
    }
    pthread_join(t, NULL);
    double dt = now() - t0;
    printf("ring two threads (producer+consumer): %6.1f M records/s  (%" PRIu64 " of %" PRIu64
           " delivered, %" PRIu64 " dropped)\n",
           x.n / dt / 1e6, got, x.n, fxt_ring_dropped_total(&x.r));
    fxt_ring_destroy(&x.r);
}

/* The flight recorder's buffer (record --ring, fxt/flight.h) for the case: 64 vCPUs at
 * 1 kHz for an hour, 230.4 M records of this guest's sizes through a 32 MiB buffer. Reports the
 * drain-side cost per record, the buffer's bytes (bounded by construction: checked), the
 * process's peak RSS, and a snapshot: an 8 MiB definitions file copied (a Debian kernel's
 * symbols are ~5 MiB) and the whole buffer written after it. */
static uint64_t evicted_records;
static void on_evict(void *ctx, const struct fxt_flight_record *r)
{
    (void)ctx;
    (void)r;
    evicted_records++;
}

static void bench_flight(void)
{
    const uint64_t ring = 32ull << 20, vcpus = 64, ticks = 3600ull * 1000;
    struct fxt_flight f;
    struct hv_err err = {0};
    if (fxt_flight_init(&f, ring, 0, on_evict, NULL, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    static uint64_t rec[3][64];
    struct hvfxt_sample s;
    partial(&s, 1);
    size_t sizes[3];
    sizes[0] = hvfxt_enc_sample(rec[0], 64, &s); /* a kernel-mode partial sample, 19 words */
    s.n_kernel = 2;
    s.fields &= ~(uint32_t)HVFXT_SF_CONTINUATION;
    s.fields |= HVFXT_SF_USER_STACK;
    s.user_stack = ustack;
    s.n_user = 12;
    sizes[1] = hvfxt_enc_sample(rec[1], 64, &s); /* a user-mode sample, 12 frames */
    struct hvfxt_sample c = {.fields = HVFXT_SF_CONTINUATION_COMPLETION | HVFXT_SF_USER_STACK,
                             .completion = 1,
                             .user_stack = ustack,
                             .n_user = 16};
    sizes[2] = hvfxt_enc_sample(rec[2], 64, &c); /* a completion, 16 frames */
    double t0 = now();
    uint64_t words = 0, max_bytes = 0;
    for (uint64_t t = 0; t < ticks; t++) {
        for (uint64_t v = 0; v < vcpus; v++) {
            unsigned k = (unsigned)((t + v) % 3);
            fxt_flight_push(&f, (uint32_t)v + 1, t * 1000000, rec[k], (uint32_t)sizes[k], &err);
            words += sizes[k];
        }
        if ((t & 1023) == 0 && fxt_flight_bytes(&f) > max_bytes)
            max_bytes = fxt_flight_bytes(&f);
    }
    double dt = now() - t0;
    uint64_t n = ticks * vcpus;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("flight recorder, 64 vCPUs x 1 kHz x 1 h: %" PRIu64 " M records (%.1f GB) through "
           "32 MiB in %.1f s: %.1f ns/record, %.2f%% of one core at 64 kHz; %" PRIu64
           " M overwritten, %" PRIu64 " kept; buffer at most %.1f MiB; peak RSS %.1f MiB\n",
           n / 1000000, (double)words * 8 / 1e9, dt, dt / (double)n * 1e9,
           100.0 * (dt / (double)n) * 64000.0, evicted_records / 1000000, f.records,
           (double)max_bytes / 1048576.0, (double)ru.ru_maxrss / 1024.0);

    /* The snapshot: definitions copied, then the buffer, as sampler/flight.c writes it. */
    char meta[] = "/tmp/hvprof-bench-flight-XXXXXX";
    int fd = mkstemp(meta);
    if (fd < 0)
        return;
    close(fd);
    static struct fxt_writer w, snap;
    if (fxt_writer_open(&w, meta, 1000000000ull, vcpus + 1, &err) < 0)
        goto out;
    for (uint32_t i = 0; i <= vcpus; i++)
        fxt_writer_provider(&w, i, "p", &err);
    static uint64_t blob[4000];
    for (size_t i = 0; i < (8u << 20) / (8 * 1002); i++) /* 1,002-word records */
        fxt_writer_emit(&w, 0, blob,
                        fxt_enc_blob(blob, 4000, fxt_str_inline(NULL), 0x01, blob + 2000, 8 * 1000),
                        &err);
    fxt_writer_flush(&w, &err);
    double best = 1e9, worst = 0;
    for (int round = 0; round < 5; round++) {
        char path[64];
        snprintf(path, sizeof(path), "%s.snap", meta);
        double s0 = now();
        if (fxt_writer_open_copy(&snap, path, &w, &err) < 0)
            break;
        uint64_t pos = 0;
        struct fxt_flight_record r;
        while (fxt_flight_next(&f, &pos, &r))
            fxt_writer_emit(&snap, r.provider, r.words, r.nwords, &err);
        uint64_t bytes = snap.file_bytes + snap.olen;
        fxt_writer_close(&snap, &err);
        double ms = (now() - s0) * 1e3;
        best = ms < best ? ms : best;
        worst = ms > worst ? ms : worst;
        if (round == 4)
            printf("flight recorder snapshot: %.1f MB (8 MiB of definitions + the 32 MiB "
                   "buffer) written in %.1f ms best, %.1f ms worst of 5\n",
                   (double)bytes / 1e6, best, worst);
        unlink(path);
    }
    fxt_writer_close(&w, &err);
out:
    unlink(meta);
    fxt_flight_destroy(&f);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "flight")) {
        for (int i = 0; i < 16; i++)
            ustack[i] = 0x401000 + 16 * (uint64_t)i;
        bench_flight();
        return 0;
    }
    for (int i = 0; i < 16; i++)
        ustack[i] = 0x401000 + 16 * (uint64_t)i;
    bench_flight(); /* first: its peak RSS is then its own */
    bench_encode();
    bench_ring_single();
    bench_ring_two_threads();
    return 0;
}
