/* The recorder's small parts, each pinned to exact values: the metadata budget
 * (sampler/parts/meta_budget.c) and the symbol batches written into symbol records
 * (sampler/parts/symbol_batch.c), read back with the schema's decoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/files.h"
#include "fxt/reader.h"
#include "sampler/parts/meta_budget.h"
#include "sampler/parts/symbol_batch.h"
#include "schema/decode.h"
#include "schema/recording.h"

/* Budget arithmetic on a writer's word count: metadata = written - not metadata; symbols may use
 * 7/8 of it, one table 1/share; structural records the rest, and what is refused is counted. */
static void test_meta_budget(void **state)
{
    (void)state;
    struct fxt_writer w;
    memset(&w, 0, sizeof(w));
    struct meta_budget b = {.max = 8000, .w = &w};
    assert_int_equal(meta_budget_used(&b), 0);
    assert_int_equal(meta_budget_symbols_left(&b), 7000);
    assert_int_equal(meta_budget_table_left(&b, 16), 500);
    w.words_written = 500; /* 4000 bytes, 1000 of them samples */
    b.not_meta = 1000;
    assert_int_equal(meta_budget_used(&b), 3000);
    assert_int_equal(meta_budget_symbols_left(&b), 4000);
    assert_true(meta_budget_allows(&b, 5000));
    assert_false(meta_budget_allows(&b, 5001));
    assert_int_equal(b.cut_records, 1);
    w.words_written = 1000; /* 7000 bytes of metadata: symbols are out, structure is not */
    assert_int_equal(meta_budget_symbols_left(&b), 0);
    assert_int_equal(meta_budget_table_left(&b, 16), 0);
    assert_true(meta_budget_allows(&b, 1000));
    /* No writer: no budget. */
    struct meta_budget none = {0};
    assert_int_equal(meta_budget_symbols_left(&none), UINT64_MAX);
    assert_true(meta_budget_allows(&none, UINT64_MAX / 2));
    assert_int_equal(META_SYMBOL_COST(10), 50);
}

static int add(struct symbol_batch *b, uint64_t addr, uint64_t size, char type, const char *name)
{
    struct guestos_symbol s = {
        .addr = addr, .size = size, .type = type, .name = name, .name_len = strlen(name)};
    return symbol_batch_add(b, &s);
}

/* Collected out of order, relative to the base, sorted at write, with an end marker where a
 * known size ends before the next symbol and one at the end given; read back exactly. */
static void test_symbol_batch(void **state)
{
    (void)state;
    char path[] = "/tmp/hvprof-batch-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct hv_err err = {0};
    struct fxt_writer w;
    assert_int_equal(hvfxt_recording_open(&w, path, 1000000000ull, 1, "guest", &err), 0);
    struct symbol_batch b = {.base = 0x1000};
    assert_int_equal(add(&b, 0x1300, 0x10, 'T', "third"), 0);
    assert_int_equal(add(&b, 0x1100, 0, 't', "first"), 0);
    assert_int_equal(add(&b, 0x1200, 0x40, 'T', "second"), 0);
    assert_int_equal(add(&b, 0x0800, 0, 'T', "below_base"), 0); /* left out */
    assert_int_equal(add(&b, 0x1400, 0, 'T', ""), 0);           /* nameless: left out */
    assert_int_equal(b.n, 3);
    assert_false(b.oom || b.cut);
    assert_int_equal(symbol_batch_write(&b, &w, 7, 0x400, &err), 0);
    symbol_batch_free(&b);
    assert_int_equal(fxt_writer_close(&w, &err), 0);

    /* What the records say, in order: first, second (ends at 0x240 before third at 0x300: an
     * end marker), third (ends at 0x310, before the module's end 0x400: a marker), the end. */
    const struct {
        uint64_t addr;
        char type;
        const char *name;
    } want[] = {{0x100, 't', "first"}, {0x200, 'T', "second"}, {0x240, 0, ""},
                {0x300, 'T', "third"}, {0x310, 0, ""},         {0x400, 0, ""}};
    uint8_t *data;
    size_t len;
    assert_int_equal(hv_read_file(path, 1 << 20, &data, &len, &err), 0);
    struct fxtr_reader r;
    fxtr_init(&r, (const uint64_t *)data, len);
    struct hvfxt_record x;
    size_t k = 0;
    int rc;
    while ((rc = hvfxt_next(&r, &x, &err)) == 1) {
        if (x.kind != HVFXT_REC_SYMBOLS)
            continue;
        assert_int_equal(x.u.symbols.module_id, 7);
        uint32_t i = 0, pos = 0;
        uint64_t addr;
        char type;
        const char *name;
        size_t nlen;
        while (hvfxt_symbols_next(&x.u.symbols, &i, &pos, &addr, &type, &name, &nlen)) {
            assert_true(k < sizeof(want) / sizeof(want[0]));
            assert_int_equal(addr, want[k].addr);
            assert_int_equal(type, want[k].type);
            assert_int_equal(nlen, strlen(want[k].name));
            assert_memory_equal(name, want[k].name, nlen);
            k++;
        }
    }
    assert_int_equal(rc, 0);
    assert_int_equal(k, sizeof(want) / sizeof(want[0]));
    fxtr_free(&r);
    free(data);
    unlink(path);
}

/* A batch over its byte limit stops the reader and says it was cut. */
static void test_symbol_batch_cut(void **state)
{
    (void)state;
    struct symbol_batch b = {.max_bytes = 2 * META_SYMBOL_COST(5)};
    assert_int_equal(add(&b, 0x10, 0, 'T', "aaaaa"), 0);
    assert_int_equal(add(&b, 0x20, 0, 'T', "bbbbb"), 0);
    assert_int_equal(add(&b, 0x30, 0, 'T', "ccccc"), 1);
    assert_true(b.cut);
    assert_int_equal(b.n, 2);
    assert_int_equal(b.bytes, 2 * META_SYMBOL_COST(5));
    symbol_batch_free(&b);
    assert_int_equal(b.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meta_budget),
        cmocka_unit_test(test_symbol_batch),
        cmocka_unit_test(test_symbol_batch_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
