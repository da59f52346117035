/* schema/sample_fields.h is the one table of the sample's fields: it must say what the normative
 * description says (docs/fxt-samples.md, the field table: bit, mask, name, words), and what it
 * generates must agree with it (the enum, the known mask, the count). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/files.h"
#include "schema/schema.h"

static void test_generated(void **state)
{
    (void)state;
    assert_int_equal(HVFXT_SF_COUNT, 18);
    assert_int_equal(HVFXT_SF_KNOWN, 0x3ffff);
    assert_int_equal(HVFXT_SF_CONTINUATION, 1);
    assert_int_equal(HVFXT_SF_WALK, 0x400);
    assert_int_equal(HVFXT_SF_EXIT, 0x800);
    assert_int_equal(HVFXT_SF_EXIT_NS, 0x1000);
    assert_int_equal(HVFXT_SF_OFF_CPU_NS, 0x2000);
    assert_int_equal(HVFXT_SF_TASK_STATE, 0x4000);
    assert_int_equal(HVFXT_SF_PYTHON_STACK, 0x8000);
    assert_int_equal(HVFXT_SF_RUNTIME_STACK, 0x10000);
    assert_int_equal(HVFXT_SF_CGROUP, 0x20000);
    uint32_t all = 0;
    for (int i = 0; i < HVFXT_SF_COUNT; i++) {
        const struct hvfxt_sample_field_info *f = &hvfxt_sample_fields[i];
        assert_int_equal(f->bit, (unsigned)i); /* bit order is record order */
        all |= 1u << f->bit;
        assert_true(f->label[0] && f->wire[0]);
    }
    assert_int_equal(all, HVFXT_SF_KNOWN);
}

/* Each row "| bit | `0xMASK` | name | words | ..." of docs/fxt-samples.md's table. */
static void test_matches_docs(void **state)
{
    (void)state;
    const char *src = getenv("HVPROF_SOURCE_DIR");
    assert_non_null(src);
    char path[4096];
    snprintf(path, sizeof(path), "%s/docs/fxt-samples.md", src);
    uint8_t *doc;
    size_t len;
    struct hv_err err;
    if (hv_read_file(path, 1 << 20, &doc, &len, &err) < 0)
        fail_msg("%s", err.msg);
    unsigned rows = 0;
    for (char *line = (char *)doc; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        unsigned bit, mask;
        char name[64], words[16];
        if (sscanf(line, "| %u | `0x%x` | %63s | %15[^|]|", &bit, &mask, name, words) != 4)
            continue;
        assert_true(bit < (unsigned)HVFXT_SF_COUNT);
        const struct hvfxt_sample_field_info *f = &hvfxt_sample_fields[bit];
        assert_int_equal(mask, 1u << f->bit);
        assert_string_equal(name, f->wire);
        bool stack = strstr(words, "n") != NULL;
        assert_int_equal(stack, f->shape == HVFXT_SF_SHAPE_STACK);
        rows++;
    }
    assert_int_equal(rows, HVFXT_SF_COUNT);
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generated),
        cmocka_unit_test(test_matches_docs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
