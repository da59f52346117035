/* GDT descriptors, their kvm_segment form, the identity page tables and the BSP entry state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/boot/cpu_state.h"
#include "vmm/boot/gdt.h"
#include "vmm/boot/layout.h"
#include "vmm/boot/pagetable.h"
#include "vmm/boot/tests/fixture.h"

static void test_gdt_quadwords(void **state)
{
    /* The values every 64-bit-entry VMM uses (boot.rst "64-bit Boot Protocol"). */
    assert_int_equal(gdt_entry(GDT_FLAGS_CODE64, 0, 0xfffff), 0x00af9b000000ffffull);
    assert_int_equal(gdt_entry(GDT_FLAGS_DATA, 0, 0xfffff), 0x00cf93000000ffffull);
    /* Base and limit bits land in their split fields. */
    assert_int_equal(gdt_entry(0x0089, 0x12345678, 0xabcde), 0x120a89345678bcdeull);

    uint64_t t[BOOT_GDT_QWORDS];
    gdt_boot_table(t);
    assert_int_equal(t[0], 0);
    assert_int_equal(t[1], 0);
    assert_int_equal(t[2], 0x00af9b000000ffffull);
    assert_int_equal(t[3], 0x00cf93000000ffffull);
    assert_int_equal(t[4], 0x00008b0000000067ull);
    assert_int_equal(t[5], 0);
}

static void test_gdt_to_kvm_segment(void **state)
{
    struct kvm_segment cs = gdt_to_kvm_segment(0x00af9b000000ffffull, 0x10);
    assert_int_equal(cs.selector, 0x10);
    assert_int_equal(cs.base, 0);
    assert_int_equal(cs.limit, 0xffffffffu);
    assert_int_equal(cs.type, 0xb);
    assert_int_equal(cs.present, 1);
    assert_int_equal(cs.dpl, 0);
    assert_int_equal(cs.s, 1);
    assert_int_equal(cs.l, 1);
    assert_int_equal(cs.db, 0);
    assert_int_equal(cs.g, 1);
    assert_int_equal(cs.unusable, 0);

    struct kvm_segment ds = gdt_to_kvm_segment(0x00cf93000000ffffull, 0x18);
    assert_int_equal(ds.type, 3);
    assert_int_equal(ds.db, 1);
    assert_int_equal(ds.l, 0);
    assert_int_equal(ds.limit, 0xffffffffu);

    struct kvm_segment tr = gdt_to_kvm_segment(0x00008b0000000067ull, 0x20);
    assert_int_equal(tr.type, 0xb);
    assert_int_equal(tr.s, 0);
    assert_int_equal(tr.g, 0);
    assert_int_equal(tr.limit, 0x67);

    struct kvm_segment odd = gdt_to_kvm_segment(0x120a89345678bcdeull, 0x28);
    assert_int_equal(odd.base, 0x12345678);
    assert_int_equal(odd.limit, 0xabcde);

    assert_int_equal(gdt_to_kvm_segment(0, 0).unusable, 1);
}

static void test_gdt_in_memory(void **state)
{
    struct test_ram r;
    struct hv_err err = {0};
    test_ram_init(&r, 16 << 20);
    assert_int_equal(gdt_write(&r.gmem, &err), 0);
    uint64_t q[BOOT_GDT_QWORDS];
    memcpy(q, test_ram_at(&r, 0x500, sizeof(q)), sizeof(q));
    assert_int_equal(q[2], 0x00af9b000000ffffull);
    assert_int_equal(q[3], 0x00cf93000000ffffull);
    test_ram_free(&r);
}

/* Walk the tables as the MMU would (SDM Vol. 3A 4.5) and return the physical address. */
static uint64_t walk(struct test_ram *r, uint64_t cr3, uint64_t va)
{
    uint64_t e;
    memcpy(&e, test_ram_at(r, cr3 + ((va >> 39) & 511) * 8, 8), 8);
    assert_true(e & PT_PRESENT);
    memcpy(&e, test_ram_at(r, (e & ~0xfffull) + ((va >> 30) & 511) * 8, 8), 8);
    assert_true(e & PT_PRESENT);
    assert_false(e & PT_PS);
    memcpy(&e, test_ram_at(r, (e & ~0xfffull) + ((va >> 21) & 511) * 8, 8), 8);
    assert_true(e & PT_PRESENT);
    assert_true(e & PT_WRITE);
    assert_true(e & PT_PS);
    return (e & ~0x1fffffull & 0x000fffffffffffffull) | (va & 0x1fffff);
}

