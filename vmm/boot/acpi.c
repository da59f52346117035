/* ACPI tables (acpi.h). Every offset below is from ACPI 6.5 chapter 5.2; tables are built byte by
 * byte with little-endian stores, never from host C structs, so host layout cannot leak in. */
#include "vmm/boot/acpi.h"

#include <stdlib.h>
#include <string.h>

#include "vmm/boot/bytes.h"
#include "vmm/boot/guest_write.h"

/* System Description Table header, §5.2.6 (Table 5.4). */
#define SDT_HEADER       36u
#define SDT_LENGTH       4u
#define SDT_REVISION     8u
#define SDT_CHECKSUM     9u
#define SDT_OEMID        10u
#define SDT_OEM_TABLE_ID 16u
#define SDT_OEM_REVISION 24u
#define SDT_CREATOR_ID   28u
#define SDT_CREATOR_REV  32u

#define ACPI_OEMID    "HVPROF"
#define ACPI_OEMTABLE "HVPROFVM"
#define ACPI_CREATOR  "HVPF"

/* RSDP, §5.2.5.3 (Table 5.3). */
#define RSDP_SIZE         36u
#define RSDP_CHECKSUM     8u /* over the first 20 bytes (the ACPI 1.0 part) */
#define RSDP_OEMID        9u
#define RSDP_REVISION     15u
#define RSDP_RSDT         16u
#define RSDP_LENGTH       20u
#define RSDP_XSDT         24u
#define RSDP_EXT_CHECKSUM 32u

/* FADT, §5.2.9 (Table 5.9); revision 6 is 276 bytes. */
#define FADT_SIZE            276u
#define FADT_REVISION        6u
#define FADT_MINOR_VERSION   5u
#define FADT_FIRMWARE_CTRL   36u
#define FADT_DSDT            40u
#define FADT_SCI_INT         46u
#define FADT_PM1A_EVT_BLK    56u
#define FADT_PM1A_CNT_BLK    64u
#define FADT_PM_TMR_BLK      76u
#define FADT_PM1_EVT_LEN     88u
#define FADT_PM1_CNT_LEN     89u
#define FADT_PM_TMR_LEN      91u
#define FADT_CENTURY         108u
#define FADT_IAPC_BOOT_ARCH  109u
#define FADT_FLAGS           112u
#define FADT_RESET_REG       116u
#define FADT_RESET_VALUE     128u
#define FADT_MINOR           131u
#define FADT_X_FIRMWARE_CTRL 132u
#define FADT_X_DSDT          140u
#define FADT_X_PM1A_EVT_BLK  148u
#define FADT_X_PM1A_CNT_BLK  172u
#define FADT_X_PM_TMR_BLK    208u
#define FADT_HYPERVISOR_ID   268u
/* IAPC_BOOT_ARCH, §5.2.9.3 (Table 5.11). */
#define IAPC_LEGACY_DEVICES  (1u << 0)
#define IAPC_VGA_NOT_PRESENT (1u << 2)
/* FADT flags, Table 5.10. */
#define FADT_F_WBINVD        (1u << 0)
#define FADT_F_PWR_BUTTON    (1u << 4) /* no fixed-feature power button */
#define FADT_F_SLP_BUTTON    (1u << 5) /* no fixed-feature sleep button */
#define FADT_F_RESET_REG_SUP (1u << 10)

/* FACS, §5.2.10 (Table 5.12). */
#define FACS_SIZE    64u
#define FACS_VERSION 32u

/* Generic Address Structure, §5.2.3.2 (Table 5.1). */
#define GAS_SIZE         12u
#define GAS_SYSTEM_IO    1u
#define GAS_ACCESS_BYTE  1u
#define GAS_ACCESS_WORD  2u
#define GAS_ACCESS_DWORD 3u

#define RTC_CENTURY_INDEX 0x32u /* CMOS byte holding the century (vmm/rtc.h) */

/* i8042 reset: the same write Linux's reboot=k does (vmm/i8042.c stops the VM on it). */
#define RESET_PORT  0x64u
#define RESET_VALUE 0xfeu

