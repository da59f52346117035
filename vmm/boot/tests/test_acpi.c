/* ACPI tables: walked the way a guest's ACPICA does (RSDP -> XSDT -> tables), every checksum and
 * every field the VMM sets pinned to its ACPI 6.5 offset, for 1, 64, 254, 255 and 300 vCPUs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmm/boot/acpi.h"
#include "vmm/boot/tests/fixture.h"

static uint16_t r16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t r32(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t r64(const uint8_t *p)
{
    return r32(p) | (uint64_t)r32(p + 4) << 32;
}

struct tables {
    const uint8_t *buf;
    uint64_t base;
    size_t len;
};

/* The table at guest-physical gpa, after checking it lies in the buffer and sums to 0. */
static const uint8_t *table_at(const struct tables *t, uint64_t gpa, const char sig[4])
{
    assert_true(gpa >= t->base && gpa - t->base + 36 <= t->len);
    const uint8_t *p = t->buf + (gpa - t->base);
    assert_memory_equal(p, sig, 4);
    uint32_t len = r32(p + 4);
    assert_true(gpa - t->base + len <= t->len);
    assert_int_equal(acpi_sum(p, len), 0);
    assert_memory_equal(p + 10, "HVPROF", 6);
    return p;
}

/* Walk MADT entries; return counts by type and check APIC ids are 0..n-1 in order. */
static void check_madt(const uint8_t *m, unsigned nr_cpus)
{
    uint32_t len = r32(m + 4);
    assert_int_equal(m[8], 5); /* MADT revision (ACPI 6.x) */
    assert_int_equal(r32(m + 36), 0xfee00000u);
    assert_int_equal(r32(m + 40), 1); /* PCAT_COMPAT */
    unsigned next_id = 0, ioapics = 0, nmis = 0, x2nmis = 0, isos = 0;
    for (uint32_t off = 44; off < len;) {
        const uint8_t *e = m + off;
        assert_true(e[1] >= 2 && off + e[1] <= len);
        switch (e[0]) {
        case 0: /* Processor Local APIC */
            assert_int_equal(e[1], 8);
            assert_int_equal(e[2], next_id); /* processor UID */
            assert_int_equal(e[3], next_id); /* APIC ID */
            assert_int_equal(r32(e + 4), 1);
            assert_true(next_id < 255);
            next_id++;
            break;
        case 9: /* Processor Local x2APIC */
            assert_int_equal(e[1], 16);
            assert_int_equal(r32(e + 4), next_id);
            assert_int_equal(r32(e + 8), 1);
            assert_int_equal(r32(e + 12), next_id);
            assert_true(next_id >= 255);
            next_id++;
            break;
        case 1: /* I/O APIC */
            assert_int_equal(e[1], 12);
            assert_int_equal(r32(e + 4), 0xfec00000u);
            assert_int_equal(r32(e + 8), 0);
            ioapics++;
            break;
        case 2: /* Interrupt Source Override: the SCI, IRQ 9 -> GSI 9, level, active high */
            assert_int_equal(e[1], 10);
            assert_int_equal(e[2], 0);
            assert_int_equal(e[3], 9);
            assert_int_equal(r32(e + 4), 9);
            assert_int_equal(r16(e + 8), 0xd);
            isos++;
            break;
        case 4: /* Local APIC NMI: all processors, LINT1 */
            assert_int_equal(e[1], 6);
            assert_int_equal(e[2], 0xff);
            assert_int_equal(e[5], 1);
            nmis++;
            break;
        case 0xa: /* Local x2APIC NMI */
            assert_int_equal(e[1], 12);
            assert_int_equal(r32(e + 4), 0xffffffffu);
            assert_int_equal(e[8], 1);
            x2nmis++;
            break;
        default:
            fail_msg("unexpected MADT entry type %u", e[0]);
        }
        off += e[1];
    }
    assert_int_equal(next_id, nr_cpus);
    assert_int_equal(ioapics, 1);
    assert_int_equal(isos, 1);
    assert_int_equal(nmis, 1);
    assert_int_equal(x2nmis, nr_cpus > 255 ? 1 : 0);
}

