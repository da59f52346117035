/* kallsyms decoded from guest memory: a kernel image built here from the format of
 * scripts/kallsyms.c and kernel/kallsyms.c (token table and index, the names stream with 1- and
 * 2-byte lengths, s32 offsets in each address mode, relative_base), with VMCOREINFO as Linux 6.1
 * writes it and the utsname release where init_uts_ns says; then the whole discovery through
 * lx_kernel_discover(). Hostile tables fail with a message, never a crash (ASan runs these). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guestos/linux/kallsyms.h"
#include "guestos/linux/kernel.h"

#define RAM   (48u << 20)
#define KASLR 0x1e000000ull                   /* KERNELOFFSET */
#define TEXT  (0xffffffff81000000ull + KASLR) /* _stext at run time */
/* _stext lies at guest-physical 16 MiB: phys_base = phys - (va - __START_KERNEL_map), which is
 * "negative" whenever the virtual slide exceeds the physical one, as here and in real boots. */
#define PHYS_BASE (0x1000000ull - (TEXT - LX_START_KERNEL_MAP))
#define TABLES    (TEXT + 0x800000) /* where the kallsyms tables go */
#define UTS       (TEXT + 0x900000) /* init_uts_ns */
#define VMCI_GPA  0x2000000ull      /* the VMCOREINFO data page */

struct img {
    uint8_t *ram;
    struct gmem mem;
    uint64_t cur; /* next free va for a table */
    char vmci[4096];
    size_t vmci_len;
};

static uint8_t *at(struct img *m, uint64_t va)
{
    uint64_t gpa = va - LX_START_KERNEL_MAP + PHYS_BASE; /* mod 2^64 */
    assert_true(gpa < RAM);
    return m->ram + gpa;
}

static uint64_t place(struct img *m, const void *p, size_t len)
{
    uint64_t va = m->cur;
    memcpy(at(m, va), p, len);
    m->cur = (va + len + 7) & ~7ull;
    return va;
}

static void vmci_line(struct img *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    m->vmci_len += (size_t)vsnprintf(m->vmci + m->vmci_len, sizeof(m->vmci) - m->vmci_len, fmt, ap);
    va_end(ap);
}

/* Tokens: 0x21..0x7e are themselves; a few others are multi-character strings as the real
 * compressor makes; the rest are "~" + a digit pair, never used. */
static const char *const multi[] = {"_s", "text", "sched", "_task", "current"};
static char tok_str[256][8];

static void make_tokens(void)
{
    for (unsigned i = 0; i < 256; i++) {
        if (i >= 0x21 && i <= 0x7e)
            snprintf(tok_str[i], sizeof(tok_str[i]), "%c", (char)i);
        else if (i < sizeof(multi) / sizeof(multi[0]))
            snprintf(tok_str[i], sizeof(tok_str[i]), "%s", multi[i]);
        else
            snprintf(tok_str[i], sizeof(tok_str[i]), "~%02x", i);
    }
}

/* Encode "<type><name>" greedily with the multi-character tokens. */
static size_t encode_name(const char *s, uint8_t *out)
{
    size_t n = 0;
    while (*s) {
        size_t best = 0, blen = 0;
        for (size_t t = 0; t < sizeof(multi) / sizeof(multi[0]); t++) {
            size_t l = strlen(multi[t]);
            if (l > blen && !strncmp(s, multi[t], l)) {
                best = t;
                blen = l;
            }
        }
        if (blen) {
            out[n++] = (uint8_t)best;
            s += blen;
        } else {
            out[n++] = (uint8_t)*s++;
        }
    }
    return n;
}

struct ksym {
    const char *name; /* with its type letter */
    uint64_t addr;
};

static char long_name[300];

/* The kernel's symbols, sorted by address as kallsyms is. */
static struct ksym syms[] = {
    {"Acurrent_task", 0x22d00}, /* per-CPU: an offset into the CPU's area (absolute) */
    {"A__per_cpu_start", 0},
    {"T_stext", TEXT},
    {"Tstartup_64", TEXT},
    {"tsched_clock", TEXT + 0x120},
    {"Tschedule", TEXT + 0x400},
    {NULL, TEXT + 0x800}, /* the long name */
    {"Wweak_fn", TEXT + 0x900},
    {"Tentry_SYSCALL_64", TEXT + 0xa00},
    {"T_etext", TEXT + 0x10000},
    {"D__per_cpu_offset", TEXT + 0x200000},
    {"Dnr_cpu_ids", TEXT + 0x200100},
    {"Dinit_task", TEXT + 0x300000},
};
#define NSYMS (sizeof(syms) / sizeof(syms[0]))

