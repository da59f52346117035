/* --libvirt (docs/libvirt.md): the domain XML reader on a domain as virt-install leaves it and on
 * hostile text, then `hvprof record --libvirt` end to end through libvirt's own test driver
 * (test:///FILE defines domains from a file, no daemon), booting the test guest on real KVM. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/files.h"
#include "cli/domain_xml.h"
#include "tests/common/need_kvm.h"
#include "tests/common/run_cmd.h"

static const char *hvprof_bin;
static char tmpdir[64];

static char *slurp(const char *path, size_t *len)
{
    uint8_t *buf;
    struct hv_err err;
    if (hv_read_file(path, 1 << 20, &buf, len, &err) < 0)
        fail_msg("%s", err.msg);
    return (char *)buf;
}

static int parse(const char *xml, struct domain_config *c, struct hv_err *err)
{
    return domain_xml_parse(xml, strlen(xml), c, err);
}

/* cli/tests/fixtures/NAME, parsed without an error. */
static void parse_fixture(const char *name, struct domain_config *c)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/cli/tests/fixtures/%s", getenv("HVPROF_SOURCE_DIR"), name);
    size_t len;
    char *xml = slurp(path, &len);
    struct hv_err err = {0};
    assert_int_equal(domain_xml_parse(xml, len, c, &err), 0);
    free(xml);
}

/* Everything the fixture asks for, taken or listed, exactly. */
static void test_virt_install_domain(void **state)
{
    (void)state;
    static struct domain_config c;
    parse_fixture("domain-cloud.xml", &c);
    assert_string_equal(c.name, "debian12-cloud");
    assert_true(c.mem_bytes == 2ull << 30); /* <memory unit='KiB'>2097152 */
    assert_int_equal(c.vcpus, 2);           /* current='2' of 4 */
    assert_string_equal(c.kernel, "/var/lib/libvirt/boot/vmlinuz-6.1.0-28-cloud-amd64");
    assert_string_equal(c.initrd, "/var/lib/libvirt/boot/initrd.img-6.1.0-28-cloud-amd64");
    assert_true(c.has_cmdline);
    assert_string_equal(c.cmdline, "root=/dev/vda1 ro console=ttyS0");
    assert_true(domain_bootable(&c));
    /* In target order (vdb comes first in the XML), the qcow2 taken, the empty CD-ROM drive left
     * out. */
    assert_int_equal(c.ndisks, 3);
    assert_string_equal(c.disks[0].target, "vda");
    assert_string_equal(c.disks[0].path, "/var/lib/libvirt/images/debian12.raw");
    assert_false(c.disks[0].readonly || c.disks[0].transient);
    assert_string_equal(c.disks[1].target, "vdb");
    assert_true(c.disks[1].transient);
    assert_string_equal(c.disks[2].target, "vdc");
    assert_string_equal(c.disks[2].path, "/var/lib/libvirt/images/data.qcow2");
    static const char *const want[] = {
        "vcpu current='2' of 4: hvprof has no CPU hot-plug; the guest gets 2",
        "currentMemory 1024 MiB of 2048: hvprof has no balloon; the guest gets all 2048 MiB",
    };
    assert_int_equal(c.nunsupported, sizeof(want) / sizeof(want[0]));
    for (unsigned i = 0; i < c.nunsupported; i++)
        assert_string_equal(c.unsupported[i], want[i]);
    /* Its network interface: hvprof's card, with its MAC (docs/net.md). */
    assert_true(c.net && c.net_has_mac);
    static const uint8_t mac[6] = {0x52, 0x54, 0x00, 0x6b, 0x3c, 0x58};
    assert_memory_equal(c.net_mac, mac, 6);
    assert_string_equal(c.net_was, "interface type='network' (mac 52:54:00:6b:3c:58)");
    /* Every disk given; what virt-install adds is left out. */
    assert_int_equal(c.disks_refused, 0);
    char lo[DOMAIN_LINE_MAX];
    domain_left_out_line(&c, lo, sizeof(lo));
    print_message("left out: %s\n", lo);
    assert_string_equal(lo, "empty drive, 3 controllers, channel, 2 inputs, graphics, video, "
                            "memballoon, rng");
}