/* MADT, §5.2.12 (Table 5.19) and its structures. */
#define MADT_REVISION        5u
#define MADT_LAPIC_ADDR      0xfee00000u
#define MADT_PCAT_COMPAT     1u   /* a dual 8259 exists (KVM_CREATE_IRQCHIP made one) */
#define MADT_LAPIC           0u   /* Processor Local APIC, 8 bytes, Table 5.23 */
#define MADT_IOAPIC          1u   /* I/O APIC, 12 bytes, Table 5.25 */
#define MADT_ISO             2u   /* Interrupt Source Override, 10 bytes, Table 5.26 */
#define MPS_INTI_ACTIVE_HIGH 0x1u /* Table 5.27: polarity bits 1:0 = 01 */
#define MPS_INTI_LEVEL       0xcu /* trigger mode bits 3:2 = 11 */
#define MADT_LAPIC_NMI       4u   /* Local APIC NMI, 6 bytes, Table 5.32 */
#define MADT_X2APIC          9u   /* Processor Local x2APIC, 16 bytes, Table 5.40 */
#define MADT_X2APIC_NMI      0xau /* Local x2APIC NMI, 12 bytes, Table 5.42 */
#define MADT_ENABLED         1u
#define MADT_XAPIC_ID_LIMIT  255u /* IDs >= 255 only fit x2APIC structures (§5.2.12.12) */
#define MADT_ALL_PROCESSORS  0xffu

/* DSDT body: Name (_S5, Package (2) {5, 0}) in AML (§20.2.5.2 NameOp 0x08, DefPackage 0x12
 * PkgLength NumElements, BytePrefix 0x0A, ZeroOp 0x00). PkgLength 5 counts itself, the element
 * count and the three element bytes. */
static const uint8_t dsdt_aml[] = {
    0x08, '_', 'S', '5', '_', 0x12, 0x05, 0x02, 0x0a, ACPI_SLEEP_TYP_S5, 0x00};

/* The DSDT's virtio-MMIO devices (ACPI 6.4 section 20 for the AML, 6.4.3.4 Memory32Fixed,
 * 6.4.3.6 Extended Interrupt):
 *   Scope (\_SB) { Device (VRnn) { Name (_HID, "LNRO0005") Name (_UID, nn)
 *     Name (_CRS, ResourceTemplate () { Memory32Fixed (ReadWrite, base, size)
 *                                        Interrupt (ResourceConsumer, Edge, ActiveHigh,
 *                                                   Exclusive) { gsi } }) } }
 * Each device is 61 bytes, the scope's header 8 (ScopeOp, a two-byte PkgLength: 5 + 61 n bytes
 * follow it, at least 66; the name "\_SB_"), so up to 4 devices fit (20.2.4). */
#define AML_DEVICE_BYTES 61u
#define AML_SCOPE_HEAD   8u

/* PkgLength (20.2.4) for `content` bytes that follow it: 1 byte below 63, else 2 (12 bits). */
static size_t aml_pkglen(uint8_t *p, size_t content)
{
    if (content + 1 < 64) {
        p[0] = (uint8_t)(content + 1);
        return 1;
    }
    size_t v = content + 2;
    p[0] = (uint8_t)(0x40 | (v & 0xf));
    p[1] = (uint8_t)(v >> 4);
    return 2;
}

static size_t aml_virtio_device(uint8_t *p, unsigned i, const struct acpi_virtio_mmio *v)
{
    static const uint8_t crs_end[] = {0x79, 0x00};
    uint8_t *start = p;
    *p++ = 0x5b;                 /* ExtOpPrefix */
    *p++ = 0x82;                 /* DeviceOp */
    *p++ = AML_DEVICE_BYTES - 2; /* PkgLength: itself and the 58 bytes after it */
    *p++ = 'V', *p++ = 'R', *p++ = (uint8_t)('0' + i / 10 % 10), *p++ = (uint8_t)('0' + i % 10);
    *p++ = 0x08, memcpy(p, "_HID", 4), p += 4;     /* NameOp */
    *p++ = 0x0d, memcpy(p, "LNRO0005", 9), p += 9; /* StringPrefix, NUL-terminated */
    *p++ = 0x08, memcpy(p, "_UID", 4), p += 4;
    *p++ = 0x0a, *p++ = (uint8_t)i; /* BytePrefix */
    *p++ = 0x08, memcpy(p, "_CRS", 4), p += 4;
    *p++ = 0x11; /* BufferOp */
    *p++ = 26;   /* PkgLength: itself, BufferSize (2) and 23 bytes */
    *p++ = 0x0a, *p++ = 23;
    *p++ = 0x86, *p++ = 9, *p++ = 0, *p++ = 1; /* Memory32Fixed, length 9, read-write */
    st32(p, v->base), p += 4;
    st32(p, v->size), p += 4;
    *p++ = 0x89, *p++ = 6, *p++ = 0; /* Extended Interrupt, length 6 */
    *p++ = 0x03;                     /* consumer, edge, active high, exclusive */
    *p++ = 1;                        /* one interrupt */
    st32(p, v->gsi), p += 4;
    memcpy(p, crs_end, sizeof(crs_end)), p += sizeof(crs_end); /* End Tag, checksum 0 */
    return (size_t)(p - start);
}

