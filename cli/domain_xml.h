/* A libvirt domain definition (its XML, as virDomainGetXMLDesc returns it; the format is
 * https://libvirt.org/formatdomain.html) turned into what hvprof boots: memory, vCPUs, the
 * direct kernel boot (<os><kernel>, <initrd>, <cmdline>) and raw file or block disks. Devices
 * that do not change what the guest runs (controllers, input, graphics, video, sound, balloon,
 * RNG, channels, empty drives: what libvirt and virt-install add to every domain) are left out
 * and counted. Everything else the definition asks for that hvprof cannot give the guest (a
 * network interface, a qcow2 disk, UEFI firmware, ...) is listed, one line each, so the caller
 * can refuse the domain with the whole list at once or proceed without them; a disk is never
 * dropped that way (docs/libvirt.md).
 *
 * The XML is untrusted input: parsed with libxml2 without network access or entity
 * substitution, with every string bounded (domain_xml_fuzz). */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "vmm/disks.h"

#define DOMAIN_MAX_UNSUPPORTED 32
#define DOMAIN_LINE_MAX        200
#define DOMAIN_MAX_LEFT_OUT    16

struct domain_disk {
    char path[PATH_MAX];
    char target[16]; /* the name the domain gives it (vda, ...); hvprof's order follows it */
    bool readonly;   /* <readonly/>: writes refused */
    bool transient;  /* <transient/>: writes kept in a private overlay, dropped at exit */
    char format[8];  /* <driver type=...>: "raw", "qcow2", or "" (not given: probed, and said) */
};

struct domain_config {
    char name[128];
    uint64_t mem_bytes;
    unsigned vcpus;
    char kernel[PATH_MAX], initrd[PATH_MAX]; /* "" when absent */
    char cmdline[4096];
    bool has_cmdline;
    struct domain_disk disks[VM_MAX_DISKS];
    unsigned ndisks;
    /* Its first network interface (a user, network, bridge, direct or ethernet one): given as
     * hvprof's card on user-mode networking, with the interface's MAC (docs/net.md). */
    bool net;
    bool net_has_mac;
    uint8_t net_mac[6];
    char net_was[DOMAIN_LINE_MAX]; /* "interface type='network' (mac 52:54:00:..)" */
    /* What hvprof cannot honour, one human-readable line each ("interface type=network (mac
     * 52:54:00:..): hvprof gives the guest no network device"). */
    char unsupported[DOMAIN_MAX_UNSUPPORTED][DOMAIN_LINE_MAX];
    unsigned nunsupported;
    unsigned unsupported_dropped; /* lines past DOMAIN_MAX_UNSUPPORTED */
    /* Disks the domain has that hvprof cannot give (among the lines above): never dropped
     * silently, whatever --libvirt-ignore-unsupported says. */
    unsigned disks_refused;
    /* Devices left out because they do not change what the guest runs (controllers, input,
     * graphics, video, sound, memballoon, RNG, channels, empty drives): kinds and counts. */
    struct {
        char kind[24];
        unsigned n;
    } left_out[DOMAIN_MAX_LEFT_OUT];
    unsigned nleft_out;
};

/* One line naming what was left out ("9 controllers, graphics, video, 2 channels"), "" if
 * nothing. */
void domain_left_out_line(const struct domain_config *c, char *out, size_t cap);

/* Parses `len` bytes of domain XML into `c`. Fails (with a message) only when the text is not
 * a domain at all or a value is malformed (a memory size that is not a number, ...); what hvprof
 * cannot honour goes to c->unsupported, and a domain with nothing to boot (no <kernel>: firmware
 * boot) is one of those lines too. */
int domain_xml_parse(const char *xml, size_t len, struct domain_config *c, struct hv_err *err);

/* True when the domain gives hvprof a kernel to boot (without one it cannot run, whatever
 * --libvirt-ignore-unsupported says). */
bool domain_bootable(const struct domain_config *c);
