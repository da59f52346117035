/* kallsyms found by their structure, for kernels whose VMCOREINFO does not name the tables
 * (before 6.0): an image laid out as scripts/kallsyms.c of 5.10 lays it out (offsets,
 * relative_base, num_syms, names, markers, token table, token index, each 8-byte aligned), with
 * a decoy "0\0".."9\0" run in the code before it, and VMCOREINFO as 5.10 writes it (no kallsyms
 * lines). The whole discovery must find and decode the tables; forged markers, index or names
 * must fail with a message, and a flood of decoys must end the search, not stall it. The same
 * finder on Debian's 5.10, 6.1, 6.12 and 7.2 images is exercised on captured guests
 * (test_captured.c) and on the test bed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guestos/linux/kallsyms_find.h"
#include "guestos/linux/kernel.h"

#define RAM       (48u << 20)
#define KASLR     0x2a000000ull
#define TEXT      (0xffffffff81000000ull + KASLR)
#define PHYS_BASE (0x1000000ull - (TEXT - LX_START_KERNEL_MAP))
#define TABLES    (TEXT + 0xa00000)
#define UTS       (TEXT + 0x1800000)
#define VMCI_GPA  0x2c00000ull
#define NFN       700 /* three blocks of 256 names: three markers */

struct img {
    uint8_t *ram;
    struct gmem mem;
    uint64_t cur;
    uint64_t names, markers, table, index, num;
};

static uint8_t *at(struct img *m, uint64_t va)
{
    uint64_t gpa = va - LX_START_KERNEL_MAP + PHYS_BASE;
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

static char names[NFN + 2][24];
static uint64_t addrs[NFN + 2];

/* Tokens: the printable characters are themselves (so "0".."9" sit at 0x30-0x39), and a few
 * multi-character ones in the unused low slots, as the real compressor does. */
static const char *const multi[] = {"fn_", "_s", "text", "init"};
static char tok[256][8];

static size_t encode(const char *s, uint8_t *out)
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
        out[n++] = blen ? (uint8_t)best : (uint8_t)*s;
        s += blen ? blen : 1;
    }
    return n;
}

static void build(struct img *m)
{
    for (unsigned i = 0; i < 256; i++) {
        if (i >= 0x21 && i <= 0x7e)
            snprintf(tok[i], sizeof(tok[i]), "%c", (char)i);
        else if (i < sizeof(multi) / sizeof(multi[0]))
            snprintf(tok[i], sizeof(tok[i]), "%s", multi[i]);
        else
            snprintf(tok[i], sizeof(tok[i]), "~%02x", i);
    }
    size_t n = 0;
    snprintf(names[n], sizeof(names[n]), "T_stext");
    addrs[n++] = TEXT;
    for (unsigned i = 0; i < NFN; i++) {
        snprintf(names[n], sizeof(names[n]), "%cfn_%04u", i % 3 ? 'T' : 't', i);
        addrs[n++] = TEXT + 0x40 + 0x40ull * i;
    }
    snprintf(names[n], sizeof(names[n]), "Dinit_task");
    addrs[n++] = TEXT + 0x1000000;

    m->ram = calloc(1, RAM);
    assert_non_null(m->ram);
    gmem_init(&m->mem);
    assert_int_equal(gmem_add(&m->mem, 0, RAM, m->ram, NULL), 0);
    /* a decoy in the code: the digit run, but no token table around it */
    /* clang-format off */
    memcpy(at(m, TEXT + 0x5000), "0\0" "1\0" "2\0" "3\0" "4\0" "5\0" "6\0" "7\0" "8\0" "9", 20);
    /* clang-format on */

    m->cur = TABLES;
    int32_t offs[NFN + 2];
    uint64_t base = TEXT;
    for (size_t i = 0; i < n; i++)
        offs[i] = (int32_t)(base - 1 - addrs[i]); /* base-relative, absolute per-CPU */
    place(m, offs, sizeof(offs));
    place(m, &base, 8);
    uint32_t count = (uint32_t)n;
    m->num = place(m, &count, 4);
    static uint8_t stream[NFN * 16];
    uint32_t marks[(NFN + 2 + 255) / 256];
    size_t sl = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % 256 == 0)
            marks[i / 256] = (uint32_t)sl;
        uint8_t enc[32];
        size_t len = encode(names[i], enc);
        stream[sl++] = (uint8_t)len;
        memcpy(stream + sl, enc, len);
        sl += len;
    }
    m->names = place(m, stream, sl);
    m->markers = place(m, marks, sizeof(marks));
    char table[2048];
    uint16_t index[256];
    size_t tl = 0;
    for (unsigned i = 0; i < 256; i++) {
        index[i] = (uint16_t)tl;
        memcpy(table + tl, tok[i], strlen(tok[i]) + 1);
        tl += strlen(tok[i]) + 1;
    }
    m->table = place(m, table, tl);
    m->index = place(m, index, sizeof(index));

    char uts[400] = {0};
    strcpy(uts + 130, "5.10.0-32-amd64");
    memcpy(at(m, UTS), uts, sizeof(uts));
    char vmci[1024];
    int len = snprintf(vmci, sizeof(vmci),
                       "OSRELEASE=5.10.0-32-amd64\nPAGESIZE=4096\nSYMBOL(init_uts_ns)=%llx\n"
                       "OFFSET(uts_namespace.name)=0\nSYMBOL(_stext)=%llx\n"
                       "NUMBER(phys_base)=%lld\nKERNELOFFSET=%llx\n"
                       "NUMBER(KERNEL_IMAGE_SIZE)=1073741824\n",
                       (unsigned long long)UTS, (unsigned long long)TEXT, (long long)PHYS_BASE,
                       (unsigned long long)KASLR);
    memcpy(m->ram + VMCI_GPA, vmci, (size_t)len);
}