enum mode { PERCPU, RELATIVE, PLACE };

/* Build the image: tables at TABLES, VMCOREINFO text in m->vmci, its data page in RAM. */
static void build(struct img *m, enum mode mode)
{
    make_tokens();
    memset(long_name, 0, sizeof(long_name));
    long_name[0] = 't';
    for (size_t i = 1; i < 200; i++) /* 200 single-character tokens: a 2-byte length (6.1) */
        long_name[i] = (char)('a' + i % 26);
    syms[6].name = long_name;

    m->ram = calloc(1, RAM);
    assert_non_null(m->ram);
    gmem_init(&m->mem);
    assert_int_equal(gmem_add(&m->mem, 0, RAM, m->ram, NULL), 0);
    m->cur = TABLES;
    m->vmci_len = 0;

    uint32_t n = NSYMS;
    uint64_t num_va = place(m, &n, 4);
    uint8_t names[8192];
    size_t nl = 0;
    for (size_t i = 0; i < NSYMS; i++) {
        uint8_t enc[600];
        size_t len = encode_name(syms[i].name, enc);
        if (len > 0x7f) {
            names[nl++] = (uint8_t)(0x80 | (len & 0x7f));
            names[nl++] = (uint8_t)(len >> 7);
        } else {
            names[nl++] = (uint8_t)len;
        }
        memcpy(names + nl, enc, len);
        nl += len;
    }
    uint64_t names_va = place(m, names, nl);
    char table[4096];
    uint16_t index[256];
    size_t tl = 0;
    for (unsigned i = 0; i < 256; i++) {
        index[i] = (uint16_t)tl;
        size_t l = strlen(tok_str[i]) + 1;
        memcpy(table + tl, tok_str[i], l);
        tl += l;
    }
    uint64_t table_va = place(m, table, tl);
    uint64_t index_va = place(m, index, sizeof(index));
    uint64_t base = TEXT; /* the lowest non-absolute address */
    int32_t offs[NSYMS];
    if (mode != PERCPU)
        syms[0].addr = syms[1].addr = base; /* no absolute symbols in these modes */
    uint64_t offs_va = m->cur;
    for (size_t i = 0; i < NSYMS; i++) {
        bool absolute = syms[i].name[0] == 'A';
        if (mode == PERCPU)
            offs[i] = absolute ? (int32_t)syms[i].addr : (int32_t)(base - 1 - syms[i].addr);
        else if (mode == RELATIVE)
            offs[i] = (int32_t)(uint32_t)(syms[i].addr - base);
        else /* each entry relative to its own address (7.x) */
            offs[i] = (int32_t)(syms[i].addr - (offs_va + 4 * i));
    }
    assert_int_equal(place(m, offs, sizeof(offs)), offs_va);
    uint64_t base_va = place(m, &base, 8);

    char uts[400] = {0};
    strcpy(uts + 130, "6.1.0-27-amd64"); /* new_utsname.release */
    place(m, uts, 0);                    /* keep cur */
    memcpy(at(m, UTS), uts, sizeof(uts));

    vmci_line(m, "OSRELEASE=6.1.0-27-amd64\n");
    vmci_line(m, "BUILD-ID=0123456789abcdef0123456789abcdef01234567\n");
    vmci_line(m, "PAGESIZE=4096\n");
    vmci_line(m, "SYMBOL(init_uts_ns)=%llx\n", (unsigned long long)UTS);
    vmci_line(m, "OFFSET(uts_namespace.name)=0\n");
    vmci_line(m, "SYMBOL(_stext)=%llx\n", (unsigned long long)TEXT);
    vmci_line(m, "SYMBOL(kallsyms_names)=%llx\n", (unsigned long long)names_va);
    vmci_line(m, "SYMBOL(kallsyms_num_syms)=%llx\n", (unsigned long long)num_va);
    vmci_line(m, "SYMBOL(kallsyms_token_table)=%llx\n", (unsigned long long)table_va);
    vmci_line(m, "SYMBOL(kallsyms_token_index)=%llx\n", (unsigned long long)index_va);
    vmci_line(m, "SYMBOL(kallsyms_offsets)=%llx\n", (unsigned long long)offs_va);
    if (mode != PLACE) /* 7.x names no base */
        vmci_line(m, "SYMBOL(kallsyms_relative_base)=%llx\n", (unsigned long long)base_va);
    vmci_line(m, "NUMBER(phys_base)=%lld\n",
              (long long)PHYS_BASE); /* signed, as the kernel prints it */
    vmci_line(m, "KERNELOFFSET=%llx\n", (unsigned long long)KASLR);
    vmci_line(m, "NUMBER(KERNEL_IMAGE_SIZE)=1073741824\n");
    memcpy(m->ram + VMCI_GPA, m->vmci, m->vmci_len);
}

