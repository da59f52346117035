/* MP table: checksums, entry counts and contents (Intel MP spec 1.4, chapter 4). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/boot/mptable.h"
#include "vmm/boot/tests/fixture.h"

/* Parse the table the way Linux's mpparse does and check every entry. */
static void check_table(const uint8_t *base, uint32_t gpa, unsigned nr_cpus)
{
    struct mp_floating fp;
    memcpy(&fp, base, sizeof(fp));
    assert_memory_equal(fp.signature, "_MP_", 4);
    assert_int_equal(fp.length, 1);
    assert_int_equal(fp.spec_rev, 4);
    assert_int_equal(mp_sum(base, 16), 0);
    assert_int_equal(fp.feature[0], 0); /* 0: a configuration table is present */
    assert_int_equal(fp.physptr, gpa + 16);

    const uint8_t *ct = base + (fp.physptr - gpa);
    struct mp_config c;
    memcpy(&c, ct, sizeof(c));
    assert_memory_equal(c.signature, "PCMP", 4);
    assert_int_equal(c.spec_rev, 4);
    assert_int_equal(mp_sum(ct, c.length), 0);
    assert_int_equal(c.lapic, 0xfee00000u);
    assert_int_equal(c.entry_count, nr_cpus + 1 + 1 + 16 + 2);
    assert_int_equal(c.length, 44 + 20 * nr_cpus + 8 + 8 + 16 * 8 + 2 * 8);
    assert_int_equal(16 + c.length, mptable_size(nr_cpus));

    const uint8_t *p = ct + sizeof(c);
    unsigned cpus = 0, buses = 0, ioapics = 0, intsrc = 0, lint = 0;
    uint8_t ioapic_id = 0xff;
    uint16_t irq_seen = 0;
    for (unsigned i = 0; i < c.entry_count; i++) {
        switch (p[0]) {
        case MP_ENT_PROCESSOR: {
            struct mp_processor cpu;
            memcpy(&cpu, p, sizeof(cpu));
            assert_int_equal(cpu.apic_id, cpus);
            assert_int_equal(cpu.flags & 1, 1);
            assert_int_equal(!!(cpu.flags & 2), cpus == 0);
            assert_int_equal(cpu.apic_version, 0x14);
            cpus++;
            p += sizeof(cpu);
            break;
        }
        case MP_ENT_BUS: {
            struct mp_bus bus;
            memcpy(&bus, p, sizeof(bus));
            assert_memory_equal(bus.bus_type, "ISA   ", 6);
            assert_int_equal(bus.bus_id, MP_ISA_BUS_ID);
            buses++;
            p += sizeof(bus);
            break;
        }
        case MP_ENT_IOAPIC: {
            struct mp_ioapic io;
            memcpy(&io, p, sizeof(io));
            assert_int_equal(io.apic_id, nr_cpus);
            assert_int_equal(io.addr, 0xfec00000u);
            assert_int_equal(io.flags, 1);
            ioapic_id = io.apic_id;
            ioapics++;
            p += sizeof(io);
            break;
        }
        case MP_ENT_INTSRC: {
            struct mp_intsrc s;
            memcpy(&s, p, sizeof(s));
            assert_int_equal(s.irq_type, MP_INT);
            assert_int_equal(s.src_bus, MP_ISA_BUS_ID);
            assert_int_equal(s.dst_apic, ioapic_id);
            assert_true(s.src_irq < 16);
            /* KVM's default routing: GSI n -> IOAPIC pin n, IRQ 0 included. */
            assert_int_equal(s.dst_pin, s.src_irq);
            irq_seen |= (uint16_t)(1u << s.src_irq);
            intsrc++;
            p += sizeof(s);
            break;
        }
        case MP_ENT_LINTSRC: {
            struct mp_intsrc s;
            memcpy(&s, p, sizeof(s));
            assert_int_equal(s.dst_apic, 0xff);
            if (s.dst_pin == 0)
                assert_int_equal(s.irq_type, MP_EXTINT);
            else
                assert_int_equal(s.irq_type, MP_NMI);
            lint++;
            p += sizeof(s);
            break;
        }
        default:
            fail_msg("unknown MP entry type %u", p[0]);
        }
    }
    assert_int_equal(p - ct, c.length);
    assert_int_equal(cpus, nr_cpus);
    assert_int_equal(buses, 1);
    assert_int_equal(ioapics, 1);
    assert_int_equal(intsrc, 16);
    assert_int_equal(irq_seen, 0xffff);
    assert_int_equal(lint, 2);
}

static void test_mptable_cpu_counts(void **state)
{
    const unsigned counts[] = {1, 2, 4, 40};
    for (unsigned k = 0; k < 4; k++) {
        uint8_t buf[1024];
        size_t len;
        struct hv_err err = {0};
        assert_int_equal(mptable_build(buf, sizeof(buf), 0x9fc00, counts[k], &len, &err), 0);
        assert_int_equal(len, mptable_size(counts[k]));
        check_table(buf, 0x9fc00, counts[k]);
    }
}

static void test_mptable_limits(void **state)
{
    uint8_t buf[1024];
    size_t len;
    struct hv_err err = {0};
    assert_int_equal(mptable_build(buf, sizeof(buf), 0x9fc00, 0, &len, &err), -1);
    assert_int_equal(mptable_build(buf, sizeof(buf), 0x9fc00, 41, &len, &err), -1);
    assert_non_null(strstr(err.msg, "needs"));
    assert_int_equal(mptable_build(buf, sizeof(buf), 0x9fc00, 255, &len, &err), -1);
}

static void test_mptable_in_guest(void **state)
{
    struct test_ram r;
    struct hv_err err = {0};
    test_ram_init(&r, 32 << 20);
    memset(test_ram_at(&r, 0x9fc00, 0x400), 0x77, 0x400);
    assert_int_equal(mptable_write(&r.gmem, 3, &err), 0);
    check_table(test_ram_at(&r, 0x9fc00, 0x400), 0x9fc00, 3);
    /* Nothing past 0xa0000 is touched: it is not RAM in the e820. */
    assert_int_equal(mptable_size(3) <= 0x400, 1);
    test_ram_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mptable_cpu_counts),
        cmocka_unit_test(test_mptable_limits),
        cmocka_unit_test(test_mptable_in_guest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
