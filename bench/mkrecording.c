/* Benchmark tool (not a test): write a synthetic recording of N samples in `hvprof record`'s
 * format (docs/fxt-samples.md), for timing `hvprof report` on recordings far larger than a
 * benchmark run can record on this host (a million samples is ~8 minutes of 1 kHz on 2 vCPUs).
 *
 *   bench_mkrecording -o FILE -n SAMPLES --workload PROG.elf --kernel KERNEL.elf [--vcpus N]
 *                     [--procs P]
 *
 * --procs P: P guest processes (each its own address space, name, thread and mapping of the
 * workload), the samples going round them; for timing reports of recordings with 10^5-10^6
 * processes and mappings (docs/reliability.md, "Report cost"). Default: one per vCPU.
 *
 * Same writer, record encoder and module records as the sampler (fxt_writer, fxt_enc_sample,
 * discover_record). Each vCPU runs its own `workload` process; the
 * stacks are the test guest's real ones, addresses taken from the ELF symbols:
 *   90 % user samples, split 60/30/10 over _start;main;alpha;hot_leaf, ...;beta;warm_leaf,
 *        ...;gamma, the pc anywhere in the leaf function (many distinct addresses, as sampled);
 *   10 % kernel samples (trap_dispatch ... kbusy_spin), partial records whose continuation is
 *        completed with a user stack one to three samples later.
 * Writes "mkrecording samples=N records=R bytes=B" on success. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "schema/recording.h"
#include "sampler/parts/module_registry.h"
#include "symbolize/elf_symbols.h"

#define MAX_VCPUS 8
#define CHUNK     256 /* records per vCPU before the writer switches provider (like the drain) */

struct func {
    uint64_t addr, size;
};

struct gen {
    struct fxt_writer w;
    uint32_t nprocs, nvcpus, next_proc;
    struct func hot, warm, gamma, alpha, beta, main_, start;
    uint64_t kstack[8];
    unsigned nk;
    uint64_t rng;
    uint64_t enc[FXT_MAX_RECORD_WORDS];
    uint64_t records;
};

static uint64_t rnd(struct gen *g)
{
    g->rng ^= g->rng << 13;
    g->rng ^= g->rng >> 7;
    g->rng ^= g->rng << 17;
    return g->rng;
}

static int find(const struct elf_symbols *es, const char *name, struct func *f)
{
    const struct sym *s = symtab_find_name(&es->syms, name);
    if (!s) {
        fprintf(stderr, "bench_mkrecording: no symbol '%s'\n", name);
        return -1;
    }
    f->addr = s->addr;
    f->size = s->size ? s->size : 16;
    return 0;
}

static int load_symbols(struct gen *g, const char *prog, const char *kernel)
{
    struct elf_symbols es;
    struct hv_err err = {0};
    if (elf_symbols_load_file(&es, prog, &err) < 0) {
        fprintf(stderr, "bench_mkrecording: %s\n", err.msg);
        return -1;
    }
    int rc = find(&es, "hot_leaf", &g->hot) | find(&es, "warm_leaf", &g->warm) |
             find(&es, "gamma", &g->gamma) | find(&es, "alpha", &g->alpha) |
             find(&es, "beta", &g->beta) | find(&es, "main", &g->main_) |
             find(&es, "_start", &g->start);
    elf_symbols_free(&es);
    if (rc)
        return -1;
    if (elf_symbols_load_file(&es, kernel, &err) < 0) {
        fprintf(stderr, "bench_mkrecording: %s\n", err.msg);
        return -1;
    }
    /* leaf first, as the walker writes it: pc, then return addresses outward */
    static const char *const kchain[] = {"kbusy_spin", "kbusy_level2",     "kbusy_level1",
                                         "ksys_kbusy", "syscall_dispatch", "trap_dispatch"};
    g->nk = 0;
    for (unsigned i = 0; i < sizeof(kchain) / sizeof(kchain[0]); i++) {
        struct func f;
        if (find(&es, kchain[i], &f) < 0) {
            elf_symbols_free(&es);
            return -1;
        }
        g->kstack[g->nk++] = f.addr + (i == 0 ? 4 : f.size / 2);
    }
    elf_symbols_free(&es);
    return 0;
}

/* The user stack of a sample at CPL 3: pc (in the leaf), then return addresses outward. */
static unsigned user_stack(struct gen *g, uint64_t *st)
{
    uint64_t r = rnd(g) % 10;
    const struct func *leaf = r < 6 ? &g->hot : r < 9 ? &g->warm : &g->gamma;
    unsigned n = 0;
    st[n++] = leaf->addr + 4 + (rnd(g) % (leaf->size - 8));
    if (leaf != &g->gamma)
        st[n++] = (leaf == &g->hot ? g->alpha.addr : g->beta.addr) + 9;
    st[n++] = g->main_.addr + 0x40 + (r % 3) * 0x20; /* three call sites in main */
    st[n++] = g->start.addr + 5;
    return n;
}