/* The DSDT body: \_S5, then the virtio devices' scope. Returns its length; buf NULL: measure. */
static size_t dsdt_body(uint8_t *buf, const struct acpi_config *cfg)
{
    size_t devices = cfg->nvirtio * AML_DEVICE_BYTES;
    size_t len = sizeof(dsdt_aml) + (cfg->nvirtio ? AML_SCOPE_HEAD + devices : 0);
    if (!buf)
        return len;
    uint8_t *p = buf;
    memcpy(p, dsdt_aml, sizeof(dsdt_aml)), p += sizeof(dsdt_aml);
    if (cfg->nvirtio) {
        *p++ = 0x10; /* ScopeOp */
        p += aml_pkglen(p, 5 + devices);
        memcpy(p, "\\_SB_", 5), p += 5;
        for (unsigned i = 0; i < cfg->nvirtio; i++)
            p += aml_virtio_device(p, i, &cfg->virtio[i]);
    }
    return (size_t)(p - buf);
}

uint8_t acpi_sum(const void *p, size_t len)
{
    const uint8_t *b = p;
    uint8_t s = 0;
    for (size_t i = 0; i < len; i++)
        s += b[i];
    return s;
}

static void sdt_header(uint8_t *t, const char sig[4], uint32_t len, uint8_t rev)
{
    memcpy(t, sig, 4);
    st32(t + SDT_LENGTH, len);
    st8(t + SDT_REVISION, rev);
    memcpy(t + SDT_OEMID, ACPI_OEMID, 6);
    memcpy(t + SDT_OEM_TABLE_ID, ACPI_OEMTABLE, 8);
    st32(t + SDT_OEM_REVISION, 1);
    memcpy(t + SDT_CREATOR_ID, ACPI_CREATOR, 4);
    st32(t + SDT_CREATOR_REV, 1);
}

static void sdt_checksum(uint8_t *t)
{
    uint32_t len = ld32(t + SDT_LENGTH);
    t[SDT_CHECKSUM] = 0;
    t[SDT_CHECKSUM] = (uint8_t)-acpi_sum(t, len);
}

static void gas_io(uint8_t *g, uint16_t port, unsigned bytes)
{
    st8(g, GAS_SYSTEM_IO);
    st8(g + 1, (uint8_t)(bytes * 8)); /* register bit width */
    st8(g + 2, 0);                    /* bit offset */
    st8(g + 3, bytes == 1 ? GAS_ACCESS_BYTE : bytes == 2 ? GAS_ACCESS_WORD : GAS_ACCESS_DWORD);
    st64(g + 4, port);
}

static size_t madt_size(unsigned nr_cpus)
{
    size_t xapic = nr_cpus < MADT_XAPIC_ID_LIMIT ? nr_cpus : MADT_XAPIC_ID_LIMIT;
    size_t x2apic = nr_cpus - xapic;
    return SDT_HEADER + 8 + xapic * 8 + x2apic * 16 + 12 + 10 + 6 + (x2apic ? 12 : 0);
}

static size_t align16(size_t v)
{
    return (v + 15) & ~(size_t)15;
}