/* A domain exactly as a live libvirtd (9.0, qemu:///system) keeps it after virt-install 4.1
 * (`--import --boot uefi --osinfo debian11 --disk ...qcow2 --network user`) defined it: q35,
 * UEFI firmware, a qcow2 disk, 14 PCIe root ports and the rest libvirt adds. Nothing refused:
 * the disk's own boot entry is booted, its interface is hvprof's card with its MAC, and all
 * that does not change what the guest runs is left out in one line. */
static void test_live_libvirtd_uefi_domain(void **state)
{
    (void)state;
    static struct domain_config c;
    parse_fixture("domain-virt-install-uefi.xml", &c);
    assert_string_equal(c.name, "debian13");
    assert_true(c.mem_bytes == 1ull << 30);
    assert_int_equal(c.vcpus, 1);
    assert_false(domain_bootable(&c)); /* no kernel: the disk's boot entry (docs/disk-boot.md) */
    assert_int_equal(c.ndisks, 1);
    assert_string_equal(c.disks[0].target, "vda");
    assert_string_equal(c.disks[0].path, "/var/lib/libvirt/images/debian13.qcow2");
    assert_int_equal(c.disks_refused, 0);
    assert_int_equal(c.nunsupported, 0);
    assert_true(c.net && c.net_has_mac);
    static const uint8_t mac[6] = {0x52, 0x54, 0x00, 0x78, 0x5c, 0xfc};
    assert_memory_equal(c.net_mac, mac, 6);
    assert_string_equal(c.net_was, "interface type='user' (mac 52:54:00:78:5c:fc)");
    char lo[DOMAIN_LINE_MAX];
    domain_left_out_line(&c, lo, sizeof(lo));
    print_message("left out: %s\n", lo);
    assert_string_equal(lo, "firmware, 18 controllers, channel, 2 inputs, audio, memballoon, rng");
}

static void test_minimal_and_units(void **state)
{
    (void)state;
    static struct domain_config c;
    struct hv_err err = {0};
    assert_int_equal(parse("<domain><name>m</name><memory unit='G'>1</memory><vcpu>3</vcpu>"
                           "<os><type>hvm</type><kernel>/k</kernel></os></domain>",
                           &c, &err),
                     0);
    assert_true(c.mem_bytes == 1ull << 30);
    assert_int_equal(c.vcpus, 3);
    assert_int_equal(c.nunsupported, 0);
    assert_false(c.has_cmdline);
    assert_string_equal(c.initrd, "");
    /* formatdomain.html: KB is 1000 bytes, k and KiB 1024, no unit KiB. */
    assert_int_equal(
        parse("<domain><memory unit='KB'>1000</memory><vcpu>1</vcpu></domain>", &c, &err), 0);
    assert_true(c.mem_bytes == 1000000);
    assert_int_equal(parse("<domain><memory> 300 </memory><vcpu>1</vcpu></domain>", &c, &err), 0);
    assert_true(c.mem_bytes == 300 * 1024);
    /* Without a kernel or a disk: nothing to boot, listed. */
    assert_false(domain_bootable(&c));
    assert_int_equal(c.nunsupported, 1);
    assert_string_equal(c.unsupported[0], "no <os><kernel> and no disk: nothing to boot");
    /* UEFI firmware booting a disk (virt-install's default): the firmware is left out, the
     * disk's own boot entry is booted (docs/disk-boot.md); nothing refused. */
    assert_int_equal(parse("<domain><memory>300</memory><vcpu>1</vcpu><os firmware='efi'>"
                           "<type>hvm</type><loader readonly='yes' type='pflash'>"
                           "/usr/share/OVMF/OVMF_CODE.fd</loader><boot dev='hd'/></os><devices>"
                           "<disk type='file' device='disk'><driver name='qemu' type='qcow2'/>"
                           "<source file='/var/lib/libvirt/images/debian.qcow2'/>"
                           "<target dev='vda' bus='virtio'/></disk></devices></domain>",
                           &c, &err),
                     0);
    assert_false(domain_bootable(&c));
    assert_int_equal(c.nunsupported, 0);
    assert_int_equal(c.ndisks, 1);
    char lo[DOMAIN_LINE_MAX];
    domain_left_out_line(&c, lo, sizeof(lo));
    assert_string_equal(lo, "firmware, firmware loader");
}

