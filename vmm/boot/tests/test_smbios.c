/* SMBIOS: the entry point found the way Linux's dmi_scan does (16-byte aligned "_SM3_" with a
 * valid checksum), and the structure table walked to its End-of-Table with every string. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/boot/smbios.h"
#include "vmm/boot/tests/fixture.h"

static uint8_t sum(const uint8_t *p, size_t n)
{
    uint8_t s = 0;
    while (n--)
        s += *p++;
    return s;
}

/* String `n` (1-based) of the structure at p. */
static const char *str(const uint8_t *p, unsigned n)
{
    const char *s = (const char *)p + p[1];
    while (--n)
        s += strlen(s) + 1;
    return s;
}

static void test_smbios_tables(void **state)
{
    (void)state;
    uint8_t buf[4096];
    size_t len;
    struct hv_err err = {0};
    assert_int_equal(smbios_build(buf, sizeof(buf), 0xf8000, &len, &err), 0);
    assert_memory_equal(buf, "_SM3_", 5);
    assert_int_equal(buf[6], 0x18);
    assert_int_equal(sum(buf, 0x18), 0);
    uint32_t max;
    uint64_t addr;
    memcpy(&max, buf + 0x0c, 4);
    memcpy(&addr, buf + 0x10, 8);
    assert_int_equal(addr, 0xf8000 + 0x18);
    assert_int_equal(0x18 + max, len);

    const uint8_t *p = buf + 0x18, *end = p + max;
    unsigned types[8], n = 0;
    while (p < end && n < 8) {
        types[n++] = p[0];
        if (p[0] == 0) {
            assert_string_equal(str(p, p[4]), "hvprof");
            assert_true(p[0x13] & 0x10); /* virtual machine */
        } else if (p[0] == 1) {
            assert_string_equal(str(p, p[4]), "hvprof");
            assert_string_equal(str(p, p[5]), "hvprof VM");
        }
        const uint8_t *q = p + p[1];
        while (q + 1 < end && (q[0] || q[1])) /* strings end with two NULs */
            q++;
        p = q + 2;
    }
    assert_int_equal(n, 3);
    assert_int_equal(types[0], 0);
    assert_int_equal(types[1], 1);
    assert_int_equal(types[2], 127);
    assert_ptr_equal(p, end);
}

static void test_smbios_in_guest(void **state)
{
    (void)state;
    struct test_ram r;
    test_ram_init(&r, 64 * 1024 * 1024);
    struct hv_err err = {0};
    assert_int_equal(smbios_write(&r.gmem, &err), 0);
    assert_memory_equal(test_ram_at(&r, SMBIOS_GPA, 5), "_SM3_", 5);
    assert_int_equal(SMBIOS_GPA % 16, 0);
    test_ram_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smbios_tables),
        cmocka_unit_test(test_smbios_in_guest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