static void check_fadt(const struct tables *t, const uint8_t *f)
{
    assert_int_equal(r32(f + 4), 276); /* revision 6 length */
    assert_int_equal(f[8], 6);
    assert_int_equal(f[131], 5); /* minor version */
    uint32_t flags = r32(f + 112);
    assert_false(flags & (1u << 20));     /* not HW_REDUCED_ACPI: legacy IRQs keep their mapping */
    assert_true(flags & (1u << 10));      /* RESET_REG_SUP */
    assert_int_equal(r16(f + 46), 9);     /* SCI_INT */
    assert_int_equal(r32(f + 48), 0);     /* SMI_CMD: always in ACPI mode */
    assert_int_equal(r32(f + 56), 0x600); /* PM1a_EVT_BLK */
    assert_int_equal(r32(f + 64), 0x604); /* PM1a_CNT_BLK */
    assert_int_equal(r32(f + 76), 0x608); /* PM_TMR_BLK */
    assert_int_equal(f[88], 4);
    assert_int_equal(f[89], 2);
    assert_int_equal(f[91], 4);
    assert_int_equal(r64(f + 148 + 4), 0x600); /* X_PM1a_EVT_BLK */
    assert_int_equal(r64(f + 172 + 4), 0x604); /* X_PM1a_CNT_BLK */
    assert_int_equal(r64(f + 208 + 4), 0x608); /* X_PM_TMR_BLK */
    assert_int_equal(f[208 + 1], 32);
    /* FACS: 64-byte aligned, 64 bytes */
    assert_int_equal(r32(f + 36), r64(f + 132));
    assert_int_equal(r32(f + 36) % 64, 0);
    const uint8_t *facs = t->buf + (r32(f + 36) - t->base);
    assert_memory_equal(facs, "FACS", 4);
    assert_int_equal(r32(facs + 4), 64);
    assert_int_equal(r16(f + 109), 0x5); /* legacy devices, no VGA (no 8042) */
    assert_int_equal(f[108], 0x32);      /* CENTURY: CMOS byte 0x32 */
    /* RESET_REG: system I/O, 8 bits, port 0x64, value 0xfe */
    assert_int_equal(f[116], 1);
    assert_int_equal(f[117], 8);
    assert_int_equal(r64(f + 120), 0x64);
    assert_int_equal(f[128], 0xfe);
    assert_int_equal(r32(f + 40), r64(f + 140)); /* DSDT == X_DSDT */
    const uint8_t *d = table_at(t, r64(f + 140), "DSDT");
    /* Name (_S5, Package (2) {5, 0}) */
    static const uint8_t s5[] = {0x08, '_', 'S', '5', '_', 0x12, 0x05, 0x02, 0x0a, 0x05, 0x00};
    assert_int_equal(r32(d + 4), 36 + sizeof(s5));
    assert_memory_equal(d + 36, s5, sizeof(s5));
}

static void check(unsigned nr_cpus)
{
    size_t cap = 65536;
    uint8_t *buf = calloc(1, cap);
    size_t len;
    struct hv_err err = {0};
    struct acpi_config cfg = {.nr_cpus = nr_cpus, .ioapic_addr = 0xfec00000u, .ioapic_id = 3};
    assert_int_equal(acpi_build(buf, cap, 0xe0000, &cfg, &len, &err), 0);
    struct tables t = {buf, 0xe0000, len};

    assert_memory_equal(buf, "RSD PTR ", 8);
    assert_int_equal(acpi_sum(buf, 20), 0);
    assert_int_equal(acpi_sum(buf, 36), 0);
    assert_int_equal(buf[15], 2);        /* revision */
    assert_int_equal(r32(buf + 16), 0);  /* no RSDT */
    assert_int_equal(r32(buf + 20), 36); /* length */
    const uint8_t *x = table_at(&t, r64(buf + 24), "XSDT");
    assert_int_equal(r32(x + 4), 36 + 16);
    check_fadt(&t, table_at(&t, r64(x + 36), "FACP"));
    check_madt(table_at(&t, r64(x + 44), "APIC"), nr_cpus);
    free(buf);
}