/* Malformed and hostile definitions: a message, never a crash or a file read. */
static void test_hostile(void **state)
{
    (void)state;
    static struct domain_config c;
    struct hv_err err = {0};
    assert_int_equal(parse("not xml at all", &c, &err), -1);
    assert_non_null(strstr(err.msg, "domain XML: line 1: "));
    assert_int_equal(parse("<node><domain/></node>", &c, &err), -1);
    assert_string_equal(err.msg, "domain XML: the root element is <node>, not <domain>");
    assert_int_equal(parse("<domain><vcpu>1</vcpu></domain>", &c, &err), -1);
    assert_string_equal(err.msg, "domain XML: no <memory>");
    assert_int_equal(parse("<domain><memory>-5</memory><vcpu>1</vcpu></domain>", &c, &err), -1);
    assert_string_equal(err.msg, "domain XML: <memory>-5</memory>: not a size in KiB");
    assert_int_equal(parse("<domain><memory unit='TiB'>99999999999</memory><vcpu>1</vcpu>"
                           "</domain>",
                           &c, &err),
                     -1);
    assert_int_equal(
        parse("<domain><memory unit='furlong'>1</memory><vcpu>1</vcpu></domain>", &c, &err), -1);
    assert_string_equal(err.msg, "domain XML: <memory unit='furlong'>: not a unit libvirt knows");
    assert_int_equal(parse("<domain><memory>1</memory><vcpu>0</vcpu></domain>", &c, &err), -1);
    assert_string_equal(err.msg, "domain XML: <vcpu>: not a vCPU count");
    /* A kernel path longer than a path: refused, not cut. */
    size_t n = 8000;
    char *big = malloc(n + 200);
    assert_non_null(big);
    int at = sprintf(big, "<domain><memory>1</memory><vcpu>1</vcpu><os><kernel>");
    memset(big + at, 'a', n);
    strcpy(big + at + n, "</kernel></os></domain>");
    assert_int_equal(parse(big, &c, &err), -1);
    assert_non_null(strstr(err.msg, "<kernel> is longer than"));
    free(big);
    /* An external entity is never read (no substitution, no network, no DTD loading). */
    assert_int_equal(parse("<?xml version='1.0'?><!DOCTYPE domain [<!ENTITY x SYSTEM "
                           "'file:///etc/hostname'>]><domain><memory>1</memory><vcpu>1</vcpu>"
                           "<os><kernel>/k&x;</kernel></os></domain>",
                           &c, &err),
                     0);
    assert_string_equal(c.kernel, "/k");
    /* XML 1.0 has no ESC; the control characters it has (DEL, tab) and non-ASCII letters are
     * shown as '?'. */
    assert_int_equal(parse("<domain><name>a&#27;[2J</name><memory>1</memory><vcpu>1</vcpu>"
                           "</domain>",
                           &c, &err),
                     -1);
    assert_int_equal(parse("<domain><name>a&#x7f;b&#9;c\xc3\xa9</name><memory>1</memory>"
                           "<vcpu>1</vcpu></domain>",
                           &c, &err),
                     0);
    assert_string_equal(c.name, "a?b?c??");
    /* More than a list holds: counted, not dropped silently. */
    char many[8192];
    at = sprintf(many, "<domain><memory>1</memory><vcpu>1</vcpu><os><kernel>/k</kernel></os>"
                       "<devices>");
    for (int i = 0; i < 40; i++)
        at += sprintf(many + at, "<watchdog model='i6300esb'/>");
    strcpy(many + at, "</devices></domain>");
    assert_int_equal(parse(many, &c, &err), 0);
    assert_int_equal(c.nunsupported, DOMAIN_MAX_UNSUPPORTED);
    assert_int_equal(c.unsupported_dropped, 40 - DOMAIN_MAX_UNSUPPORTED);
}

/* hvprof's exit status; its stderr (and stdout) into out. */
static int run_hvprof(const char *args, char *out, size_t cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "'%s' %s", hvprof_bin, args);
    int rc = hv_run_cmd(cmd, out, cap);
    assert_true(rc >= 0);
    return rc;
}

static void write_node(const char *path, const char *domains)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "<node>\n%s</node>\n", domains);
    fclose(f);
}