static void img_free(struct img *m)
{
    free(m->ram);
}

static struct lx_kimage kimage(struct img *m)
{
    return (struct lx_kimage){.mem = &m->mem, .phys_base = PHYS_BASE, .image_size = 1ull << 30};
}

struct collected {
    size_t n;
    uint64_t addr[64];
    char type[64];
    char name[64][320];
};

static int collect(void *ctx, uint64_t addr, char type, const char *name, size_t len,
                   struct hv_err *err)
{
    (void)err;
    struct collected *c = ctx;
    assert_true(c->n < 64);
    assert_int_equal(strlen(name), len);
    c->addr[c->n] = addr;
    c->type[c->n] = type;
    snprintf(c->name[c->n], sizeof(c->name[c->n]), "%s", name);
    c->n++;
    return 0;
}

static void decode_and_check(enum mode mode, enum lx_kallsyms_mode want_mode)
{
    struct img m;
    build(&m, mode);
    struct lx_vmcoreinfo v;
    struct hv_err err = {0};
    assert_int_equal(lx_vmcoreinfo_parse(m.vmci, m.vmci_len, &v, &err), 0);
    struct lx_kimage k = kimage(&m);
    struct collected *c = calloc(1, sizeof(*c));
    struct lx_kallsyms_info info;
    struct lx_kallsyms_loc loc;
    uint64_t stext;
    assert_true(lx_kallsyms_loc_from_vmcoreinfo(&v, &loc));
    assert_true(lx_vmcoreinfo_symbol(&v, "_stext", &stext));
    int rc = lx_kallsyms_decode(&k, &loc, stext, collect, c, &info, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(info.nsyms, NSYMS);
    assert_int_equal(info.mode, want_mode);
    assert_int_equal(c->n, NSYMS);
    for (size_t i = 0; i < NSYMS; i++) {
        assert_int_equal(c->type[i], syms[i].name[0]);
        assert_string_equal(c->name[i], syms[i].name + 1);
        assert_int_equal(c->addr[i], syms[i].addr);
    }
    free(c);
    img_free(&m);
}

static void test_absolute_percpu(void **state)
{
    (void)state;
    decode_and_check(PERCPU, LX_KALLSYMS_ABSOLUTE_PERCPU);
}

static void test_place_relative(void **state)
{
    (void)state;
    decode_and_check(PLACE, LX_KALLSYMS_PLACE_RELATIVE);
    syms[0].addr = 0x22d00; /* restore the per-CPU values for the other tests */
    syms[1].addr = 0;
}

static void test_relative(void **state)
{
    (void)state;
    decode_and_check(RELATIVE, LX_KALLSYMS_RELATIVE);
    syms[0].addr = 0x22d00; /* restore the per-CPU values for the other tests */
    syms[1].addr = 0;
}

/* The whole discovery: VMCOREINFO found by the scan, checked against utsname, kallsyms decoded
 * into code symbols with end markers, and the data symbols the task walk needs. */
static void test_discover(void **state)
{
    (void)state;
    struct img m;
    build(&m, PERCPU);
    struct lx_kernel *k = lx_kernel_new();
    struct hv_err err = {0};
    int rc = lx_kernel_discover(k, &m.mem, &err);
    if (rc != 1)
        fail_msg("rc %d: %s", rc, err.msg);
    assert_string_equal(k->vmci.osrelease, "6.1.0-27-amd64");
    assert_int_equal(k->kaslr_offset, KASLR);
    /* code: startup_64/_stext alias, sched_clock, schedule, the long one, weak_fn,
     * entry_SYSCALL_64, and _etext as an end marker */
    assert_int_equal(k->syms.n, 8);
    assert_string_equal(lx_ksym_name(k, &k->syms.v[0]), "_stext");
    assert_string_equal(lx_ksym_name(k, &k->syms.v[2]), "sched_clock");
    assert_int_equal(k->syms.v[2].type, 't');
    assert_int_equal(k->syms.v[4].name_len, 199);
    assert_int_equal(k->syms.v[7].type, 0);
    assert_int_equal(k->syms.v[7].addr, TEXT + 0x10000);
    assert_int_equal(k->text_lo, TEXT);
    assert_int_equal(k->text_hi, TEXT + 0x10001);
    assert_int_equal(k->sym.current_task, 0x22d00);
    assert_int_equal(k->sym.per_cpu_offset, TEXT + 0x200000);
    assert_int_equal(k->sym.nr_cpu_ids, TEXT + 0x200100);
    assert_int_equal(k->sym.init_task, TEXT + 0x300000);
    assert_int_equal(k->sym.entry_syscall_64, TEXT + 0xa00);
    lx_kernel_free(k);
    img_free(&m);
}

/* No VMCOREINFO yet: 0, not an error (the guest has not reached its initcalls). */
static void test_not_yet(void **state)
{
    (void)state;
    struct img m;
    build(&m, PERCPU);
    memset(m.ram + VMCI_GPA, 0, 4096);
    struct lx_kernel *k = lx_kernel_new();
    assert_int_equal(lx_kernel_discover(k, &m.mem, NULL), 0);
    lx_kernel_free(k);
    img_free(&m);
}

/* Each hostile change gives -1 with a message naming the problem. */
static void expect_failure(void (*spoil)(struct img *m), const char *words)
{
    struct img m;
    build(&m, PERCPU);
    spoil(&m);
    struct lx_kernel *k = lx_kernel_new();
    struct hv_err err = {0};
    assert_int_equal(lx_kernel_discover(k, &m.mem, &err), -1);
    if (!strstr(err.msg, words))
        fail_msg("expected '%s' in: %s", words, err.msg);
    assert_int_equal(k->syms.n, 0);
    lx_kernel_free(k);
    img_free(&m);
}

static void spoil_count(struct img *m)
{
    uint32_t huge = 0x7fffffff;
    memcpy(at(m, TABLES), &huge, 4);
}
static void spoil_stream(struct img *m)
{
    uint32_t more = NSYMS + 100000; /* the stream ends long before */
    memcpy(at(m, TABLES), &more, 4);
    /* and the bytes after the stream are zero lengths, which end it */
}
static void spoil_token(struct img *m)
{
    /* token 0x41 ('A') becomes "\x01": no symbol name holds a control byte */
    uint16_t index[256];
    char *p = strstr(m->vmci, "SYMBOL(kallsyms_token_index)=");
    unsigned long long iva = strtoull(p + strlen("SYMBOL(kallsyms_token_index)="), NULL, 16);
    memcpy(index, at(m, iva), sizeof(index));
    p = strstr(m->vmci, "SYMBOL(kallsyms_token_table)=");
    unsigned long long tva = strtoull(p + strlen("SYMBOL(kallsyms_token_table)="), NULL, 16);
    at(m, tva + index[0x41])[0] = 1;
}
static void spoil_stext(struct img *m)
{
    /* the table's _stext no longer where VMCOREINFO says: no address mode fits */
    char *p = strstr((char *)m->ram + VMCI_GPA, "SYMBOL(_stext)=");
    p[strlen("SYMBOL(_stext)=") + 15] = '1';
}
static void spoil_release(struct img *m)
{
    strcpy((char *)at(m, UTS) + 130, "5.10.0-stale");
}
static void spoil_tables_outside(struct img *m)
{
    /* kallsyms_names far outside RAM */
    char *p = strstr((char *)m->ram + VMCI_GPA, "SYMBOL(kallsyms_names)=");
    memcpy(p + strlen("SYMBOL(kallsyms_names)="), "ffffffffbf", 10);
}

static void test_hostile(void **state)
{
    (void)state;
    expect_failure(spoil_count, "symbols (1-");
    expect_failure(spoil_stream, "names stream ends");
    expect_failure(spoil_token, "holds byte 0x01");
    expect_failure(spoil_stext, "no address mode");
    expect_failure(spoil_release, "stale");
    expect_failure(spoil_tables_outside, "not in the kernel image");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absolute_percpu), cmocka_unit_test(test_relative),
        cmocka_unit_test(test_place_relative),  cmocka_unit_test(test_discover),
        cmocka_unit_test(test_not_yet),         cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
