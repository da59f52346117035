#include "cli/domain_xml.h"

#include "vmm/net/net_spec.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

/* Element and attribute names compared as C strings. */
static bool is(const xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, name);
}

/* Copies what a message may show of a guest-supplied string: printable ASCII, cut. */
static void shown(char *out, size_t cap, const char *s)
{
    size_t k = 0;
    for (; s && *s && k + 1 < cap; s++)
        out[k++] = isprint((unsigned char)*s) ? *s : '?';
    out[k] = 0;
    if (s && *s && cap > 4)
        memcpy(out + cap - 4, "...", 4);
}

static void unsupported(struct domain_config *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void unsupported(struct domain_config *c, const char *fmt, ...)
{
    if (c->nunsupported == DOMAIN_MAX_UNSUPPORTED) {
        c->unsupported_dropped++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->unsupported[c->nunsupported++], DOMAIN_LINE_MAX, fmt, ap);
    va_end(ap);
}

/* An attribute as a bounded, printable string ("" when absent). */
/* A device left out as one that does not change what the guest runs, counted by kind. */
static void left_out(struct domain_config *c, const char *kind)
{
    for (unsigned i = 0; i < c->nleft_out; i++)
        if (!strcmp(c->left_out[i].kind, kind)) {
            c->left_out[i].n++;
            return;
        }
    if (c->nleft_out == DOMAIN_MAX_LEFT_OUT)
        kind = "other"; /* kinds are a fixed list below: never reached with it */
    unsigned i = c->nleft_out < DOMAIN_MAX_LEFT_OUT ? c->nleft_out++ : DOMAIN_MAX_LEFT_OUT - 1;
    snprintf(c->left_out[i].kind, sizeof(c->left_out[i].kind), "%s", kind);
    c->left_out[i].n++;
}

void domain_left_out_line(const struct domain_config *c, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = 0;
    for (unsigned i = 0; i < c->nleft_out && at < cap; i++) {
        int n = c->left_out[i].n > 1
                    ? snprintf(out + at, cap - at, "%s%u %ss", i ? ", " : "", c->left_out[i].n,
                               c->left_out[i].kind)
                    : snprintf(out + at, cap - at, "%s%s", i ? ", " : "", c->left_out[i].kind);
        if (n < 0)
            break;
        at += (size_t)n;
    }
}

static const char *attr(const xmlNode *n, const char *name, char *buf, size_t cap)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    shown(buf, cap, (const char *)v);
    xmlFree(v);
    return buf;
}

/* The element's text, whole (a path must not be cut): -1 when longer than cap. */
static int text(const xmlNode *n, char *buf, size_t cap)
{
    xmlChar *v = xmlNodeGetContent(n);
    const char *s = v ? (const char *)v : "";
    size_t len = strlen(s);
    int rc = len < cap ? 0 : -1;
    if (rc == 0)
        memcpy(buf, s, len + 1);
    xmlFree(v);
    return rc;
}

static int text_field(const xmlNode *n, char *buf, size_t cap, const char *what, struct hv_err *err)
{
    if (text(n, buf, cap) < 0)
        return hv_errf(err, "domain XML: <%s> is longer than %zu bytes", what, cap - 1);
    return 0;
}

/* formatdomain.html "Memory Allocation": unit b/bytes, KB (10^3), k/KiB (2^10), MB, M/MiB,
 * GB, G/GiB, TB, T/TiB; KiB when absent. */
static int memory_bytes(const xmlNode *n, uint64_t *out, struct hv_err *err)
{
    static const struct {
        const char *unit;
        uint64_t mul;
    } units[] = {
        {"b", 1},           {"bytes", 1},        {"KB", 1000},        {"k", 1024},
        {"KiB", 1024},      {"MB", 1000000},     {"M", 1 << 20},      {"MiB", 1 << 20},
        {"GB", 1000000000}, {"G", 1ull << 30},   {"GiB", 1ull << 30}, {"TB", 1000000000000ull},
        {"T", 1ull << 40},  {"TiB", 1ull << 40},
    };
    char unit[16], num[32];
    attr(n, "unit", unit, sizeof(unit));
    uint64_t mul = unit[0] ? 0 : 1024;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && !mul; i++)
        if (!strcmp(unit, units[i].unit))
            mul = units[i].mul;
    if (!mul)
        return hv_errf(err, "domain XML: <%s unit='%s'>: not a unit libvirt knows", n->name, unit);
    char *end;
    if (text(n, num, sizeof(num)) < 0)
        return hv_errf(err, "domain XML: <%s>: not a number", n->name);
    errno = 0;
    unsigned long long v = strtoull(num, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    if (errno || end == num || *end || !isdigit((unsigned char)num[strspn(num, " \t\n")]) ||
        (v && mul > UINT64_MAX / v))
        return hv_errf(err, "domain XML: <%s>%s</%s>: not a size in %s", n->name, num, n->name,
                       unit[0] ? unit : "KiB");
    *out = v * mul;
    return 0;
}