/* The test guest as a libvirt domain, through the test driver. */
static void test_record_libvirt_domain(void **state)
{
    (void)state;
    hv_need_kvm("test_record_libvirt_domain");
    const char *guest = getenv("HVPROF_BINARY_DIR");
    assert_non_null(guest);
    char node[128], disk[128], rec[128], dom[8192], args[2048];
    static char out[1 << 16];
    snprintf(node, sizeof(node), "%s/node.xml", tmpdir);
    snprintf(disk, sizeof(disk), "%s/disk.raw", tmpdir);
    snprintf(rec, sizeof(rec), "%s/rec.fxt", tmpdir);
    int fd = open(disk, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0 && ftruncate(fd, 1 << 20) == 0);
    close(fd);
    /* hvtest is shut off (the test driver's domains run unless told otherwise); running is the
     * same domain, running. */
#define DOMAIN_FMT                                                                                 \
    "<domain type='kvm' xmlns:test='http://libvirt.org/schemas/domain/test/1.0'>"                  \
    "<name>%s</name><memory unit='MiB'>96</memory>"                                                \
    "<vcpu>2</vcpu><os><type arch='x86_64'>hvm</type>"                                             \
    "<kernel>%s/tests/guest/hvprof-guest.elf</kernel>"                                             \
    "<initrd>%s/tests/guest/hvprof-guest.cpio</initrd></os>"                                       \
    "<devices><disk type='file' device='disk'><driver name='qemu' type='raw'/>"                    \
    "<source file='%s'/><target dev='vda' bus='virtio'/></disk>"                                   \
    "<interface type='network'><mac address='52:54:00:00:00:01'/>"                                 \
    "<source network='default'/></interface><watchdog model='i6300esb' action='reset'/>"           \
    "</devices>%s</domain>\n"
    int len = snprintf(dom, sizeof(dom), DOMAIN_FMT, "hvtest", guest, guest, disk,
                       "<test:runstate>5</test:runstate>");
    len += snprintf(dom + len, sizeof(dom) - (size_t)len, DOMAIN_FMT, "running", guest, guest, disk,
                    "");
    len += snprintf(dom + len, sizeof(dom) - (size_t)len,
                    "<domain type='kvm'><name>firmware</name><memory unit='MiB'>96</memory>"
                    "<vcpu>1</vcpu><os><type>hvm</type><boot dev='hd'/></os></domain>\n");
    /* A VMDK disk, and what libvirt adds to every domain. */
    snprintf(dom + len, sizeof(dom) - (size_t)len,
             "<domain type='kvm'><name>qcow</name><memory unit='MiB'>96</memory>"
             "<vcpu>1</vcpu><os><type>hvm</type><kernel>%s/tests/guest/hvprof-guest.elf</kernel>"
             "</os><devices><disk type='file' device='disk'><driver name='qemu' type='vmdk'/>"
             "<source file='%s.vmdk'/><target dev='vdb' bus='virtio'/></disk>"
             "<controller type='pci' model='pcie-root-port'/>"
             "<controller type='pci' model='pcie-root-port'/><controller type='sata'/>"
             "<audio id='1' type='none'/><video><model type='virtio'/></video>"
             "</devices></domain>\n",
             guest, disk);
    write_node(node, dom);

    /* What hvprof cannot give, listed, and no run. */
    snprintf(args, sizeof(args), "record -o %s --libvirt hvtest --connect test://%s", rec, node);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "hvprof record: libvirt domain 'hvtest': cannot be given: "
                                "watchdog i6300esb: hvprof has no such device\n"));
    assert_non_null(strstr(out, "hvprof record: --libvirt hvtest: 1 thing(s) in the domain that "
                                "hvprof cannot give the guest (listed above); "
                                "--libvirt-ignore-unsupported boots it without them\n"));
    assert_int_equal(access(rec, F_OK), -1);

    /* Booted without them: the domain's vCPUs and disk. */
    snprintf(args, sizeof(args),
             "record -o %s --libvirt hvtest --connect test://%s --libvirt-ignore-unsupported "
             "--timeout 60",
             rec, node);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "left out: watchdog i6300esb"));
    /* The interface: the test guest's card, on user-mode networking, with the domain's MAC. */
    /* ... on the most closed user network: a libvirt network hvprof cannot join becomes one
     * that reaches nothing, and the note says so. */
    assert_non_null(strstr(out, "hvprof record: libvirt domain 'hvtest': interface "
                                "type='network' (mac 52:54:00:00:00:01) given as user-mode "
                                "networking with restrict=on: "));
    assert_non_null(strstr(out, "reaches nothing outside the VM"));
    assert_non_null(strstr(out, "  net: user-mode networking (libslirp, restrict=on); 0 frames "
                                "from the guest"));
    assert_non_null(strstr(out, "cpu mode, 2 vCPUs"));
    char want[1024];
    snprintf(want, sizeof(want), "  disk vda %s: ", disk);
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "hvprof-guest: status 0"));
    struct stat st;
    assert_int_equal(stat(rec, &st), 0);
    assert_true(st.st_size > 4096);

    /* A running domain's disk is not written by a second VM: refused, unless the guest's
     * writes go to the private overlay. */
    snprintf(args, sizeof(args),
             "run --libvirt running --connect test://%s --libvirt-ignore-unsupported --timeout 60",
             node);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 2);
    snprintf(want, sizeof(want),
             "hvprof run: --libvirt running: libvirt reports the domain running, and its disk %s "
             "would be written by two VMs at once: shut the domain down first, or give --disk "
             "%s,readonly (the guest's writes then go to a private overlay)\n",
             disk, disk);
    assert_non_null(strstr(out, want));
    /* The same check when --disk names the disks instead (the same image, here). */
    snprintf(args, sizeof(args),
             "run --libvirt running --connect test://%s --libvirt-ignore-unsupported --timeout 60 "
             "--disk %s",
             node, disk);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "libvirt reports the domain running, and its disk"));
    snprintf(args, sizeof(args),
             "run --libvirt running --connect test://%s --libvirt-ignore-unsupported --timeout 60 "
             "--disk %s,readonly",
             node, disk);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "hvprof-guest: status 0"));
    /* A remote libvirt: its disk paths are that host's files; refused before any connection. */
    assert_int_equal(run_hvprof("run --libvirt web --connect qemu+ssh://root@db7.example.invalid/"
                                "system",
                                out, sizeof(out)),
                     2);
    assert_non_null(strstr(out, "hvprof run: --connect qemu+ssh://root@db7.example.invalid/system: "
                                "a libvirt on another host (db7.example.invalid): its domains' "
                                "disks are files there, not here"));

    /* The command line wins over the domain. */
    snprintf(args, sizeof(args),
             "record -o %s --libvirt hvtest --connect test://%s --libvirt-ignore-unsupported "
             "--vcpus 1 --timeout 60",
             rec, node);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "cpu mode, 1 vCPU\n"));

    /* Nothing to boot, no such domain, no such connection, options that need --libvirt. */
    snprintf(args, sizeof(args), "run --libvirt firmware --connect test://%s", node);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "hvprof run: --libvirt firmware: the domain has no <os><kernel> "
                                "and no disk to boot: give --kernel, or --disk with an image "
                                "that boots (docs/disk-boot.md)\n"));
    /* A disk is never left out: the domain is refused even when told to ignore what hvprof
     * cannot give; what does not change the guest is left out in one line. */
    snprintf(args, sizeof(args),
             "run --libvirt qcow --connect test://%s --libvirt-ignore-unsupported --timeout 60",
             node);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "hvprof run: libvirt domain 'qcow': left out, as they do not "
                                "change what the guest runs: 3 controllers, audio, video\n"));
    assert_non_null(strstr(out, "hvprof run: --libvirt qcow: 1 of the domain's disks cannot be "
                                "given (listed above); hvprof does not boot a domain without its "
                                "disks (--disk gives them, converted to raw)\n"));
    snprintf(args, sizeof(args), "run --libvirt nosuch --connect test://%s", node);
    assert_int_equal(run_hvprof(args, out, sizeof(out)), 2);
    snprintf(want, sizeof(want), "hvprof run: --libvirt: no domain 'nosuch' on test://%s\n", node);
    assert_string_equal(out, want);
    assert_int_equal(
        run_hvprof("run --libvirt x --connect test:///nonexistent.xml", out, sizeof(out)), 2);
    assert_non_null(strstr(out, "hvprof run: --connect test:///nonexistent.xml: "));
    assert_int_equal(run_hvprof("run --connect test:///default --guest demo", out, sizeof(out)), 2);
    assert_string_equal(out, "hvprof run: --connect without --libvirt DOMAIN\n");
    unlink(rec);
    unlink(disk);
    unlink(node);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s HVPROF\n", argv[0]);
        return 2;
    }
    hvprof_bin = argv[1];
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/hvprof-libvirt-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_virt_install_domain),
        cmocka_unit_test(test_live_libvirtd_uefi_domain),
        cmocka_unit_test(test_minimal_and_units),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_record_libvirt_domain),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(tmpdir);
    return rc;
}
