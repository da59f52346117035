/* fxt benchmark (not a test): sample records encoded per second on one core, ring push
 * (reserve + encode + commit) and pop in ns, and a two-thread ring throughput.
 * Targets from the fxt issue: >= 10M sample records/s, push <= 50 ns. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

int main(void)
{
    for (int i = 0; i < 16; i++)
        ustack[i] = 0x401000 + 16 * (uint64_t)i;
    bench_encode();
    bench_ring_single();
    bench_ring_two_threads();
    return 0;
}