static int count(const char *s, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v == 0 || v > 4096 || !isdigit((unsigned char)*s))
        return -1;
    *out = (unsigned)v;
    return 0;
}

static int parse_vcpu(const xmlNode *n, struct domain_config *c, struct hv_err *err)
{
    char num[32], cur[32];
    if (text(n, num, sizeof(num)) < 0 || count(num, &c->vcpus) < 0)
        return hv_errf(err, "domain XML: <vcpu>: not a vCPU count");
    attr(n, "current", cur, sizeof(cur));
    unsigned current;
    if (cur[0] && count(cur, &current) == 0 && current < c->vcpus) {
        unsupported(c, "vcpu current='%u' of %u: hvprof has no CPU hot-plug; the guest gets %u",
                    current, c->vcpus, current);
        c->vcpus = current;
    }
    return 0;
}

static int parse_os(const xmlNode *os, struct domain_config *c, struct hv_err *err)
{
    char buf[128];
    /* Firmware (BIOS or UEFI, its loader and variables) only finds the boot loader, which
     * finds the kernel: hvprof does both from outside (docs/disk-boot.md), so the guest runs
     * the same kernel, initrd and command line without it. */
    if (xmlHasProp(os, (const xmlChar *)"firmware"))
        left_out(c, "firmware");
    for (const xmlNode *n = os->children; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        if (is(n, "type")) {
            attr(n, "arch", buf, sizeof(buf));
            if (buf[0] && strcmp(buf, "x86_64"))
                unsupported(c, "os type arch='%s': hvprof runs x86_64 guests", buf);
            if (text(n, buf, sizeof(buf)) == 0 && strcmp(buf, "hvm"))
                unsupported(c, "os type %s: hvprof runs full virtual machines (hvm)", buf);
        } else if (is(n, "kernel")) {
            if (text_field(n, c->kernel, sizeof(c->kernel), "kernel", err) < 0)
                return -1;
        } else if (is(n, "initrd")) {
            if (text_field(n, c->initrd, sizeof(c->initrd), "initrd", err) < 0)
                return -1;
        } else if (is(n, "cmdline")) {
            if (text_field(n, c->cmdline, sizeof(c->cmdline), "cmdline", err) < 0)
                return -1;
            c->has_cmdline = true;
        } else if (is(n, "loader")) {
            left_out(c, "firmware loader");
        } else if (is(n, "boot") || is(n, "bootmenu") || is(n, "smbios") || is(n, "bios") ||
                   is(n, "nvram") || is(n, "acpi") || is(n, "dtb") || is(n, "init") ||
                   is(n, "initarg") || is(n, "firmware")) {
            /* <boot>, <bootmenu> choose among firmware boot devices, meaningless with a
             * direct kernel boot (libvirt ignores them then too); the rest change what the
             * guest sees. */
            if (!is(n, "boot") && !is(n, "bootmenu"))
                unsupported(c, "os %s: not given to the guest", n->name);
        } else {
            unsupported(c, "os %s: not known to hvprof", n->name);
        }
    }
    return 0;
}

static void parse_features(const xmlNode *f, struct domain_config *c)
{
    for (const xmlNode *n = f->children; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        char state[16];
        attr(n, "state", state, sizeof(state));
        /* ACPI tables and the local APIC (with PAE, which a 64-bit guest has anyway) are what
         * hvprof gives every guest; a feature turned off is not asked for. */
        if (is(n, "acpi") || is(n, "apic") || is(n, "pae") || !strcmp(state, "off"))
            continue;
        unsupported(c, "feature %s: not given to the guest", n->name);
    }
}

