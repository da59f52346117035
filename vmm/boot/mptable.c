#include "vmm/boot/mptable.h"

#include <string.h>

#include "vmm/boot/guest_write.h"
#include "vmm/boot/layout.h"

_Static_assert(sizeof(struct mp_floating) == 16, "MP spec 4.1");
_Static_assert(sizeof(struct mp_config) == 44, "MP spec 4.2");
_Static_assert(sizeof(struct mp_processor) == 20, "MP spec 4.3.1");
_Static_assert(sizeof(struct mp_bus) == 8, "MP spec 4.3.2");
_Static_assert(sizeof(struct mp_ioapic) == 8, "MP spec 4.3.3");
_Static_assert(sizeof(struct mp_intsrc) == 8, "MP spec 4.3.4");

#define MP_CPU_ENABLED 0x1u
#define MP_CPU_BSP     0x2u
/* Family 6 signature and CPUID.1:EDX FPU | APIC: what Linux prints, it does not use them. */
#define MP_CPU_SIGNATURE 0x600u
#define MP_CPU_FEATURES  0x201u

uint8_t mp_sum(const void *p, size_t len)
{
    const uint8_t *b = p;
    uint8_t s = 0;
    for (size_t i = 0; i < len; i++)
        s += b[i];
    return s;
}

size_t mptable_size(unsigned nr_cpus)
{
    return sizeof(struct mp_floating) + sizeof(struct mp_config) +
           nr_cpus * sizeof(struct mp_processor) + sizeof(struct mp_bus) +
           sizeof(struct mp_ioapic) + (MP_ISA_IRQS + 2) * sizeof(struct mp_intsrc);
}

int mptable_build(uint8_t *buf, size_t cap, uint32_t gpa, unsigned nr_cpus, size_t *len,
                  struct hv_err *err)
{
    /* APIC ids are 8 bits and 0xff is broadcast; the IOAPIC takes id nr_cpus. */
    if (nr_cpus == 0 || nr_cpus > 254)
        return hv_errf(err, "MP table: %u vCPUs (1-254 supported)", nr_cpus);
    size_t need = mptable_size(nr_cpus);
    if (need > cap)
        return hv_errf(err, "MP table for %u vCPUs needs %zu bytes, only %zu available", nr_cpus,
                       need, cap);
    memset(buf, 0, need);

    struct mp_floating *fp = (struct mp_floating *)buf;
    struct mp_config *cfg = (struct mp_config *)(buf + sizeof(*fp));
    uint8_t *p = (uint8_t *)(cfg + 1);
    uint16_t count = 0;

    for (unsigned i = 0; i < nr_cpus; i++, count++) {
        struct mp_processor cpu = {
            .type = MP_ENT_PROCESSOR,
            .apic_id = (uint8_t)i,
            .apic_version = MP_APIC_VERSION,
            .flags = MP_CPU_ENABLED | (i == 0 ? MP_CPU_BSP : 0),
            .signature = MP_CPU_SIGNATURE,
            .features = MP_CPU_FEATURES,
        };
        memcpy(p, &cpu, sizeof(cpu));
        p += sizeof(cpu);
    }
    struct mp_bus bus = {.type = MP_ENT_BUS, .bus_id = MP_ISA_BUS_ID};
    memcpy(bus.bus_type, "ISA   ", 6);
    memcpy(p, &bus, sizeof(bus));
    p += sizeof(bus);
    count++;

    const uint8_t ioapic_id = (uint8_t)nr_cpus;
    struct mp_ioapic io = {.type = MP_ENT_IOAPIC,
                           .apic_id = ioapic_id,
                           .version = MP_IOAPIC_VERSION,
                           .flags = 1,
                           .addr = MP_IOAPIC_BASE};
    memcpy(p, &io, sizeof(io));
    p += sizeof(io);
    count++;

    for (unsigned irq = 0; irq < MP_ISA_IRQS; irq++, count++) {
        struct mp_intsrc src = {.type = MP_ENT_INTSRC,
                                .irq_type = MP_INT,
                                .src_bus = MP_ISA_BUS_ID,
                                .src_irq = (uint8_t)irq,
                                .dst_apic = ioapic_id,
                                .dst_pin = (uint8_t)irq};
        memcpy(p, &src, sizeof(src));
        p += sizeof(src);
    }
    /* The 8259's output reaches the LAPICs' LINT0 (ExtINT), NMI is LINT1: MP spec 5.1's
     * default configuration, and the LVT settings the VMM programs. */
    struct mp_intsrc lint[2] = {
        {.type = MP_ENT_LINTSRC,
         .irq_type = MP_EXTINT,
         .src_bus = MP_ISA_BUS_ID,
         .dst_apic = 0xff,
         .dst_pin = 0},
        {.type = MP_ENT_LINTSRC,
         .irq_type = MP_NMI,
         .src_bus = MP_ISA_BUS_ID,
         .dst_apic = 0xff,
         .dst_pin = 1},
    };
    memcpy(p, lint, sizeof(lint));
    p += sizeof(lint);
    count += 2;

    memcpy(cfg->signature, "PCMP", 4);
    cfg->length = (uint16_t)(p - (uint8_t *)cfg);
    cfg->spec_rev = 4;
    memcpy(cfg->oem, "HVPROF  ", 8);
    memcpy(cfg->product, "HVPROF VM   ", 12);
    cfg->entry_count = count;
    cfg->lapic = MP_LAPIC_BASE;
    cfg->checksum = (uint8_t)-mp_sum(cfg, cfg->length);

    memcpy(fp->signature, "_MP_", 4);
    fp->physptr = gpa + (uint32_t)sizeof(*fp);
    fp->length = 1;
    fp->spec_rev = 4;
    fp->checksum = (uint8_t)-mp_sum(fp, sizeof(*fp));

    *len = need;
    return 0;
}

uint64_t mptable_gpa(unsigned nr_cpus)
{
    if (nr_cpus == 0 || nr_cpus > MPTABLE_MAX_CPUS)
        return 0;
    return mptable_size(nr_cpus) <= BOOT_LOW_RAM_END - HVPROF_LOW_MPTABLE ? HVPROF_LOW_MPTABLE
                                                                          : MPTABLE_HIGH_GPA;
}

int mptable_write(struct gmem *mem, unsigned nr_cpus, struct hv_err *err)
{
    uint64_t gpa = mptable_gpa(nr_cpus);
    if (gpa == 0)
        return 0;
    uint8_t buf[8192]; /* mptable_size(254) = 5,340 bytes */
    size_t len;
    if (mptable_build(buf, sizeof(buf), (uint32_t)gpa, nr_cpus, &len, err))
        return -1;
    return guest_write(mem, gpa, buf, len, "MP table", err);
}
