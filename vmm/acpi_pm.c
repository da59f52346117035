#include "vmm/acpi_pm.h"

#include <string.h>

#define PM1_CNT_SCI_EN    (1u << 0)
#define PM1_CNT_SLP_TYP   (7u << 10)
#define PM1_CNT_SLP_EN    (1u << 13) /* write-only: reads 0 */
#define PM1_CNT_SLP_SHIFT 10

void acpi_pm_init(struct acpi_pm *pm, void (*poweroff)(void *), void *ctx)
{
    memset(pm, 0, sizeof(*pm));
    pm->pm1_cnt = PM1_CNT_SCI_EN;
    pm->poweroff = poweroff;
    pm->ctx = ctx;
}

/* Little-endian byte image of the 12 bytes at ACPI_PM1A_EVT_PORT. */
static void image(const struct acpi_pm *pm, uint8_t img[ACPI_PM_PORTS], uint64_t now_ns)
{
    /* ns * 3579545 / 1e9 overflows 64 bits after ~1.6 hours of ns: multiply in 128 bits. */
    uint32_t tmr =
        (uint32_t)((unsigned __int128)now_ns * ACPI_PM_TIMER_HZ / 1000000000u) & 0xffffffu;
    memcpy(img + 0, &pm->pm1_sts, 2);
    memcpy(img + 2, &pm->pm1_en, 2);
    memcpy(img + 4, &pm->pm1_cnt, 2);
    memset(img + 6, 0, 2);
    memcpy(img + 8, &tmr, 4);
}

void acpi_pm_read(struct acpi_pm *pm, uint16_t port, uint8_t *data, unsigned size, uint64_t now_ns)
{
    uint8_t img[ACPI_PM_PORTS];
    image(pm, img, now_ns);
    for (unsigned i = 0; i < size; i++) {
        unsigned off = (unsigned)(port - ACPI_PM1A_EVT_PORT) + i;
        data[i] = off < ACPI_PM_PORTS ? img[off] : 0xff;
    }
}

void acpi_pm_write(struct acpi_pm *pm, uint16_t port, const uint8_t *data, unsigned size)
{
    for (unsigned i = 0; i < size; i++) {
        unsigned off = (unsigned)(port - ACPI_PM1A_EVT_PORT) + i;
        unsigned shift = (off & 1) * 8;
        uint16_t byte = (uint16_t)(data[i] << shift);
        switch (off & ~1u) {
        case 0: /* PM1_STS: write 1 to clear */
            pm->pm1_sts &= (uint16_t)~byte;
            break;
        case 2:
            pm->pm1_en = (uint16_t)((pm->pm1_en & ~(0xffu << shift)) | byte);
            break;
        case 4: {
            uint16_t v = (uint16_t)((pm->pm1_cnt & ~(0xffu << shift)) | byte);
            if (off & 1 && (v & PM1_CNT_SLP_EN) &&
                ((v & PM1_CNT_SLP_TYP) >> PM1_CNT_SLP_SHIFT) == ACPI_SLEEP_TYP_S5 && pm->poweroff)
                pm->poweroff(pm->ctx);
            pm->pm1_cnt = (uint16_t)((v & ~PM1_CNT_SLP_EN) | PM1_CNT_SCI_EN);
            break;
        }
        default:
            break; /* the timer is read-only */
        }
    }
}
