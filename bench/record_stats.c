/* Benchmark tool (not a test): `hvprof record` run in-process, printing the sampler's own
 * per-vCPU stage timers, which `hvprof record`'s summary folds into one "us/sample" column.
 *
 *   bench_record_stats -o FILE [--hz N] [--mode cpu|wall|exits] [--max-depth N]
 *                      [--guest demo | --kernel ...] [--vcpus N] [--cmdline S] ...
 *
 * Same engine, same options and same order of calls as cli/cmd_record.c; afterwards one line per
 * vCPU:
 *   record_stats vcpu=I samples=N user=.. kernel=.. idle=.. missed=.. dropped=.. exits=..
 *                rechecks=.. regs_ns=.. walk_ns=.. push_ns=.. total_ns=.. max_ns=..
 * where the *_ns figures are means per timed exit (sampler/exit.c: t_regs = reading registers,
 * t_walk = identity lookup + user walk + completion records, t_push = the sample's record into
 * the ring + re-check timer bookkeeping). Reads sampler_priv.h: the counters are internal. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/parse.h"
#include "cli/run_opts.h"
#include "sampler/sampler.h"
#include "sampler/sampler_priv.h"

enum { OPT_HZ = 0x2000, OPT_MODE, OPT_MAX_DEPTH };

static const struct option own_opts[] = {
    {"hz", required_argument, NULL, OPT_HZ},
    {"mode", required_argument, NULL, OPT_MODE},
    {"max-depth", required_argument, NULL, OPT_MAX_DEPTH},
    {"output", required_argument, NULL, 'o'},
};
#define OWN_COUNT (sizeof(own_opts) / sizeof(own_opts[0]))

static int own_opt(struct sampler_config *c, int opt, const char *arg, struct hv_err *err)
{
    uint64_t v;
    switch (opt) {
    case 'o':
        c->out_path = arg;
        return 1;
    case OPT_HZ:
        if (parse_freq_hz(arg, "--hz", 1, 100000, &v, err) < 0)
            return -1;
        c->hz = v;
        return 1;
    case OPT_MODE:
        if (!strcmp(arg, "cpu"))
            c->mode = SAMPLER_MODE_CPU;
        else if (!strcmp(arg, "wall"))
            c->mode = SAMPLER_MODE_WALL;
        else if (!strcmp(arg, "exits"))
            c->mode = SAMPLER_MODE_EXITS;
        else
            return hv_errf(err, "--mode: '%s' is not one of cpu, wall, exits", arg);
        return 1;
    case OPT_MAX_DEPTH:
        if (parse_uint(arg, "--max-depth", 1, 1000, &v, err) < 0)
            return -1;
        c->max_depth = (unsigned)v;
        return 1;
    }
    return 0;
}

static double per(uint64_t total, uint64_t n)
{
    return n ? (double)total / (double)n : 0.0;
}

static void print_stats(const struct sampler *s)
{
    for (unsigned i = 0; i < s->cfg.nvcpus; i++) {
        const struct vcpu_stats *st = &s->v[i].st;
        printf("record_stats vcpu=%u samples=%" PRIu64 " user=%" PRIu64 " kernel=%" PRIu64
               " idle=%" PRIu64 " missed=%" PRIu64 " dropped=%" PRIu64 " exits=%" PRIu64
               " rechecks=%" PRIu64 " walk_fail=%" PRIu64
               " regs_ns=%.1f walk_ns=%.1f push_ns=%.1f total_ns=%.1f max_ns=%" PRIu64 "\n",
               i, st->t_samples, st->user, st->kernel, st->idle, st->missed,
               fxt_ring_dropped_total(&s->v[i].ring), st->exits, st->rechecks, st->walk_fail,
               per(st->t_regs, st->t_samples), per(st->t_walk, st->t_samples),
               per(st->t_push, st->t_samples), per(st->t_total, st->t_samples), st->t_max);
    }
}

int main(int argc, char **argv)
{
    struct option longopts[RUN_OPTS_COUNT + OWN_COUNT + 1];
    memcpy(longopts, run_opts_longopts, sizeof(run_opts_longopts));
    memcpy(longopts + RUN_OPTS_COUNT, own_opts, sizeof(own_opts));
    longopts[RUN_OPTS_COUNT + OWN_COUNT] = (struct option){0};

    struct run_opts o;
    run_opts_init(&o);
    struct sampler_config c = {
        .hz = SAMPLER_DEFAULT_HZ,
        .mode = SAMPLER_MODE_CPU,
        .max_depth = 128,
        .buffer_bytes = SAMPLER_DEFAULT_BUFFER,
        .recheck_ns = SAMPLER_DEFAULT_RECHECK_NS,
        .abandon_periods = SAMPLER_DEFAULT_ABANDON,
        .quiet = true,
    };
    struct hv_err err = {{0}, 0};
    int opt;
    while ((opt = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
        if (opt == '?' || opt == ':')
            return 2;
        int r = own_opt(&c, opt, optarg, &err);
        if (r == 0)
            r = run_opts_handle(&o, opt, optarg, &err);
        if (r <= 0) {
            fprintf(stderr, "bench_record_stats: %s\n", r < 0 ? err.msg : "bad option");
            return 2;
        }
    }
    if (!c.out_path || optind < argc) {
        fprintf(stderr, "usage: bench_record_stats -o FILE [record options] [guest options]\n");
        return 2;
    }
    if (run_opts_finish(&o, &err) < 0) {
        fprintf(stderr, "bench_record_stats: %s\n", err.msg);
        return 2;
    }
    c.nvcpus = o.vcpus;
    c.guest_desc = o.kernel;
    c.vm_name = "bench_record_stats";

    struct sampler *s = sampler_create(&c, &err);
    if (!s) {
        fprintf(stderr, "bench_record_stats: %s\n", err.msg);
        return 1;
    }
    struct vm_hooks hooks;
    sampler_hooks(s, &hooks);
    struct run_session rs;
    if (run_session_open(&rs, &o, &hooks, true, &err) < 0) {
        fprintf(stderr, "bench_record_stats: %s\n", err.msg);
        sampler_destroy(s);
        return 1;
    }
    if (sampler_attach(s, rs.vm, &err) < 0) {
        fprintf(stderr, "bench_record_stats: %s\n", err.msg);
        run_session_close(&rs);
        sampler_destroy(s);
        return 1;
    }
    struct vm_result res;
    int rc = vm_run(rs.vm, &res, &err);
    if (rc < 0)
        fprintf(stderr, "bench_record_stats: %s\n", err.msg);
    struct hv_err ferr = {{0}, 0};
    int frc = sampler_finish(s, &ferr);
    run_session_close(&rs);
    fflush(stdout);
    sampler_print_summary(s, stderr);
    print_stats(s);
    sampler_destroy(s);
    if (frc < 0)
        fprintf(stderr, "bench_record_stats: %s\n", ferr.msg);
    return rc < 0 || frc < 0 ? 1 : res.status;
}
