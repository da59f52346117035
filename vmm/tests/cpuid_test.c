/* The CPUID each vCPU gets (vmm/cpu_setup.h, cpu_cpuid_for_vcpu): from a host table that says
 * "2 CPUs" (as the test bed's outer VM does), every topology leaf must describe one socket of N
 * single-threaded cores with this vCPU's APIC ID, for N = 1, 4, 64 and 300. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/cpu_setup.h"

static struct kvm_cpuid2 *host_table(void)
{
    /* A 2-CPU host's values, Intel and AMD leaves together (KVM passes what the host has). */
    static const struct kvm_cpuid_entry2 e[] = {
        {.function = 1, .eax = 0x800f12, .ebx = 0x01020800, .ecx = 0x7ed8320b, .edx = 0x178bfbff},
        {.function = 4, .index = 0, .eax = 0x04000121}, /* L1d, shared by 1 */
        {.function = 4, .index = 1, .eax = 0x04004163}, /* L3, shared by 2 */
        {.function = 4, .index = 2, .eax = 0},          /* end */
        {.function = 6, .ecx = 0x9},
        {.function = 0xa, .eax = 0x07300403},
        {.function = 0xb, .index = 0, .eax = 1, .ebx = 2, .ecx = 0x100, .edx = 1},
        {.function = 0xb, .index = 1, .eax = 1, .ebx = 2, .ecx = 0x201, .edx = 1},
        {.function = 0xb, .index = 2, .eax = 0, .ebx = 0, .ecx = 2, .edx = 1},
        {.function = 0x80000002, .eax = 0},
        {.function = 0x80000008, .eax = 0x3030, .ecx = 0x00011001}, /* NC 1, size 1 */
        {.function = 0x8000001e, .eax = 1, .ebx = 0x100, .ecx = 0x100},
    };
    size_t n = sizeof(e) / sizeof(e[0]);
    struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(e[0]));
    c->nent = (uint32_t)n;
    memcpy(c->entries, e, sizeof(e));
    return c;
}

static const struct kvm_cpuid_entry2 *leaf(const struct kvm_cpuid2 *c, uint32_t fn, uint32_t idx)
{
    for (unsigned i = 0; i < c->nent; i++)
        if (c->entries[i].function == fn && c->entries[i].index == idx)
            return &c->entries[i];
    fail_msg("no leaf %x.%u", fn, idx);
    return NULL;
}

static void check(unsigned n)
{
    struct kvm_cpuid2 *host = host_table();
    unsigned bits = 0;
    while ((1u << bits) < n)
        bits++;
    for (unsigned id = 0; id < n; id += (n > 8 ? n / 4 : 1)) {
        struct hv_err err = {0};
        struct kvm_cpuid2 *c = cpu_cpuid_for_vcpu(host, id, n, &err);
        assert_non_null(c);
        const struct kvm_cpuid_entry2 *l1 = leaf(c, 1, 0);
        assert_int_equal(l1->ebx >> 24, id & 0xff);
        assert_int_equal((l1->ebx >> 16) & 0xff, n > 255 ? 255 : n);
        assert_int_equal(!!(l1->edx & (1u << 28)), n > 1);
        assert_true(l1->ecx & (1u << 31));          /* hypervisor */
        assert_int_equal(l1->ebx & 0xffff, 0x0800); /* CLFLUSH size kept */
        assert_int_equal(leaf(c, 4, 0)->eax >> 26, (n > 64 ? 64 : n) - 1);
        assert_int_equal((leaf(c, 4, 0)->eax >> 14) & 0xfff, 0);     /* L1d: one core */
        assert_int_equal((leaf(c, 4, 1)->eax >> 14) & 0xfff, n - 1); /* L3: the package */
        assert_int_equal(leaf(c, 4, 2)->eax, 0);
        assert_int_equal(leaf(c, 6, 0)->ecx & 0x8, 0);
        assert_int_equal(leaf(c, 0xa, 0)->eax, 0);
        const struct kvm_cpuid_entry2 *smt = leaf(c, 0xb, 0), *core = leaf(c, 0xb, 1);
        assert_int_equal(smt->eax, 0);
        assert_int_equal(smt->ebx, 1);
        assert_int_equal(smt->ecx, 0x100);
        assert_int_equal(core->eax, bits);
        assert_int_equal(core->ebx, n);
        assert_int_equal(core->ecx, 0x201);
        assert_int_equal(core->edx, id);
        assert_int_equal(leaf(c, 0xb, 2)->ecx, 2);
        const struct kvm_cpuid_entry2 *amd = leaf(c, 0x80000008, 0);
        assert_int_equal(amd->ecx & 0xff, (n > 256 ? 256 : n) - 1);
        assert_int_equal((amd->ecx >> 12) & 0xf, bits);
        assert_int_equal(amd->ecx & 0x10000, 0x10000); /* other fields kept */
        assert_int_equal(leaf(c, 0x8000001e, 0)->eax, id);
        assert_int_equal(leaf(c, 0x8000001e, 0)->ebx, id & 0xff);
        assert_true(leaf(c, 0x80000002, 0)->eax != 0); /* the host's brand string */
        free(c);
    }
    free(host);
}

static void test_topology(void **state)
{
    (void)state;
    check(1);
    check(4);
    check(64);
    check(300);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_topology)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