static void parse_cpu(const xmlNode *cpu, struct domain_config *c)
{
    char mode[32], model[64] = "";
    attr(cpu, "mode", mode, sizeof(mode));
    for (const xmlNode *n = cpu->children; n; n = n->next) {
        if (is(n, "model")) {
            xmlChar *v = xmlNodeGetContent(n);
            shown(model, sizeof(model), (const char *)v);
            xmlFree(v);
        } else if (is(n, "numa")) {
            unsupported(c, "cpu numa: hvprof gives the guest one NUMA node");
        }
    }
    /* hvprof gives the guest the host's CPU model (KVM_GET_SUPPORTED_CPUID), what
     * host-passthrough asks for and host-model approximates. */
    if (!strcmp(mode, "host-passthrough") || !strcmp(mode, "host-model") ||
        !strcmp(mode, "maximum"))
        return;
    if (model[0] || !strcmp(mode, "custom"))
        unsupported(c, "cpu model %s: the guest sees the host's CPU model",
                    model[0] ? model : "(custom)");
}

/* A disk's target name: its place in hvprof's order (vda, vdb, ... as Linux names them). */
static int disk_cmp(const void *a, const void *b)
{
    const struct domain_disk *x = a, *y = b;
    size_t lx = strlen(x->target), ly = strlen(y->target);
    return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x->target, y->target);
}

static int parse_disk(const xmlNode *d, struct domain_config *c, struct hv_err *err)
{
    char type[32], device[32], fmt[32] = "", bus[32] = "", target[16] = "", src[96] = "";
    attr(d, "type", type, sizeof(type));
    attr(d, "device", device, sizeof(device));
    struct domain_disk disk = {0};
    bool have_src = false;
    for (const xmlNode *n = d->children; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        if (is(n, "driver")) {
            attr(n, "type", fmt, sizeof(fmt));
        } else if (is(n, "source")) {
            xmlChar *v = xmlGetProp(n, (const xmlChar *)(!strcmp(type, "block") ? "dev" : "file"));
            if (v) {
                size_t len = strlen((const char *)v);
                if (len >= sizeof(disk.path)) {
                    xmlFree(v);
                    return hv_errf(err, "domain XML: a disk's source path is longer than %zu bytes",
                                   sizeof(disk.path) - 1);
                }
                memcpy(disk.path, v, len + 1);
                have_src = len > 0;
                shown(src, sizeof(src), (const char *)v);
                xmlFree(v);
            }
        } else if (is(n, "target")) {
            attr(n, "dev", target, sizeof(target));
            attr(n, "bus", bus, sizeof(bus));
        } else if (is(n, "readonly")) {
            disk.readonly = true;
        } else if (is(n, "transient")) {
            disk.transient = true;
        } else if (is(n, "shareable")) {
            unsupported(c, "disk %s shareable: hvprof locks its images for one VM", target);
        }
        /* <backingStore>: libvirt's account of the chain the qcow2 header names, which
         * hvprof follows from the image itself (vmm/qcow/qcow_image.h). */
    }
    const char *name = target[0] ? target : "(no target)";
    if (!have_src) {
        left_out(c, "empty drive"); /* a CD-ROM or floppy drive with no medium: nothing to read */
        return 0;
    }
    c->disks_refused++; /* until it is taken below */
    if (strcmp(device[0] ? device : "disk", "disk")) {
        unsupported(c, "disk %s device='%s' (%s): hvprof gives disks only", name, device, src);
        return 0;
    }
    if (strcmp(type, "file") && strcmp(type, "block")) {
        unsupported(c, "disk %s type='%s': hvprof reads image files and block devices", name, type);
        return 0;
    }
    if (fmt[0] && strcmp(fmt, "raw") && strcmp(fmt, "qcow2")) {
        unsupported(c,
                    "disk %s: a %s image (%s); hvprof reads raw and qcow2 images: qemu-img "
                    "convert -f %s -O raw IMAGE IMAGE.raw, then point the domain or --disk at "
                    "the copy",
                    name, fmt, src, fmt);
        return 0;
    }
    if (bus[0] && strcmp(bus, "virtio"))
        unsupported(c, "disk %s bus='%s': the guest sees it as a virtio disk (/dev/vdX), not on %s",
                    name, bus, bus);
    if (c->ndisks == VM_MAX_DISKS) {
        unsupported(c, "disk %s (%s): hvprof gives at most %u disks", name, src, VM_MAX_DISKS);
        return 0;
    }
    snprintf(disk.target, sizeof(disk.target), "%s", target);
    snprintf(disk.format, sizeof(disk.format), "%s", fmt);
    c->disks[c->ndisks++] = disk;
    c->disks_refused--;
    return 0;
}

