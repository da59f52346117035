/* Benchmark (not a test): symbol lookup, ELF loading, symbolization and report-writer
 * throughput. Numbers go to BENCHMARKS.md (section "symbolize"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "symbolize/elf_symbols.h"
#include "report/report.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define NSYMS    200000
#define NSAMPLES 100000
#define DEPTH    16

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv)
{
    const char *elf = argc > 1 ? argv[1] : "/usr/lib/x86_64-linux-gnu/libc.so.6";
    /* 1. Lookup in a 200k-symbol table (kallsyms-sized). */
    struct symtab t;
    symtab_init(&t);
    char name[32];
    for (int i = 0; i < NSYMS; i++) {
        int n = snprintf(name, sizeof(name), "func_%d", i);
        symtab_add(&t, 0xffffffff81000000ull + (uint64_t)i * 0x100, 0xc0, name, (size_t)n, 2, NULL);
    }
    double t0 = now();
    symtab_finish(&t);
    double t_sort = now() - t0;
    const int lookups = 5000000;
    uint64_t hits = 0;
    t0 = now();
    for (int i = 0; i < lookups; i++)
        hits += symtab_lookup(&t, 0xffffffff81000000ull + next_rand() % (NSYMS * 0x100ull)) != NULL;
    double t_lookup = now() - t0;
    printf("symtab: %d symbols sorted in %.1f ms; lookup %.1f ns (%.0f%% hits)\n", NSYMS,
           t_sort * 1e3, t_lookup / lookups * 1e9, 100.0 * (double)hits / lookups);

    /* 2. Loading a real ELF file. */
    struct elf_symbols es;
    t0 = now();
    if (elf_symbols_load_file(&es, elf, NULL) == 0) {
        printf("elf load: %s, %zu functions in %.2f ms\n", elf, es.syms.n, (now() - t0) * 1e3);
        elf_symbols_free(&es);
    }

    /* 3. Symbolization: 100k samples x 16 frames over the synthetic kernel table. */
    struct profile p;
    profile_init(&p);
    p.period_ns = 1000000;
    int mod = profile_add_module(&p, "[kernel]", NULL, 0, true, NULL);
    profile_add_mapping(&p, PROF_PID_ANY, 0, UINT64_MAX, 0, 0, (uint32_t)mod, NULL);
    p.modules.v[mod].src.table = malloc(sizeof(struct symtab));
    *p.modules.v[mod].src.table = t;
    uint64_t addrs[DEPTH];
    for (int s = 0; s < NSAMPLES; s++) {
        /* Zipf-ish: a few hot stacks, a long tail. */
        uint64_t stack = next_rand() % (s % 10 ? 50 : 5000);
        for (int d = 0; d < DEPTH; d++)
            addrs[d] =
                0xffffffff81000000ull + ((stack * 7919 + (uint64_t)d * 104729) % NSYMS) * 0x100 + 8;
        profile_add_sample(&p,
                           &(struct prof_sample_in){.ts = (uint64_t)s * 1000000,
                                                    .vcpu = (uint32_t)(s & 3),
                                                    .pid = 0x10000000,
                                                    .tid = 0,
                                                    .cpl = 0,
                                                    .addrs = addrs,
                                                    .n = DEPTH,
                                                    .weight = 1},
                           NULL);
    }
    t0 = now();
    profile_symbolize(&p, NULL, NULL, NULL);
    double t_sym = now() - t0;
    printf("symbolize: %d samples x %d frames in %.1f ms (%.2f us/sample, %zu locations)\n",
           NSAMPLES, DEPTH, t_sym * 1e3, t_sym / NSAMPLES * 1e6, p.locs.n);

    /* 4. Writers. */
    for (int f = 0; f < REPORT_NFORMATS; f++) {
        FILE *out = fopen("/dev/null", "w");
        t0 = now();
        struct hv_err err;
        int rc = report_write((enum report_format)f, &p, NULL, out, &err);
        double dt = now() - t0;
        fclose(out);
        printf("write %-12s %8.1f ms%s\n", report_format_name((enum report_format)f), dt * 1e3,
               rc ? " (failed)" : "");
    }
    profile_free(&p);
    return 0;
}