static void test_found_and_decoded(void **state)
{
    (void)state;
    struct img m;
    build(&m);
    struct lx_kernel *k = lx_kernel_new();
    struct hv_err err = {0};
    int rc = lx_kernel_discover(k, &m.mem, &err);
    if (rc != 1)
        fail_msg("rc %d: %s", rc, err.msg);
    assert_true(k->ks_loc.by_structure);
    assert_int_equal(k->ks_loc.names, m.names);
    assert_int_equal(k->ks_loc.num_syms, m.num);
    assert_int_equal(k->ks_loc.markers, m.markers);
    assert_int_equal(k->ks_loc.token_table, m.table);
    assert_int_equal(k->ks_loc.token_index, m.index);
    assert_int_equal(k->ks.nsyms, NFN + 2);
    assert_int_equal(k->ks.mode, LX_KALLSYMS_ABSOLUTE_PERCPU);
    assert_int_equal(k->syms.n, NFN + 1); /* _stext and the functions; init_task is data */
    assert_string_equal(lx_ksym_name(k, &k->syms.v[0]), "_stext");
    assert_string_equal(lx_ksym_name(k, &k->syms.v[NFN]), "fn_0699");
    assert_int_equal(k->syms.v[NFN].addr, TEXT + 0x40 + 0x40ull * 699);
    assert_int_equal(k->syms.v[1].type, 't');
    assert_int_equal(k->sym.init_task, TEXT + 0x1000000);
    lx_kernel_free(k);
    free(m.ram);
}

static void expect_failure(void (*spoil)(struct img *m), const char *words)
{
    struct img m;
    build(&m);
    spoil(&m);
    struct lx_kernel *k = lx_kernel_new();
    struct hv_err err = {0};
    assert_int_equal(lx_kernel_discover(k, &m.mem, &err), -1);
    if (!strstr(err.msg, words))
        fail_msg("expected '%s' in: %s", words, err.msg);
    assert_int_equal(k->syms.n, 0);
    lx_kernel_free(k);
    free(m.ram);
}

static void spoil_marker(struct img *m)
{
    uint32_t v;
    memcpy(&v, at(m, m->markers + 4), 4);
    v += 1; /* block 1 no longer starts where the names say */
    memcpy(at(m, m->markers + 4), &v, 4);
}
static void spoil_index(struct img *m)
{
    uint16_t v = 7; /* token 0x41 no longer where the table has it */
    memcpy(at(m, m->index + 0x41 * 2), &v, 2);
}
static void spoil_count(struct img *m)
{
    uint32_t v = NFN + 2 + 256; /* four blocks, three markers */
    memcpy(at(m, m->num), &v, 4);
}
static void spoil_token_byte(struct img *m)
{
    uint16_t off;
    memcpy(&off, at(m, m->index + 0x41 * 2), 2);
    at(m, m->table + off)[0] = 0x01; /* "A" becomes a control byte */
}

static void test_forged(void **state)
{
    (void)state;
    expect_failure(spoil_marker, "no names and markers before it that agree");
    expect_failure(spoil_count, "no names and markers before it that agree");
    expect_failure(spoil_index, "no token table");
    expect_failure(spoil_token_byte, "no token table");
}

/* A guest may plant the digit run anywhere: a hundred decoys before the tables are passed over;
 * a flood of them (here every 20 bytes of 8 MiB of code) makes the search give up after 4096
 * candidates with a message, not spend the drain thread's time. */
static void plant_decoys(struct img *m, size_t count)
{
    for (size_t i = 0; i < count; i++)
        memcpy(at(m, TEXT + 0x10000 + 20 * i),
               "0\0"
               "1\0"
               "2\0"
               "3\0"
               "4\0"
               "5\0"
               "6\0"
               "7\0"
               "8\0"
               "9",
               20);
}
static void spoil_hundred_decoys(struct img *m)
{
    plant_decoys(m, 100);
}
static void spoil_flood(struct img *m)
{
    plant_decoys(m, (8u << 20) / 20);
}

static void test_decoys(void **state)
{
    (void)state;
    struct img m;
    build(&m);
    spoil_hundred_decoys(&m);
    struct lx_kernel *k = lx_kernel_new();
    struct hv_err err = {0};
    if (lx_kernel_discover(k, &m.mem, &err) != 1)
        fail_msg("%s", err.msg);
    assert_int_equal(k->ks_loc.token_table, m.table);
    lx_kernel_free(k);
    free(m.ram);
    expect_failure(spoil_flood, "gave up after 4097 candidates");
}

/* The finder alone, over a range that ends before the tables: nothing found, clearly said. */
static void test_range(void **state)
{
    (void)state;
    struct img m;
    build(&m);
    struct lx_kimage k = {.mem = &m.mem, .phys_base = PHYS_BASE, .image_size = 1ull << 30};
    struct lx_kallsyms_loc loc;
    struct hv_err err = {0};
    assert_int_equal(lx_kallsyms_find(&k, TEXT, m.table, &loc, &err), -1);
    assert_non_null(strstr(err.msg, "no token table"));
    assert_int_equal(lx_kallsyms_find(&k, m.table - 0x30, TEXT + 0x2000000, &loc, &err), 0);
    assert_int_equal(loc.names, m.names);
    free(m.ram);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_found_and_decoded),
        cmocka_unit_test(test_forged),
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_decoys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