/* <devices>: disks taken, the serial console honoured, everything else listed. */
static int parse_devices(const xmlNode *devs, struct domain_config *c, struct hv_err *err)
{
    unsigned serials = 0;
    for (const xmlNode *n = devs->children; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        char type[32], model[32], buf[64];
        attr(n, "type", type, sizeof(type));
        if (is(n, "emulator"))
            continue; /* hvprof is the emulator */
        if (is(n, "disk")) {
            if (parse_disk(n, c, err) < 0)
                return -1;
        } else if (is(n, "serial")) {
            /* The first serial port is the guest's ttyS0, which hvprof gives (to --console or
             * its standard output, whatever the domain connects it to). */
            if (serials++)
                unsupported(c, "serial port %u: hvprof gives the guest one (ttyS0)", serials - 1);
        } else if (is(n, "console")) {
            const xmlNode *t = n->children;
            while (t && !is(t, "target"))
                t = t->next;
            attr(t ? t : n, "type", buf, sizeof(buf));
            if (t && buf[0] && strcmp(buf, "serial"))
                unsupported(c, "console on %s: the guest's console is its serial port", buf);
        } else if (is(n, "controller") || is(n, "input") || is(n, "graphics") || is(n, "video") ||
                   is(n, "sound") || is(n, "audio") || is(n, "memballoon") || is(n, "rng") ||
                   is(n, "channel") || is(n, "redirdev")) {
            /* Buses, human interface, display, sound, the balloon, entropy and host channels:
             * what libvirt adds to every domain. None changes what the guest's programs run
             * (a disk on a SATA or SCSI controller is judged as a disk; the guest's kernel
             * gets its entropy without a virtio-rng). */
            (void)model;
            left_out(c, (const char *)n->name);
        } else if (is(n, "interface")) {
            const xmlNode *m = n->children;
            while (m && !is(m, "mac"))
                m = m->next;
            char was[DOMAIN_LINE_MAX], mac[32] = "";
            if (m)
                attr(m, "address", mac, sizeof(mac));
            snprintf(was, sizeof(was), "interface type='%s'%s%s%s", type, m ? " (mac " : "", mac,
                     m ? ")" : "");
            /* A card the guest configures itself on whatever network it is given: one of
             * them is hvprof's card on user-mode networking; a second, or one passed through
             * from the host (hostdev, vhostuser, vdpa), is not. */
            bool nic = !strcmp(type, "user") || !strcmp(type, "network") ||
                       !strcmp(type, "bridge") || !strcmp(type, "direct") ||
                       !strcmp(type, "ethernet");
            if (nic && !c->net) {
                c->net = true;
                c->net_has_mac = mac[0] && net_mac_parse(mac, c->net_mac);
                snprintf(c->net_was, sizeof(c->net_was), "%s", was);
            } else {
                unsupported(c, "%s: %s", was,
                            nic ? "a second network card; hvprof gives the guest one"
                                : "hvprof's network card is on user-mode networking only");
            }
        } else {
            attr(n, "model", model, sizeof(model));
            if (!model[0])
                attr(n, "bus", model, sizeof(model));
            for (const xmlNode *m = n->children; m && !model[0]; m = m->next)
                if (is(m, "model"))
                    attr(m, "type", model, sizeof(model));
            unsupported(c, "%s%s%s%s%s: hvprof has no such device", n->name, type[0] ? " " : "",
                        type, model[0] ? " " : "", model);
        }
    }
    return 0;
}