static void test_acpi_cpu_counts(void **state)
{
    const unsigned counts[] = {1, 2, 64, 254, 255, 256, 300, ACPI_MAX_CPUS};
    for (unsigned i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
        check(counts[i]);
}

static void test_acpi_limits(void **state)
{
    uint8_t buf[512];
    size_t len;
    struct hv_err err = {0};
    struct acpi_config cfg = {.nr_cpus = 0, .ioapic_addr = 0xfec00000u};
    assert_int_equal(acpi_build(buf, sizeof(buf), 0xe0000, &cfg, &len, &err), -1);
    cfg.nr_cpus = ACPI_MAX_CPUS + 1;
    assert_int_equal(acpi_build(buf, sizeof(buf), 0xe0000, &cfg, &len, &err), -1);
    cfg.nr_cpus = 64; /* 512 bytes are too few for 64 processors */
    assert_int_equal(acpi_build(buf, sizeof(buf), 0xe0000, &cfg, &len, &err), -1);
    assert_non_null(strstr(err.msg, "only 512 available"));
}

/* The DSDT with two virtio-MMIO devices, disassembled by ACPICA's iasl (Debian's acpica-tools):
 * the AML a guest's interpreter reads, not bytes compared with themselves. */
static void test_acpi_virtio_devices(void **state)
{
    (void)state;
    size_t cap = 65536, len;
    uint8_t *buf = calloc(1, cap);
    struct hv_err err = {0};
    struct acpi_config cfg = {.nr_cpus = 2,
                              .ioapic_addr = 0xfec00000u,
                              .ioapic_id = 2,
                              .nvirtio = 2,
                              .virtio = {{0xd0000000u, 0x1000, 5}, {0xd0001000u, 0x1000, 7}}};
    assert_int_equal(acpi_build(buf, cap, 0xe0000, &cfg, &len, &err), 0);
    struct tables t = {buf, 0xe0000, len};
    const uint8_t *x = table_at(&t, r64(buf + 24), "XSDT");
    const uint8_t *f = table_at(&t, r64(x + 36), "FACP");
    const uint8_t *d = table_at(&t, r64(f + 140), "DSDT");
    uint32_t dlen = r32(d + 4);
    assert_int_equal(acpi_sum(d, dlen), 0);
    /* Header, \_S5 (11), the scope's head (ScopeOp, 2-byte PkgLength, "\_SB_": 8), two devices
     * of 61 bytes: a table one byte short loads in iasl's disassembler but not in Linux's
     * interpreter (AE_AML_PACKAGE_LIMIT). */
    assert_int_equal(dlen, 36 + 11 + 8 + 2 * 61);
    char dir[] = "/tmp/hvprof-dsdt-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], cmd[512];
    snprintf(path, sizeof(path), "%s/dsdt.dat", dir);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(d, 1, dlen, fp), dlen);
    fclose(fp);
    snprintf(cmd, sizeof(cmd), "cd '%s' && iasl -d dsdt.dat >/dev/null 2>&1 && cat dsdt.dsl", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    static char dsl[65536];
    size_t n = fread(dsl, 1, sizeof(dsl) - 1, p);
    dsl[n] = 0;
    if (pclose(p) != 0)
        fail_msg("iasl -d failed (acpica-tools installed? scripts/deps.sh installs it):\n%s", dsl);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    /* What iasl prints for each device, in order. */
    const char *want[] = {"Scope (\\_SB)",
                          "Device (VR00)",
                          "Name (_HID, \"LNRO0005\")",
                          "Name (_UID, 0x00)",
                          "Memory32Fixed (ReadWrite,",
                          "0xD0000000,",
                          "0x00001000,",
                          "Interrupt (ResourceConsumer, Edge, ActiveHigh, Exclusive, ,, )",
                          "0x00000005,",
                          "Device (VR01)",
                          "Name (_UID, 0x01)",
                          "0xD0001000,",
                          "0x00000007,"};
    const char *at = dsl;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *hit = strstr(at, want[i]);
        if (!hit)
            fail_msg("iasl's disassembly lacks \"%s\" (after the previous items):\n%s", want[i],
                     dsl);
        at = hit + strlen(want[i]);
    }
    assert_non_null(strstr(dsl, "Name (_S5, Package (0x02)"));
    cfg.nvirtio = ACPI_MAX_VIRTIO_MMIO + 1;
    assert_int_equal(acpi_build(buf, cap, 0xe0000, &cfg, &len, &err), -1);
    free(buf);
}

static void test_acpi_in_guest(void **state)
{
    struct test_ram r;
    test_ram_init(&r, 64 * 1024 * 1024);
    struct hv_err err = {0};
    struct acpi_config cfg = {.nr_cpus = 4, .ioapic_addr = 0xfec00000u, .ioapic_id = 4};
    assert_int_equal(acpi_write(&r.gmem, &cfg, &err), 0);
    assert_memory_equal(test_ram_at(&r, ACPI_TABLES_GPA, 8), "RSD PTR ", 8);
    test_ram_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acpi_cpu_counts),
        cmocka_unit_test(test_acpi_limits),
        cmocka_unit_test(test_acpi_virtio_devices),
        cmocka_unit_test(test_acpi_in_guest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