static void test_page_tables(void **state)
{
    struct test_ram r;
    struct hv_err err = {0};
    test_ram_init(&r, 16 << 20);
    memset(test_ram_at(&r, 0x1000, 0x6000), 0xaa, 0x6000); /* stale junk must be cleared */
    assert_int_equal(pt_identity_write(&r.gmem, &err), 0);

    uint64_t e;
    memcpy(&e, test_ram_at(&r, 0x1000, 8), 8);
    assert_int_equal(e, 0x2003);
    memcpy(&e, test_ram_at(&r, 0x1008, 8), 8);
    assert_int_equal(e, 0);
    for (unsigned i = 0; i < 4; i++) {
        memcpy(&e, test_ram_at(&r, 0x2000 + i * 8, 8), 8);
        assert_int_equal(e, (0x3000 + i * 0x1000) | 3);
    }
    memcpy(&e, test_ram_at(&r, 0x2020, 8), 8);
    assert_int_equal(e, 0);
    memcpy(&e, test_ram_at(&r, 0x3000, 8), 8);
    assert_int_equal(e, 0x83);
    memcpy(&e, test_ram_at(&r, 0x3008, 8), 8);
    assert_int_equal(e, 0x200083);
    memcpy(&e, test_ram_at(&r, 0x6ff8, 8), 8); /* last 2 MiB page below 4 GiB */
    assert_int_equal(e, 0xffe00083ull);

    const uint64_t probes[] = {0,          0x7000,     0x100000,   0x1234567,
                               0xbfffffff, 0xfec00000, 0xfee00300, 0xffffffff};
    for (unsigned i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
        assert_int_equal(walk(&r, HVPROF_LOW_PML4, probes[i]), probes[i]);
    test_ram_free(&r);
}

static void test_entry_state(void **state)
{
    struct boot_entry b;
    memset(&b, 0x55, sizeof(b));
    boot_cpu_state(&b, 0x100200, 0x7000);
    assert_int_equal(b.regs.rip, 0x100200);
    assert_int_equal(b.entry, 0x100200);
    assert_int_equal(b.regs.rsi, 0x7000);
    assert_int_equal(b.regs.rsp, 0xc000);
    assert_int_equal(b.regs.rflags, 2);
    assert_int_equal(b.regs.rax, 0);
    assert_int_equal(b.sregs.cs.selector, 0x10);
    assert_int_equal(b.sregs.cs.l, 1);
    assert_int_equal(b.sregs.ds.selector, 0x18);
    assert_int_equal(b.sregs.ss.selector, 0x18);
    assert_int_equal(b.sregs.es.selector, 0x18);
    assert_int_equal(b.sregs.fs.selector, 0x18);
    assert_int_equal(b.sregs.gs.selector, 0x18);
    assert_int_equal(b.sregs.tr.selector, 0x20);
    assert_int_equal(b.sregs.tr.type, 0xb);
    assert_int_equal(b.sregs.gdt.base, 0x500);
    assert_int_equal(b.sregs.gdt.limit, 0x2f);
    assert_int_equal(b.sregs.cr3, 0x1000);
    assert_int_equal(b.sregs.cr0 & 0x80000001u, 0x80000001u);
    assert_int_equal(b.sregs.cr4 & 0x20, 0x20);
    assert_int_equal(b.sregs.efer, 0x500);
    assert_int_equal(b.sregs.apic_base, 0);

    struct kvm_sregs kvm;
    memset(&kvm, 0, sizeof(kvm));
    kvm.apic_base = 0xfee00900;
    kvm.interrupt_bitmap[1] = 42;
    kvm.cr8 = 3;
    boot_apply_sregs(&kvm, &b.sregs);
    assert_int_equal(kvm.apic_base, 0xfee00900);
    assert_int_equal(kvm.interrupt_bitmap[1], 42);
    assert_int_equal(kvm.cr8, 3);
    assert_int_equal(kvm.cr3, 0x1000);
    assert_int_equal(kvm.cs.selector, 0x10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gdt_quadwords), cmocka_unit_test(test_gdt_to_kvm_segment),
        cmocka_unit_test(test_gdt_in_memory), cmocka_unit_test(test_page_tables),
        cmocka_unit_test(test_entry_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