static int emit(struct gen *g, uint32_t vcpu, const struct hvfxt_sample *s, struct hv_err *err)
{
    size_t n = hvfxt_enc_sample(g->enc, FXT_MAX_RECORD_WORDS, s);
    if (n == 0)
        return hv_errf(err, "sample did not encode");
    g->records++;
    return fxt_writer_emit(&g->w, hvfxt_vcpu_provider(vcpu), g->enc, n, err);
}

struct vstate {
    uint32_t proc; /* the process it samples now (1-based) */
    uint64_t cont_id, ts;
    unsigned pending; /* partial records waiting for their completion */
    unsigned kernel_left;
};

/* One sample of vCPU v (of its process vs->proc, whose one thread has the same id). */
static int one_sample(struct gen *g, uint32_t v, struct vstate *vs, struct hv_err *err)
{
    uint64_t pid = hvfxt_koid_guest_process(vs->proc), tid = hvfxt_koid_guest_thread(vs->proc);
    uint64_t ustack[8];
    vs->ts += 1000000; /* 1 kHz */
    if (vs->kernel_left == 0 && vs->pending == 0 && rnd(g) % 20 == 0)
        vs->kernel_left = 1 + (unsigned)(rnd(g) % 3); /* ~10 % of samples in the kernel */
    if (vs->kernel_left) {
        if (vs->pending == 0)
            vs->cont_id = ((uint64_t)v << 56) | (vs->cont_id + 1);
        struct hvfxt_sample s = {
            .fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU |
                      HVFXT_SF_CPL | HVFXT_SF_PC | HVFXT_SF_WALK | HVFXT_SF_KERNEL_STACK |
                      HVFXT_SF_CONTINUATION,
            .continuation = vs->cont_id,
            .pid = pid,
            .tid = tid,
            .ts = vs->ts,
            .vcpu = v,
            .cpl = 0,
            .pc = g->kstack[0] + rnd(g) % 8,
            .kernel_stack = g->kstack,
            .n_kernel = g->nk,
            .walk = hvfxt_walk_word(HVFXT_STOP_END, HVFXT_STOP_DEFERRED, 0, 0),
        };
        vs->kernel_left--;
        vs->pending++;
        return emit(g, v, &s, err);
    }
    unsigned n = user_stack(g, ustack);
    if (vs->pending) {
        /* back in user mode: the completion carries the user stack for every partial record */
        struct hvfxt_sample c = {
            .fields = HVFXT_SF_CONTINUATION_COMPLETION | HVFXT_SF_PID | HVFXT_SF_TID |
                      HVFXT_SF_BOOT_TS | HVFXT_SF_USER_STACK | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                      HVFXT_SF_WALK,
            .completion = vs->cont_id,
            .pid = pid,
            .tid = tid,
            .ts = vs->ts,
            .user_stack = ustack,
            .n_user = n,
            .vcpu = v,
            .cpl = 3,
            .walk = hvfxt_walk_word(HVFXT_STOP_NONE, HVFXT_STOP_END, 0, 0),
        };
        if (emit(g, v, &c, err) < 0)
            return -1;
        vs->pending = 0;
    }
    struct hvfxt_sample s = {
        .fields = HVFXT_SF_PID | HVFXT_SF_TID | HVFXT_SF_BOOT_TS | HVFXT_SF_VCPU | HVFXT_SF_CPL |
                  HVFXT_SF_PC | HVFXT_SF_WALK | HVFXT_SF_USER_STACK,
        .pid = pid,
        .tid = tid,
        .ts = vs->ts,
        .vcpu = v,
        .cpl = 3,
        .pc = ustack[0],
        .user_stack = ustack,
        .n_user = n,
        .walk = hvfxt_walk_word(HVFXT_STOP_NONE, HVFXT_STOP_END, 0, 0),
    };
    /* With more processes than vCPUs, the next user sample is the next process's. */
    if (g->nprocs > g->nvcpus) {
        g->next_proc = g->next_proc % g->nprocs + 1;
        vs->proc = g->next_proc;
    }
    return emit(g, v, &s, err);
}