static void build_madt(uint8_t *t, const struct acpi_config *cfg)
{
    size_t len = madt_size(cfg->nr_cpus);
    sdt_header(t, "APIC", (uint32_t)len, MADT_REVISION);
    st32(t + SDT_HEADER, MADT_LAPIC_ADDR);
    st32(t + SDT_HEADER + 4, MADT_PCAT_COMPAT);
    uint8_t *p = t + SDT_HEADER + 8;
    unsigned x2apic = 0;
    for (unsigned i = 0; i < cfg->nr_cpus; i++) {
        /* APIC ID = vCPU index: KVM gives vCPU n local APIC ID n, and CPUID says the same. */
        if (i < MADT_XAPIC_ID_LIMIT) {
            st8(p, MADT_LAPIC);
            st8(p + 1, 8);
            st8(p + 2, (uint8_t)i); /* ACPI processor UID */
            st8(p + 3, (uint8_t)i); /* APIC ID */
            st32(p + 4, MADT_ENABLED);
            p += 8;
        } else {
            st8(p, MADT_X2APIC);
            st8(p + 1, 16);
            st16(p + 2, 0);
            st32(p + 4, i); /* x2APIC ID */
            st32(p + 8, MADT_ENABLED);
            st32(p + 12, i); /* ACPI processor UID */
            p += 16;
            x2apic++;
        }
    }
    st8(p, MADT_IOAPIC);
    st8(p + 1, 12);
    st8(p + 2, cfg->ioapic_id);
    st8(p + 3, 0);
    st32(p + 4, cfg->ioapic_addr);
    st32(p + 8, 0); /* global system interrupt base: ISA IRQ n = GSI n = pin n */
    p += 12;
    /* The SCI: ISA IRQ 9 at GSI 9, level-triggered (ACPI's default for the SCI), active high. */
    st8(p, MADT_ISO);
    st8(p + 1, 10);
    st8(p + 2, 0); /* bus: ISA */
    st8(p + 3, ACPI_SCI_IRQ);
    st32(p + 4, ACPI_SCI_IRQ);
    st16(p + 8, MPS_INTI_ACTIVE_HIGH | MPS_INTI_LEVEL);
    p += 10;
    /* LINT1 is NMI on every local APIC (the LVT the VMM programs, vmm/cpu_setup.c). */
    st8(p, MADT_LAPIC_NMI);
    st8(p + 1, 6);
    st8(p + 2, MADT_ALL_PROCESSORS);
    st16(p + 3, 0); /* MPS INTI flags: conforms to the bus */
    st8(p + 5, 1);  /* LINT1 */
    p += 6;
    if (x2apic) {
        st8(p, MADT_X2APIC_NMI);
        st8(p + 1, 12);
        st16(p + 2, 0);
        st32(p + 4, 0xffffffffu); /* every processor */
        st8(p + 8, 1);            /* LINT1 */
        p += 12;
    }
    sdt_checksum(t);
}

static void build_fadt(uint8_t *t, uint64_t dsdt, uint64_t facs)
{
    sdt_header(t, "FACP", FADT_SIZE, FADT_REVISION);
    st32(t + FADT_FIRMWARE_CTRL, (uint32_t)facs);
    st64(t + FADT_X_FIRMWARE_CTRL, facs);
    st32(t + FADT_DSDT, (uint32_t)dsdt);
    /* SMI_CMD, ACPI_ENABLE and ACPI_DISABLE stay 0: the system is always in ACPI mode
     * (§5.2.9, SMI_CMD: "zero ... on systems that do not support System Management mode"),
     * and PM1_CNT.SCI_EN reads 1. No GPE blocks. */
    st16(t + FADT_SCI_INT, ACPI_SCI_IRQ);
    st32(t + FADT_PM1A_EVT_BLK, ACPI_PM1A_EVT_PORT);
    st32(t + FADT_PM1A_CNT_BLK, ACPI_PM1A_CNT_PORT);
    st32(t + FADT_PM_TMR_BLK, ACPI_PM_TMR_PORT);
    st8(t + FADT_PM1_EVT_LEN, 4);
    st8(t + FADT_PM1_CNT_LEN, 2);
    st8(t + FADT_PM_TMR_LEN, 4);
    gas_io(t + FADT_X_PM1A_EVT_BLK, ACPI_PM1A_EVT_PORT, 4);
    gas_io(t + FADT_X_PM1A_CNT_BLK, ACPI_PM1A_CNT_PORT, 2);
    gas_io(t + FADT_X_PM_TMR_BLK, ACPI_PM_TMR_PORT, 4);
    /* No IAPC_8042: the VMM's i8042 is a reset line only, with no keyboard or mouse behind it;
     * a guest that believed in one would probe it and fail. Reset still goes through its port
     * 0x64 (RESET_REG below). */
    st16(t + FADT_IAPC_BOOT_ARCH, IAPC_LEGACY_DEVICES | IAPC_VGA_NOT_PRESENT);
    st8(t + FADT_CENTURY, RTC_CENTURY_INDEX);
    st32(t + FADT_FLAGS,
         FADT_F_WBINVD | FADT_F_PWR_BUTTON | FADT_F_SLP_BUTTON | FADT_F_RESET_REG_SUP);
    gas_io(t + FADT_RESET_REG, RESET_PORT, 1);
    st8(t + FADT_RESET_VALUE, RESET_VALUE);
    st8(t + FADT_MINOR, FADT_MINOR_VERSION);
    st64(t + FADT_X_DSDT, dsdt);
    memcpy(t + FADT_HYPERVISOR_ID, "HVPROFVM", 8);
    sdt_checksum(t);
}

