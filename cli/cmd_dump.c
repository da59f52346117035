/* hvprof dump: print the records of an FXT file (fxt/reader.h, with hvprof's own records
 * decoded by schema/decode.h), or counts with --stats. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "fxt/reader.h"
#include "schema/decode.h"

static const char *const type_names[FXTR_NTYPES] = {
    "metadata", "init", "string", "thread", "event",  "blob",   "uobj",   "kobj",
    "sched",    "log",  "type10", "type11", "type12", "type13", "type14", "large",
};

static const struct cli_option dump_options[] = {
    {'s', "stats", 's', NULL, "print a count per record type and the totals instead"},
};

static const struct cli_group dump_group = CLI_GROUP("options", dump_options);
static const struct cli_group *const dump_groups[] = {&dump_group};

const struct cli_command cli_dump = {
    .name = "dump",
    .synopsis = "[--stats] FILE",
    .about = "Print the records of an FXT (Fuchsia Trace Format) file, one line per record:\n"
             "byte offset, record type, decoded fields (hvprof samples, modules, mappings and\n"
             "loss records included). The file is checked strictly; on malformed input the\n"
             "command prints \"FILE: offset 0x...: reason\" and exits with status 1; a file cut\n"
             "inside a record shows every record before the cut and says where it was cut.",
    .examples = "hvprof dump demo.fxt | less                 # every record\n"
                "hvprof dump --stats demo.fxt                # counts per record type\n"
                "hvprof dump demo.fxt | grep records_dropped # the loss records",
    .groups = dump_groups,
    .ngroups = 1,
};

static int handle(void *ctx, int id, const char *arg, struct hv_err *err)
{
    (void)arg, (void)err;
    if (id != 's')
        return 0;
    *(int *)ctx = 1;
    return 1;
}

static void put_str(struct fxtr_string s)
{
    fputc('"', stdout);
    for (uint32_t i = 0; i < s.len && i < 200; i++) {
        unsigned char ch = (unsigned char)s.ptr[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
            fputc(ch, stdout);
        else
            printf("\\x%02x", ch);
    }
    fputs(s.len > 200 ? "...\"" : "\"", stdout);
}

static void put_args(const struct fxtr_arg *a, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        fputc(' ', stdout);
        put_str(a[i].name);
        fputc('=', stdout);
        switch (a[i].type) {
        case FXTR_ARG_NULL:
            fputs("null", stdout);
            break;
        case FXTR_ARG_I32:
        case FXTR_ARG_I64:
            printf("%" PRId64, a[i].v.i);
            break;
        case FXTR_ARG_DOUBLE:
            printf("%g", a[i].v.d);
            break;
        case FXTR_ARG_STRING:
            put_str(a[i].v.s);
            break;
        case FXTR_ARG_POINTER:
        case FXTR_ARG_KOID:
            printf("0x%" PRIx64, a[i].v.u);
            break;
        case FXTR_ARG_BOOL:
            fputs(a[i].v.u ? "true" : "false", stdout);
            break;
        case FXTR_ARG_BLOB:
            printf("blob[%u words]", a[i].v.blob.n);
            break;
        case FXTR_ARG_U32:
        case FXTR_ARG_U64:
            printf("%" PRIu64, a[i].v.u);
            break;
        default:
            printf("unknown-type-%u", a[i].type);
        }
    }
}

static void put_stack(const char *label, struct fxtr_words w)
{
    printf(" %s[%u]", label, w.n);
    for (uint32_t i = 0; i < w.n && i < 64; i++)
        printf("%s0x%" PRIx64, i ? "," : "=", fxtr_word(w, i));
    if (w.n > 64)
        fputs(",...", stdout);
}

static void put_walk(uint64_t walk)
{
    printf(" walk=kstop:%s,ustop:%s%s%s", hvfxt_stop_name(hvfxt_walk_kernel_stop(walk)),
           hvfxt_stop_name(hvfxt_walk_user_stop(walk)),
           (walk & HVFXT_WALK_KERNEL_TRUNC) ? ",ktrunc" : "",
           (walk & HVFXT_WALK_USER_TRUNC) ? ",utrunc" : "");
}

/* Every present field in record order, labelled as the table says (schema/sample_fields.h). */
static void put_sample(const struct hvfxt_sample_view *s)
{
    printf(" sample");
#define PUT_DEC(label, v)     printf(" %s=%" PRIu64, label, v);
#define PUT_HEX(label, v)     printf(" %s=0x%" PRIx64, label, v);
#define PUT_FRAMES(label, v)  put_stack(label, v);
#define PUT_WALKFMT(label, v) put_walk(v);
#define PUT_FIELD(NAME, bit, member, count, shape, wire, label, fmt)                               \
    if (s->fields & HVFXT_SF_##NAME)                                                               \
    PUT_##fmt(label, s->member)
    HVFXT_SAMPLE_FIELDS(PUT_FIELD)
#undef PUT_FIELD
#undef PUT_WALKFMT
#undef PUT_FRAMES
#undef PUT_HEX
#undef PUT_DEC
}

static void dump_record(const struct hvfxt_record *x)
{
    const struct fxtr_record *rec = &x->fxt;
    printf("0x%08zx %-8s", rec->offset, type_names[rec->type & 15]);
    if (rec->unknown) {
        printf(" unknown (%" PRIu64 " words, skipped)\n", rec->nwords);
        return;
    }
    switch (rec->type) {
    case FXTR_METADATA:
        switch (rec->u.meta.mtype) {
        case 1:
            printf(" provider-info id=%u name=", rec->u.meta.provider_id);
            put_str(rec->u.meta.name);
            break;
        case 2:
            printf(" provider-section id=%u", rec->u.meta.provider_id);
            break;
        case 3:
            printf(" provider-event id=%u event=%u", rec->u.meta.provider_id, rec->u.meta.event_id);
            break;
        default:
            printf(" magic");
        }
        break;
    case FXTR_INIT:
        printf(" ticks_per_second=%" PRIu64, rec->u.init.ticks_per_second);
        break;
    case FXTR_STRING:
        printf(" index=%u ", rec->u.string.index);
        put_str(rec->u.string.str);
        break;
    case FXTR_THREAD:
        printf(" index=%u pid=0x%" PRIx64 " tid=0x%" PRIx64, rec->u.thread.index, rec->u.thread.pid,
               rec->u.thread.tid);
        break;
    case FXTR_EVENT:
        printf(" type=%u ts=%" PRIu64 " pid=0x%" PRIx64 " tid=0x%" PRIx64 " ", rec->u.event.etype,
               rec->u.event.ts, rec->u.event.pid, rec->u.event.tid);
        put_str(rec->u.event.category);
        fputc(':', stdout);
        put_str(rec->u.event.name);
        put_args(rec->u.event.args, rec->u.event.nargs);
        if (rec->u.event.has_extra)
            printf(" extra=%" PRIu64, rec->u.event.extra);
        break;
    case FXTR_BLOB:
        printf(" blob-type=0x%x bytes=%u", rec->u.blob.btype, rec->u.blob.size);
        if (x->kind == HVFXT_REC_SAMPLE) {
            put_sample(&x->u.sample);
        } else if (x->kind == HVFXT_REC_MODULE) {
            printf(" module id=%" PRIu64 " name=", x->u.module.id);
            put_str(x->u.module.name);
            printf(" build_id=");
            for (uint32_t i = 0; i < x->u.module.build_id_len; i++)
                printf("%02x", x->u.module.build_id[i]);
        } else if (x->kind == HVFXT_REC_MAPPING) {
            const struct hvfxt_mapping *m = &x->u.mapping;
            printf(" mapping pid=0x%" PRIx64 " module=%" PRIu64 " start=0x%" PRIx64
                   " size=0x%" PRIx64 " vaddr=0x%" PRIx64 " flags=%c%c%c ts=%" PRIu64,
                   m->pid, m->module_id, m->start, m->size, m->vaddr,
                   (m->flags & HVFXT_MAP_READ) ? 'r' : '-',
                   (m->flags & HVFXT_MAP_WRITE) ? 'w' : '-',
                   (m->flags & HVFXT_MAP_EXEC) ? 'x' : '-', m->ts);
        } else if (x->kind == HVFXT_REC_CODE) {
            const struct hvfxt_code_view *c = &x->u.code;
            printf(" runtime-code runtime=%u pid=0x%" PRIx64 " code=0x%" PRIx64 " base=0x%" PRIx64
                   " name=",
                   c->runtime, c->pid, c->code, c->base);
            put_str(c->name);
            printf(" file=");
            put_str(c->filename);
            printf(" firstline=%" PRId32 " table=%" PRIu32, c->firstlineno, c->table_len);
        } else if (x->kind == HVFXT_REC_SYMBOLS) {
            /* The count and the first and last symbol: a record holds up to ~1000. */
            const struct hvfxt_symbols_view *v = &x->u.symbols;
            printf(" symbols module=%" PRIu64 " count=%" PRIu32, v->module_id, v->count);
            uint32_t i = 0, pos = 0;
            uint64_t a;
            char t;
            const char *n;
            size_t len;
            while (hvfxt_symbols_next(v, &i, &pos, &a, &t, &n, &len))
                if (i == 1 || i == v->count)
                    printf(" %s0x%" PRIx64 " %c %.*s", i == 1 ? "" : ".. ", a, t ? t : '-',
                           (int)len, n);
        }
        break;
    case FXTR_KOBJ:
        printf(" obj-type=%u koid=0x%" PRIx64 " name=", rec->u.kobj.obj_type, rec->u.kobj.koid);
        put_str(rec->u.kobj.name);
        put_args(rec->u.kobj.args, rec->u.kobj.nargs);
        break;
    case FXTR_SCHED:
        printf(" subtype=%u ts=%" PRIu64 " cpu=%u out=0x%" PRIx64 " in=0x%" PRIx64,
               rec->u.sched.stype, rec->u.sched.ts, rec->u.sched.cpu, rec->u.sched.out_tid,
               rec->u.sched.in_tid);
        break;
    case FXTR_LOG:
        printf(" ts=%" PRIu64 " pid=0x%" PRIx64 " tid=0x%" PRIx64 " ", rec->u.log.ts,
               rec->u.log.pid, rec->u.log.tid);
        put_str(rec->u.log.msg);
        break;
    case FXTR_LARGE:
        printf(" blob format=%u ts=%" PRIu64 " pid=0x%" PRIx64 " tid=0x%" PRIx64 " bytes=%" PRIu64,
               rec->u.large.format, rec->u.large.ts, rec->u.large.pid, rec->u.large.tid,
               rec->u.large.size);
        break;
    default:
        printf(" %" PRIu64 " words", rec->nwords);
    }
    fputc('\n', stdout);
}

/* A file cut inside a record: everything before the cut was read, said once. */
static void warn_cut(const char *path, uint64_t offset, uint64_t have, uint64_t records)
{
    fflush(stdout);
    fprintf(stderr,
            "hvprof dump: %s was cut at byte %" PRIu64 ", inside the record that starts at byte "
            "%" PRIu64 ": the %" PRIu64 " complete record%s before it %s shown\n",
            path, offset + have, offset, records, records == 1 ? "" : "s",
            records == 1 ? "is" : "are");
}

static int dump_stats(const char *path, const void *buf, size_t len)
{
    struct hvfxt_stats st;
    struct hv_err err = {0};
    int rc = hvfxt_stats(buf, len, &st, &err);
    for (unsigned t = 0; t < FXTR_NTYPES; t++)
        if (st.by_type[t])
            printf("%-9s %10" PRIu64 "\n", type_names[t], st.by_type[t]);
    printf("records   %10" PRIu64 "\nbytes     %10" PRIu64 "\nunknown   %10" PRIu64 "\n",
           st.records, st.bytes, st.unknown);
    if (st.samples || st.completions || st.modules || st.mappings || st.loss_records)
        printf("samples   %10" PRIu64 "\ncompletions %8" PRIu64 "\nmodules   %10" PRIu64
               "\nmappings  %10" PRIu64 "\nloss-records %7" PRIu64 "\ndropped   %10" PRIu64 "\n",
               st.samples, st.completions, st.modules, st.mappings, st.loss_records, st.dropped);
    if (st.overwritten)
        printf("overwritten %8" PRIu64 " (a flight recording: older records let go)\n",
               st.overwritten);
    if (st.symbol_records)
        printf("symbols   %10" PRIu64 " (in %" PRIu64 " records)\n", st.symbols, st.symbol_records);
    if (st.cut)
        printf("cut       at byte %" PRIu64 ", inside a record of %s%" PRIu64
               " bytes from byte %" PRIu64 " (%" PRIu64 " of them in the file)\n",
               st.cut_offset + st.cut_have, st.cut_need ? "" : "at least ",
               st.cut_need ? st.cut_need : 8, st.cut_offset, st.cut_have);
    if (rc) {
        fflush(stdout);
        fprintf(stderr, "hvprof dump: %s: %s\n", path, err.msg);
        return 1;
    }
    if (st.cut)
        warn_cut(path, st.cut_offset, st.cut_have, st.records);
    return 0;
}

static int dump_records(const char *path, const void *buf, size_t len)
{
    struct fxtr_reader r;
    struct hvfxt_record *rec = malloc(sizeof(*rec));
    if (!rec) {
        fprintf(stderr, "hvprof dump: out of memory\n");
        return 1;
    }
    struct hv_err err = {0};
    fxtr_init(&r, buf, len);
    int rc;
    uint64_t n = 0;
    while ((rc = hvfxt_next(&r, rec, &err)) == 1) {
        dump_record(rec);
        n++;
    }
    if (rc == 0 && r.cut)
        warn_cut(path, r.cut_offset, r.cut_have, n);
    fxtr_free(&r);
    free(rec);
    if (rc < 0) {
        fflush(stdout);
        fprintf(stderr, "hvprof dump: %s: %s\n", path, err.msg);
        return 1;
    }
    return 0;
}

int cmd_dump(int argc, char **argv)
{
    int stats = 0;
    int parsed = cli_parse(&cli_dump, argc, argv, handle, &stats);
    if (parsed)
        return parsed == 1 ? 0 : 2;
    if (optind + 1 != argc) {
        if (optind >= argc)
            fprintf(stderr, "hvprof dump: no file given\n");
        else
            fprintf(stderr, "hvprof dump: one file at a time (%d given)\n", argc - optind);
        cli_usage(stderr, &cli_dump);
        return 2;
    }
    const char *path = argv[optind];
    const void *buf;
    size_t len;
    struct hv_err err = {0};
    if (fxtr_map_file(path, &buf, &len, &err)) {
        fprintf(stderr, "hvprof dump: %s\n", err.msg);
        return 1;
    }
    int rc = stats ? dump_stats(path, buf, len) : dump_records(path, buf, len);
    fxtr_unmap_file(buf, len);
    return rc;
}