static int write_recording(struct gen *g, const char *out, uint64_t nsamples, unsigned nvcpus,
                           const char *prog, const char *kernel, struct hv_err *err)
{
    if (hvfxt_recording_open(&g->w, out, 1000000000ull, nvcpus, "bench_mkrecording", err) < 0)
        return -1;
    struct fxt_arg args[] = {
        {.type = FXT_ARG_U64, .name = fxt_str_inline("hz"), .v.u64 = 1000},
        {.type = FXT_ARG_STRING, .name = fxt_str_inline("mode"), .v.str = fxt_str_inline("cpu")},
        {.type = FXT_ARG_U32, .name = fxt_str_inline("vcpus"), .v.u32 = nvcpus},
    };
    struct discover_registry reg;
    discover_registry_init(&reg);
    int rc = -1;
    /* The kernel as hvprof record writes an ELF kernel the VMM loaded: address space 0, at its
     * link addresses (one span here: the bench only needs its symbols found). */
    struct elf_symbols kes;
    if (elf_symbols_load_file(&kes, kernel, err) < 0)
        goto out;
    struct discover_module k = {.header_va = kes.load_lo & ~0xfffull, .e_type = 2};
    k.start = k.header_va;
    k.end = (kes.load_hi + 0xfff) & ~0xfffull;
    k.seg[0] = (struct discover_seg){.start = k.start, .size = k.end - k.start, .flags = 5};
    k.nseg = 1;
    memcpy(k.build_id, kes.build_id, kes.build_id_len);
    k.build_id_len = kes.build_id_len;
    snprintf(k.name, sizeof(k.name), "%s", kernel);
    elf_symbols_free(&kes);
    if (hvfxt_write_marker(&g->w, HVFXT_SESSION_START, 1, args, 3, err) < 0 ||
        discover_record(&g->w, &reg, hvfxt_koid_guest_process(0), &k, 1, 1, err) < 0)
        goto out;
    struct discover_module m = {
        .header_va = 0x400000, .bias = 0, .start = 0x400000, .end = 0x410000, .e_type = 2};
    int idlen = elf_read_build_id_file(prog, m.build_id, err);
    if (idlen < 0)
        goto out;
    m.build_id_len = (uint32_t)idlen;
    snprintf(m.name, sizeof(m.name), "[elf@0x400000]");
    m.seg[0] = (struct discover_seg){.start = 0x400000, .size = 0x10000, .flags = 5};
    m.nseg = 1;
    struct vstate vs[MAX_VCPUS] = {{0}};
    g->nvcpus = nvcpus;
    if (g->nprocs < nvcpus)
        g->nprocs = nvcpus;
    for (uint32_t id = 1; id <= g->nprocs; id++) {
        uint64_t pid = hvfxt_koid_guest_process(id);
        char name[32];
        snprintf(name, sizeof(name), g->nprocs > nvcpus ? "workload-%u" : "workload", id);
        if (hvfxt_write_guest_process(&g->w, id, name, (int64_t)id + 100, err) < 0 ||
            hvfxt_write_guest_thread(&g->w, id, id, name, (int64_t)id + 100, NULL, err) < 0 ||
            discover_record(&g->w, &reg, pid, &m, 1, 1, err) < 0)
            goto out;
    }
    for (uint32_t v = 0; v < nvcpus; v++) {
        vs[v].proc = v + 1;
        vs[v].ts = 1000000000ull;
    }
    g->next_proc = nvcpus;
    uint64_t done = 0;
    while (done < nsamples) {
        for (uint32_t v = 0; v < nvcpus && done < nsamples; v++) {
            for (unsigned i = 0; i < CHUNK && done < nsamples; i++, done++) {
                if (one_sample(g, v, &vs[v], err) < 0)
                    goto out;
            }
        }
    }
    rc = hvfxt_write_marker(&g->w, "session_stop", vs[0].ts + 1, NULL, 0, err);
out:
    discover_registry_free(&reg);
    struct hv_err cerr = {0};
    if (fxt_writer_close(&g->w, &cerr) < 0 && rc == 0) {
        *err = cerr;
        rc = -1;
    }
    return rc;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *prog = NULL, *kernel = NULL;
    uint64_t n = 1000000;
    unsigned nvcpus = 2;
    uint32_t procs = 0;
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"samples", required_argument, NULL, 'n'},
        {"workload", required_argument, NULL, 'w'},
        {"kernel", required_argument, NULL, 'k'},
        {"vcpus", required_argument, NULL, 'v'},
        {"procs", required_argument, NULL, 'p'},
        {0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "o:n:", opts, NULL)) != -1) {
        switch (opt) {
        case 'o':
            out = optarg;
            break;
        case 'n':
            n = strtoull(optarg, NULL, 10);
            break;
        case 'w':
            prog = optarg;
            break;
        case 'k':
            kernel = optarg;
            break;
        case 'v':
            nvcpus = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'p':
            procs = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        default:
            return 2;
        }
    }
    if (!out || !prog || !kernel || n == 0 || nvcpus == 0 || nvcpus > MAX_VCPUS) {
        fprintf(stderr,
                "usage: bench_mkrecording -o FILE -n SAMPLES --workload ELF --kernel ELF "
                "[--vcpus 1..%d]\n",
                MAX_VCPUS);
        return 2;
    }
    static struct gen g = {.rng = 88172645463325252ull};
    g.nprocs = procs;
    struct hv_err err = {0};
    if (load_symbols(&g, prog, kernel) < 0)
        return 1;
    if (write_recording(&g, out, n, nvcpus, prog, kernel, &err) < 0) {
        fprintf(stderr, "bench_mkrecording: %s\n", err.msg);
        return 1;
    }
    struct stat stt;
    if (stat(out, &stt) != 0)
        return 1;
    printf("mkrecording samples=%" PRIu64 " records=%" PRIu64 " bytes=%lld\n", n, g.records,
           (long long)stt.st_size);
    return 0;
}
