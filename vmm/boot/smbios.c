/* SMBIOS (smbios.h). Offsets from DSP0134 3.6: entry point §5.2.2 (Table 2), BIOS Information
 * §7.1 (Table 6), System Information §7.2 (Table 10), End-of-Table §7.45. Each structure is its
 * formatted area followed by its strings, NUL-terminated, and one more NUL. */
#include "vmm/boot/smbios.h"

#include <stdlib.h>
#include <string.h>

#include "vmm/boot/bytes.h"
#include "vmm/boot/guest_write.h"

#define EP_SIZE 0x18u

struct out {
    uint8_t *p, *end;
    uint16_t handle;
};

/* One structure: `fmt` (its formatted area, length in fmt[1]), then the strings. */
static int put_struct(struct out *o, uint8_t *fmt, const char *const *strs, unsigned nstr)
{
    size_t need = fmt[1] + 1;
    for (unsigned i = 0; i < nstr; i++)
        need += strlen(strs[i]) + 1;
    if (nstr == 0)
        need++; /* two NULs */
    if ((size_t)(o->end - o->p) < need)
        return -1;
    st16(fmt + 2, o->handle++);
    memcpy(o->p, fmt, fmt[1]);
    o->p += fmt[1];
    for (unsigned i = 0; i < nstr; i++) {
        size_t n = strlen(strs[i]) + 1;
        memcpy(o->p, strs[i], n);
        o->p += n;
    }
    if (nstr == 0)
        *o->p++ = 0;
    *o->p++ = 0;
    return 0;
}

static uint8_t sum8(const uint8_t *p, size_t n)
{
    uint8_t s = 0;
    while (n--)
        s += *p++;
    return s;
}

int smbios_build(uint8_t *buf, size_t cap, uint64_t base, size_t *len, struct hv_err *err)
{
    if (cap < EP_SIZE + 128)
        return hv_errf(err, "SMBIOS: %zu bytes are too few", cap);
    memset(buf, 0, cap);
    struct out o = {buf + EP_SIZE, buf + cap, 0};

    uint8_t bios[0x1a] = {0, 0x1a};
    bios[0x04] = 1;               /* vendor: string 1 */
    bios[0x05] = 2;               /* BIOS version: string 2 */
    st16(bios + 0x06, 0xe000);    /* starting segment: the 128 KiB below 1 MiB */
    bios[0x08] = 3;               /* release date: string 3 */
    st64(bios + 0x0a, 1ull << 3); /* "BIOS characteristics are not supported" */
    bios[0x12] = 1u << 0;         /* extension byte 1: ACPI is supported */
    bios[0x13] = 1u << 4;         /* extension byte 2: a virtual machine */
    bios[0x16] = 0xff;            /* no embedded controller firmware */
    bios[0x17] = 0xff;
    static const char *const bios_str[] = {"hvprof", HVPROF_VERSION, "01/01/2026"};

    uint8_t sys[0x1b] = {1, 0x1b};
    sys[0x04] = 1; /* manufacturer */
    sys[0x05] = 2; /* product name */
    sys[0x06] = 3; /* version */
    /* serial number 0 (none); UUID all zero: "not currently present but can be set" */
    sys[0x18] = 6; /* wake-up type: power switch */
    sys[0x1a] = 4; /* family */
    static const char *const sys_str[] = {"hvprof", "hvprof VM", HVPROF_VERSION, "Virtual Machine"};

    uint8_t end[4] = {127, 4};
    if (put_struct(&o, bios, bios_str, 3) || put_struct(&o, sys, sys_str, 4) ||
        put_struct(&o, end, NULL, 0))
        return hv_errf(err, "SMBIOS: the structures do not fit in %zu bytes", cap);
    uint32_t table = (uint32_t)(o.p - (buf + EP_SIZE));

    memcpy(buf, "_SM3_", 5);
    buf[0x06] = EP_SIZE;
    buf[0x07] = 3; /* SMBIOS 3.6 */
    buf[0x08] = 6;
    buf[0x0a] = 1; /* entry point revision: 3.0 */
    st32(buf + 0x0c, table);
    st64(buf + 0x10, base + EP_SIZE);
    buf[0x05] = (uint8_t)-sum8(buf, EP_SIZE);
    *len = EP_SIZE + table;
    return 0;
}

int smbios_write(struct gmem *mem, struct hv_err *err)
{
    size_t cap = 4096, len;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory for SMBIOS");
    int rc = smbios_build(buf, cap, SMBIOS_GPA, &len, err);
    if (rc == 0)
        rc = guest_write(mem, SMBIOS_GPA, buf, len, "SMBIOS tables", err);
    free(buf);
    return rc;
}