static int parse_domain(const xmlNode *root, struct domain_config *c, struct hv_err *err)
{
    uint64_t current = 0;
    bool have_mem = false, have_vcpu = false;
    for (const xmlNode *n = root->children; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        int rc = 0;
        if (is(n, "name")) {
            xmlChar *v = xmlNodeGetContent(n);
            shown(c->name, sizeof(c->name), (const char *)v);
            xmlFree(v);
        } else if (is(n, "memory")) {
            rc = memory_bytes(n, &c->mem_bytes, err);
            have_mem = true;
        } else if (is(n, "currentMemory")) {
            rc = memory_bytes(n, &current, err);
        } else if (is(n, "maxMemory")) {
            unsupported(c, "maxMemory: hvprof has no memory hot-plug");
        } else if (is(n, "vcpu")) {
            rc = parse_vcpu(n, c, err);
            have_vcpu = true;
        } else if (is(n, "os")) {
            rc = parse_os(n, c, err);
        } else if (is(n, "features")) {
            parse_features(n, c);
        } else if (is(n, "cpu")) {
            parse_cpu(n, c);
        } else if (is(n, "devices")) {
            rc = parse_devices(n, c, err);
        } else if (is(n, "sysinfo")) {
            unsupported(c, "sysinfo: hvprof gives the guest no SMBIOS tables");
        } else if (is(n, "launchSecurity")) {
            unsupported(c, "launchSecurity: hvprof runs no confidential guests");
        } else if (is(n, "uuid") || is(n, "genid") || is(n, "title") || is(n, "description") ||
                   is(n, "metadata") || is(n, "clock") || is(n, "on_poweroff") ||
                   is(n, "on_reboot") || is(n, "on_crash") || is(n, "on_lockfailure") ||
                   is(n, "pm") || is(n, "cputune") || is(n, "memtune") || is(n, "blkiotune") ||
                   is(n, "numatune") || is(n, "iothreads") || is(n, "iothreadids") ||
                   is(n, "vcpus") || is(n, "resource") || is(n, "seclabel") ||
                   is(n, "memoryBacking") || is(n, "perf") || is(n, "keywrap") || is(n, "idmap") ||
                   is(n, "throttlegroups")) {
            /* What the domain is called and how its host schedules, pins, secures and ends it:
             * nothing the guest sees (a guest's reboot or power-off ends hvprof's run). */
        } else {
            unsupported(c, "%s: not known to hvprof", n->name);
        }
        if (rc < 0)
            return -1;
    }
    if (!have_mem || !have_vcpu)
        return hv_errf(err, "domain XML: no <%s>", have_mem ? "vcpu" : "memory");
    if (current && current < c->mem_bytes)
        unsupported(c,
                    "currentMemory %llu MiB of %llu: hvprof has no balloon; the guest gets "
                    "all %llu MiB",
                    (unsigned long long)(current >> 20), (unsigned long long)(c->mem_bytes >> 20),
                    (unsigned long long)(c->mem_bytes >> 20));
    /* A firmware boot from a disk: the disk's own boot entry (run_opts.c); with no disk
     * there is nothing to boot. */
    if (!c->kernel[0] && !c->ndisks)
        unsupported(c, "no <os><kernel> and no disk: nothing to boot");
    qsort(c->disks, c->ndisks, sizeof(c->disks[0]), disk_cmp);
    return 0;
}

int domain_xml_parse(const char *xml, size_t len, struct domain_config *c, struct hv_err *err)
{
    memset(c, 0, sizeof(*c));
    if (len > 16u << 20)
        return hv_errk(err, HV_ERR_LIMIT, "domain XML: %zu bytes, more than any domain definition",
                       len);
    /* No network, no entity substitution, no DTD loading: nothing outside the text is read. */
    xmlDoc *doc = xmlReadMemory(xml, (int)len, "domain.xml", NULL,
                                XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!doc) {
        const xmlError *e = xmlGetLastError();
        char why[160];
        shown(why, sizeof(why), e && e->message ? e->message : "not XML");
        size_t n = strlen(why);
        while (n && (why[n - 1] == '?' || isspace((unsigned char)why[n - 1])))
            why[--n] = 0; /* libxml2 ends its messages with a newline */
        return hv_errf(err, "domain XML: line %d: %s", e ? e->line : 0, why);
    }
    const xmlNode *root = xmlDocGetRootElement(doc);
    int rc;
    if (!root || !is(root, "domain")) {
        char what[64];
        shown(what, sizeof(what), root ? (const char *)root->name : "(none)");
        rc = hv_errf(err, "domain XML: the root element is <%s>, not <domain>", what);
    } else
        rc = parse_domain(root, c, err);
    xmlFreeDoc(doc);
    return rc;
}

bool domain_bootable(const struct domain_config *c)
{
    return c->kernel[0] != 0;
}