int acpi_build(uint8_t *buf, size_t cap, uint64_t base, const struct acpi_config *cfg, size_t *len,
               struct hv_err *err)
{
    if (cfg->nr_cpus == 0 || cfg->nr_cpus > ACPI_MAX_CPUS)
        return hv_errf(err, "ACPI tables: %u vCPUs (1-%u supported)", cfg->nr_cpus, ACPI_MAX_CPUS);
    if (cfg->nvirtio > ACPI_MAX_VIRTIO_MMIO)
        return hv_errf(err, "ACPI tables: %u virtio devices (at most %u)", cfg->nvirtio,
                       ACPI_MAX_VIRTIO_MMIO);
    /* Layout: RSDP, XSDT, FADT, FACS (64-byte aligned, §5.2.10), DSDT, MADT. */
    const size_t xsdt_len = SDT_HEADER + 2 * 8;
    const size_t dsdt_len = SDT_HEADER + dsdt_body(NULL, cfg);
    size_t off_xsdt = align16(RSDP_SIZE);
    size_t off_fadt = align16(off_xsdt + xsdt_len);
    size_t off_facs = (off_fadt + FADT_SIZE + 63) & ~(size_t)63;
    size_t off_dsdt = align16(off_facs + FACS_SIZE);
    size_t off_madt = align16(off_dsdt + dsdt_len);
    size_t total = off_madt + madt_size(cfg->nr_cpus);
    if (total > cap)
        return hv_errf(err, "ACPI tables for %u vCPUs need %zu bytes, only %zu available",
                       cfg->nr_cpus, total, cap);
    memset(buf, 0, total);

    uint8_t *dsdt = buf + off_dsdt;
    sdt_header(dsdt, "DSDT", (uint32_t)dsdt_len, 2);
    if (dsdt_body(dsdt + SDT_HEADER, cfg) != dsdt_len - SDT_HEADER)
        return hv_errf(err, "ACPI tables: the DSDT's AML is not the size measured for it");
    sdt_checksum(dsdt);

    uint8_t *facs = buf + off_facs;
    memcpy(facs, "FACS", 4);
    st32(facs + 4, FACS_SIZE);
    st8(facs + FACS_VERSION, 2);
    build_fadt(buf + off_fadt, base + off_dsdt, base + off_facs);
    build_madt(buf + off_madt, cfg);

    uint8_t *xsdt = buf + off_xsdt;
    sdt_header(xsdt, "XSDT", (uint32_t)xsdt_len, 1);
    st64(xsdt + SDT_HEADER, base + off_fadt);
    st64(xsdt + SDT_HEADER + 8, base + off_madt);
    sdt_checksum(xsdt);

    uint8_t *rsdp = buf;
    memcpy(rsdp, "RSD PTR ", 8);
    memcpy(rsdp + RSDP_OEMID, ACPI_OEMID, 6);
    st8(rsdp + RSDP_REVISION, 2);
    st32(rsdp + RSDP_RSDT, 0);
    st32(rsdp + RSDP_LENGTH, RSDP_SIZE);
    st64(rsdp + RSDP_XSDT, base + off_xsdt);
    rsdp[RSDP_CHECKSUM] = (uint8_t)-acpi_sum(rsdp, 20);
    rsdp[RSDP_EXT_CHECKSUM] = (uint8_t)-acpi_sum(rsdp, RSDP_SIZE);
    *len = total;
    return 0;
}

int acpi_write(struct gmem *mem, const struct acpi_config *cfg, struct hv_err *err)
{
    const size_t cap = ACPI_TABLES_END - ACPI_TABLES_GPA; /* 64 KiB: not on the stack */
    uint8_t *buf = malloc(cap);
    if (!buf)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory for the ACPI tables");
    size_t len;
    int rc = acpi_build(buf, cap, ACPI_TABLES_GPA, cfg, &len, err);
    if (rc == 0)
        rc = guest_write(mem, ACPI_TABLES_GPA, buf, len, "ACPI tables", err);
    free(buf);
    return rc;
}
