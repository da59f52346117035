#include "cli/run_opts.h"
#include "cli/disk_boot.h"
#include "cli/disk_notes.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/libvirt_domain.h"
#include "cli/options.h"
#include "cli/parse.h"
#include "vmm/qcow/qcow_image.h"
#include "common/files.h"
#include "common/output.h"
#include "vmm/boot/layout.h"

#define DEMO_KERNEL "hvprof-guest.elf"
#define DEMO_INITRD "hvprof-guest.cpio"

/* The help's numbers are the code's (checked here at build time). */
_Static_assert(BOOT_MAX_CPUS == 1024u, "--vcpus's help says at most 1024");
_Static_assert(VM_MAX_DISKS == 4u, "--disk's help says at most 4");
_Static_assert(RUN_DEFAULT_MEM == 256ull << 20, "--mem's help says 256M");

static const struct cli_option run_options[] = {
    {RUN_OPT_GUEST, "guest", 0, "demo", "the built-in test guest (kernel + its boot archive)"},
    {RUN_OPT_KERNEL, "kernel", 0, "FILE", "an ELF64 kernel (hvprof boot ABI) or a Linux bzImage"},
    {RUN_OPT_INITRD, "initrd", 0, "FILE",
     "boot archive / initramfs (default with --guest demo: hvprof-guest.cpio)"},
    {RUN_OPT_CMDLINE, "cmdline", 0, "STR", "kernel command line"},
    {RUN_OPT_VCPUS, "vcpus", 0, "N", "virtual CPUs (default 1, at most 1024)"},
    {RUN_OPT_MEM, "mem", 0, "SIZE", "guest RAM, e.g. 256M, 1G (default 256M, minimum 16M)"},
    {RUN_OPT_CONSOLE, "console", 0, "FILE",
     "write the guest's serial console to FILE, - for stdout (the\n"
     "default; record on a terminal: FILE.console beside the recording)"},
    {RUN_OPT_CONSOLE_MAX, "console-max", 0, "SIZE",
     "write at most SIZE of it (default 64M); a note marks the cut"},
    {RUN_OPT_FORCE, "force", 0, NULL,
     "replace an existing output that is not a recording (an\n"
     "existing recording is kept as FILE.old without it)"},
    {RUN_OPT_USER, "user", 0, "NAME",
     "once set up, run as NAME (default: the user sudo ran hvprof\n"
     "for); confined either way: no capabilities, seccomp per\n"
     "thread (docs/security.md)"},
    {RUN_OPT_NO_SANDBOX, "no-sandbox", 0, NULL,
     "do not confine hvprof (debugging only: said loudly)"},
    {RUN_OPT_TIMEOUT, "timeout", 0, "S",
     "stop the guest after S seconds (e.g. 10, 1.5s, 500ms); exit status 124"},
    {RUN_OPT_DISK, "disk", 0, "FILE[,format=raw|qcow2][,readonly]",
     "a raw or qcow2 disk image as a virtio block device\n"
     "(/dev/vda, vdb, ...; at most 4; docs/virtio.md); format= pins\n"
     "the format (else probed, and said); a qcow2 image's backing\n"
     "files must state their format (backing-format=qcow2 says it)\n"
     "and lie beside it (backing-dir=DIR allows another;\n"
     "docs/security.md); with no --kernel, the disk boots its own\n"
     "default boot entry (GRUB's grub.cfg or BLS entries on\n"
     "ext2/3/4; docs/disk-boot.md)"},
    {RUN_OPT_BOOT_ENTRY, "boot-entry", 0, "E",
     "that entry instead: a position (\"1>2\"), title or id"},
    {RUN_OPT_NET, "net", 0, "user[,hostfwd=tcp:127.0.0.1:8080-:80]...",
     "a virtio network card on user-mode networking (libslirp,\n"
     "QEMU's -netdev user: guest 10.0.2.15 by DHCP), host ports\n"
     "forwarded in; also mac=ADDR, restrict=on (nothing reached\n"
     "but what is forwarded), host=on (the host's own addresses;\n"
     "docs/net.md)"},
    {RUN_OPT_LIBVIRT, "libvirt", 0, "DOMAIN",
     "boot a libvirt domain as it is defined: memory, vCPUs,\n"
     "kernel, initrd, command line, disks (options given here win;\n"
     "docs/libvirt.md; a build without libvirt says so)"},
    {RUN_OPT_CONNECT, "connect", 0, "URI",
     "the libvirt connection (qemu:///system, test:///FILE.xml, ...)"},
    {RUN_OPT_LIBVIRT_IGNORE, "libvirt-ignore-unsupported", 0, NULL,
     "boot the domain without what hvprof cannot give it"},
};

const struct cli_group run_opts_group = CLI_GROUP("guest options", run_options);

void run_opts_init(struct run_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->vcpus = RUN_DEFAULT_VCPUS;
    o->mem_bytes = RUN_DEFAULT_MEM;
    o->prog = "hvprof";
}

int run_opts_handle(struct run_opts *o, int opt, const char *arg, struct hv_err *err)
{
    uint64_t v;
    switch (opt) {
    case RUN_OPT_GUEST:
        if (strcmp(arg, "demo"))
            return hv_errf(err, "--guest: unknown guest '%.64s' (the only built-in one is 'demo')",
                           arg);
        o->guest = arg;
        return 1;
    case RUN_OPT_KERNEL:
        o->kernel = arg;
        return 1;
    case RUN_OPT_INITRD:
        o->initrd = arg;
        return 1;
    case RUN_OPT_CMDLINE:
        o->cmdline = arg;
        return 1;
    case RUN_OPT_VCPUS:
        if (parse_uint(arg, "--vcpus", 1, BOOT_MAX_CPUS, &v, err) < 0)
            return -1;
        o->vcpus = (unsigned)v;
        o->vcpus_given = true;
        return 1;
    case RUN_OPT_MEM:
        if (parse_size(arg, "--mem", RUN_MIN_MEM, BOOT_MAX_MEM_BYTES, &v, err) < 0)
            return -1;
        if (v & 0xfff)
            return hv_errf(err, "--mem: %.64s is not a multiple of 4K", arg);
        o->mem_bytes = v;
        o->mem_given = true;
        return 1;
    case RUN_OPT_CONSOLE:
        o->console = arg;
        return 1;
    case RUN_OPT_BOOT_ENTRY:
        o->boot_entry = arg;
        return 1;
    case RUN_OPT_NET:
        if (o->net.enabled)
            return hv_errf(err, "--net: one network card (give its hostfwd rules in one --net)");
        return net_spec_parse(arg, &o->net, err) < 0 ? -1 : 1;
    case RUN_OPT_CONSOLE_MAX:
        if (parse_size(arg, "--console-max", 4096, 1ull << 50, &v, err) < 0)
            return -1;
        o->console_max = v;
        return 1;
    case RUN_OPT_DISK: {
        if (o->ndisks == VM_MAX_DISKS)
            return hv_errf(err, "--disk: at most %u disks", VM_MAX_DISKS);
        struct disk_spec *ds = &o->disk_spec[o->ndisks];
        if (disk_spec_parse(arg, ds, err) < 0)
            return -1;
        /* "readonly": the image is never written; the guest still may, into a private
         * overlay (docs/virtio.md), as a distribution's root file system expects. */
        o->disks[o->ndisks] = (struct vm_disk){
            .path = ds->path,
            .mode = ds->readonly ? VIRTIO_BLK_OVERLAY : VIRTIO_BLK_RW,
            .image = {.format = ds->format,
                      .backing_format = ds->backing_format[0] ? ds->backing_format : NULL,
                      .backing_dir = ds->backing_dir[0] ? ds->backing_dir : NULL},
        };
        o->ndisks++;
        return 1;
    }
    case RUN_OPT_LIBVIRT:
        o->libvirt = arg;
        return 1;
    case RUN_OPT_FORCE:
        o->force = true;
        return 1;
    case RUN_OPT_NO_SANDBOX:
        o->no_sandbox = true;
        return 1;
    case RUN_OPT_USER:
        o->user = arg;
        return 1;
    case RUN_OPT_CONNECT:
        o->connect = arg;
        return 1;
    case RUN_OPT_LIBVIRT_IGNORE:
        o->libvirt_ignore = true;
        return 1;
    case RUN_OPT_TIMEOUT:
        /* Up to a week; a zero timeout would mean "none", so the minimum is 1 ms. */
        if (parse_duration_ns(arg, "--timeout", 1000000ull, 7ull * 24 * 3600 * 1000000000ull, &v,
                              err) < 0)
            return -1;
        o->timeout_s = (double)v / 1e9;
        return 1;
    default:
        return 0;
    }
}

static bool file_in(const char *dir, const char *name)
{
    char p[PATH_MAX];
    if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, name) >= sizeof(p))
        return false;
    return access(p, R_OK) == 0;
}

int run_find_guest_dir(char *dir, size_t len, struct hv_err *err)
{
    const char *env = getenv("HVPROF_GUEST_DIR");
    if (env && *env) {
        if (!file_in(env, DEMO_KERNEL))
            return hv_errf(err, "--guest demo: no %s in HVPROF_GUEST_DIR=%s", DEMO_KERNEL, env);
        snprintf(dir, len, "%s", env);
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return hv_errf_errno(err, "--guest demo: cannot find my own executable");
    exe[n] = 0;
    char *bindir = dirname(exe);
    static const char *const rel[] = {"../tests/guest", "../share/hvprof/guest"};
    for (unsigned i = 0; i < 2; i++) {
        char cand[PATH_MAX];
        if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", bindir, rel[i]) >= sizeof(cand))
            continue;
        if (file_in(cand, DEMO_KERNEL)) {
            snprintf(dir, len, "%s", cand);
            return 0;
        }
    }
    return hv_errf(err,
                   "--guest demo: %s not found (looked in $HVPROF_GUEST_DIR, %s/../tests/guest, "
                   "%s/../share/hvprof/guest; build the guest or set HVPROF_GUEST_DIR)",
                   DEMO_KERNEL, bindir, bindir);
}

static int join_path(char out[PATH_MAX], const char *dir, const char *name)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);
    return n < 0 || n >= PATH_MAX ? -1 : 0;
}

static int check_readable(const char *what, const char *path, struct hv_err *err)
{
    int fd = hv_open_input(path, err); /* a FIFO or a directory is refused, never waited on */
    if (fd < 0) {
        /* hv_open_input says "PATH: why". */
        size_t n = strlen(path);
        const char *why =
            !strncmp(err->msg, path, n) && err->msg[n] == ':' ? err->msg + n + 2 : err->msg;
        char reason[HV_ERR_MSG_MAX];
        snprintf(reason, sizeof(reason), "%s", why);
        return hv_errf(err, "cannot read %s '%s': %s", what, path, reason);
    }
    close(fd);
    return 0;
}

#ifdef HVPROF_HAVE_LIBVIRT
/* The domain's settings where the command line left them open (docs/libvirt.md). */
static int take_domain(struct run_opts *o, struct hv_err *err)
{
    const struct domain_config *d = &o->domain;
    if (!o->kernel && d->kernel[0])
        o->kernel = d->kernel;
    if (!o->initrd && d->initrd[0])
        o->initrd = d->initrd;
    if (!o->cmdline && d->has_cmdline)
        o->cmdline = d->cmdline;
    if (!o->vcpus_given) {
        if (d->vcpus > BOOT_MAX_CPUS)
            return hv_errf(err,
                           "--libvirt %s: %u vCPUs; hvprof gives at most %u (--vcpus N "
                           "boots it with fewer)",
                           d->name, d->vcpus, BOOT_MAX_CPUS);
        o->vcpus = d->vcpus;
    }
    if (!o->mem_given) {
        uint64_t mem = d->mem_bytes & ~0xfffull;
        if (mem < RUN_MIN_MEM || mem > BOOT_MAX_MEM_BYTES)
            return hv_errf(err,
                           "--libvirt %s: %" PRIu64 " MiB of memory; hvprof gives %" PRIu64
                           " MiB to %" PRIu64 " MiB (--mem SIZE overrides it)",
                           d->name, d->mem_bytes >> 20, (uint64_t)RUN_MIN_MEM >> 20,
                           (uint64_t)BOOT_MAX_MEM_BYTES >> 20);
        o->mem_bytes = mem;
    }
    /* Its network interface: hvprof's card on user-mode networking, with its MAC (a guest's
     * network configuration may name the card by it); --net wins. */
    if (d->net && !o->net.enabled) {
        /* hvprof cannot join the libvirt network (an isolated one, a bridge): the card gets
         * the most closed user network, restrict=on, which reaches nothing outside. */
        o->net.enabled = true;
        o->net.restrict_outside = true;
        o->net.has_mac = d->net_has_mac;
        memcpy(o->net.mac, d->net_mac, sizeof(o->net.mac));
        fprintf(stderr,
                "%s: libvirt domain '%s': %s given as user-mode networking with restrict=on: "
                "the guest gets 10.0.2.15 by DHCP, not its libvirt network's address, and "
                "reaches nothing outside the VM, neither the host nor other networks; --net "
                "user[,hostfwd=...] gives it slirp's way out, --net user,host=on the host too "
                "(docs/net.md)\n",
                o->prog, d->name, d->net_was);
    }
    if (o->ndisks) {
        if (d->ndisks)
            fprintf(stderr,
                    "%s: libvirt domain '%s': its %u disk(s) replaced by the --disk "
                    "options given\n",
                    o->prog, d->name, d->ndisks);
        return 0;
    }
    for (unsigned i = 0; i < d->ndisks; i++) {
        /* <readonly/>: a read-only device; <transient/>: changes dropped at exit. */
        enum virtio_blk_mode mode = d->disks[i].readonly    ? VIRTIO_BLK_RO
                                    : d->disks[i].transient ? VIRTIO_BLK_OVERLAY
                                                            : VIRTIO_BLK_RW;
        /* <driver type='raw|qcow2'/>: the format libvirt would pass QEMU, never probed. */
        enum image_format f = IMAGE_FORMAT_AUTO;
        image_format_parse(d->disks[i].format, &f);
        o->disks[i] = (struct vm_disk){d->disks[i].path, mode, {.format = f}};
    }
    o->ndisks = d->ndisks;
    return 0;
}
#endif

/* --libvirt: the domain's definition, what hvprof cannot give it listed (docs/libvirt.md). */
static int load_libvirt(struct run_opts *o, struct hv_err *err)
{
#ifndef HVPROF_HAVE_LIBVIRT
    (void)libvirt_domain_xml(o->libvirt, o->connect, NULL, err);
    return -1;
#else
    bool active;
    char *xml = libvirt_domain_xml(o->libvirt, o->connect, &active, err);
    if (!xml)
        return -1;
    int rc = domain_xml_parse(xml, strlen(xml), &o->domain, err);
    free(xml);
    if (rc < 0) {
        char msg[HV_ERR_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        return hv_errf(err, "--libvirt %.128s: %s", o->libvirt, msg);
    }
    const struct domain_config *d = &o->domain;
    const char *verdict = o->libvirt_ignore ? "left out" : "cannot be given";
    for (unsigned i = 0; i < d->nunsupported; i++)
        fprintf(stderr, "%s: libvirt domain '%s': %s: %s\n", o->prog, d->name, verdict,
                d->unsupported[i]);
    if (d->unsupported_dropped)
        fprintf(stderr, "%s: libvirt domain '%s': %u more not listed\n", o->prog, d->name,
                d->unsupported_dropped);
    char lo[DOMAIN_LINE_MAX];
    domain_left_out_line(d, lo, sizeof(lo));
    if (lo[0])
        fprintf(stderr,
                "%s: libvirt domain '%s': left out, as they do not change what the guest "
                "runs: %s\n",
                o->prog, d->name, lo);
    if (d->disks_refused && !o->ndisks) /* --disk replaces the domain's disks */
        return hv_errf(err,
                       "--libvirt %s: %u of the domain's disks cannot be given (listed above); "
                       "hvprof does not boot a domain without its disks (--disk gives them, "
                       "converted to raw)",
                       d->name, d->disks_refused);
    bool nothing = !domain_bootable(d) && !d->ndisks; /* counted among the unsupported */
    if (nothing && !o->kernel && !o->ndisks)
        return hv_errf(err,
                       "--libvirt %s: the domain has no <os><kernel> and no disk to boot: give "
                       "--kernel, or --disk with an image that boots (docs/disk-boot.md)",
                       d->name);
    unsigned n = d->nunsupported + d->unsupported_dropped - nothing;
    if (n && !o->libvirt_ignore)
        return hv_errf(err,
                       "--libvirt %s: %u thing(s) in the domain that hvprof cannot give the "
                       "guest (listed above); --libvirt-ignore-unsupported boots it without "
                       "them",
                       d->name, n);
    if (take_domain(o, err) < 0)
        return -1;
    /* A running domain writes its disks now: a second VM writing them too would corrupt their
     * file systems. Its disks, or the ones --disk gives instead (which may well be the same
     * files under other names), only through the private overlay (or read-only). */
    for (unsigned i = 0; active && i < o->ndisks; i++)
        if (o->disks[i].mode == VIRTIO_BLK_RW)
            return hv_errf(err,
                           "--libvirt %s: libvirt reports the domain running, and its disk %s "
                           "would be written by two VMs at once: shut the domain down first, "
                           "or give --disk %s,readonly (the guest's writes then go to a private "
                           "overlay)",
                           d->name, o->disks[i].path, o->disks[i].path);
    return 0;
#endif
}

/* A field of /proc/meminfo in bytes ("MemTotal:", "MemAvailable:"), 0 if unknown. */
static uint64_t meminfo(const char *field)
{
    FILE *f = fopen("/proc/meminfo", "re");
    char line[128];
    uint64_t kib = 0;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, field, n)) {
            kib = strtoull(line + n, NULL, 10);
            break;
        }
    if (f)
        fclose(f);
    return kib * 1024;
}

/* What the host can give the guest, checked before anything starts: RAM it does not have is
 * refused (the guest would be killed when it touched it), RAM it has but not free and vCPUs
 * far beyond its CPUs warned of, with what to expect. */
static int check_host_fits(const struct run_opts *o, FILE *warn, struct hv_err *err)
{
    uint64_t total = meminfo("MemTotal:"), avail = meminfo("MemAvailable:");
    char want[32], have[32];
    parse_format_size(o->mem_bytes, want, sizeof(want));
    if (total && o->mem_bytes > total) {
        parse_format_size(total & ~0xfffffull, have, sizeof(have));
        return hv_errk(err, HV_ERR_USAGE,
                       "--mem %s: more than the host's %s of RAM (the guest would be killed when "
                       "it used it)",
                       want, have);
    }
    if (avail && o->mem_bytes > avail) {
        parse_format_size(avail & ~0xfffffull, have, sizeof(have));
        fprintf(warn,
                "hvprof: warning: --mem %s is more than the %s the host has free: the guest may "
                "be killed if it uses it all\n",
                want, have);
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 0 && o->vcpus > 2 * (unsigned long)cpus) {
        double share = (double)cpus / (double)o->vcpus;
        fprintf(warn,
                "hvprof: warning: --vcpus %u on %ld host CPUs: each vCPU thread gets at most "
                "%.0f%% of a CPU when all are busy; expect up to %.0f%% of the sampling ticks "
                "missed and a guest that runs %.0fx slower\n",
                o->vcpus, cpus, 100.0 * share, 100.0 * (1 - share), 1 / share);
    }
    return 0;
}

static int finish(struct run_opts *o, struct hv_err *err)
{
    if (o->console && !strcmp(o->console, "-"))
        o->console = NULL; /* stdout, said as the tools say it */
    if (o->guest && o->kernel)
        return hv_errf(err, "--guest and --kernel are exclusive: pick one");
    if (o->libvirt && o->guest)
        return hv_errf(err, "--guest and --libvirt are exclusive: pick one");
    if ((o->connect || o->libvirt_ignore) && !o->libvirt)
        return hv_errf(err, "%s without --libvirt DOMAIN",
                       o->connect ? "--connect" : "--libvirt-ignore-unsupported");
    if (o->libvirt && load_libvirt(o, err) < 0)
        return -1;
    if (o->guest) {
        char dir[PATH_MAX];
        if (run_find_guest_dir(dir, sizeof(dir), err) < 0)
            return -1;
        if (join_path(o->kernel_path, dir, DEMO_KERNEL) < 0)
            return hv_errk(err, HV_ERR_USAGE, "--guest demo: path too long: %s", dir);
        o->kernel = o->kernel_path;
        if (!o->initrd && file_in(dir, DEMO_INITRD) &&
            join_path(o->initrd_path, dir, DEMO_INITRD) == 0)
            o->initrd = o->initrd_path;
    }
    if (o->boot_entry && (o->kernel || !o->ndisks))
        return hv_errf(err, "--boot-entry chooses a disk's boot entry: give --disk IMAGE and no "
                            "--kernel");
    /* Every disk's format pinned and its chain checked before anything reads it. */
    if (run_disks_prepare(o, stderr, err) < 0) {
        o->disk_failed = true;
        return -1;
    }
    if (!o->kernel && o->ndisks)
        return disk_boot_load(o, err);
    if (!o->kernel)
        return hv_errf(err, "no guest given: use --guest demo, --kernel FILE or --disk IMAGE");
    if (o->cmdline && strlen(o->cmdline) > BOOT_CMDLINE_MAX)
        return hv_errf(err,
                       "--cmdline is %zu bytes; hvprof passes at most %u (a Linux kernel may "
                       "take fewer: its boot header says)",
                       strlen(o->cmdline), BOOT_CMDLINE_MAX);
    if (check_readable("kernel", o->kernel, err) < 0)
        return -1;
    if (o->initrd && check_readable("initrd", o->initrd, err) < 0)
        return -1;
    return 0;
}

int run_opts_finish(struct run_opts *o, struct hv_err *err)
{
    /* After the guest's own description (a libvirt domain, a disk) set its vCPUs and RAM. */
    return finish(o, err) < 0 || check_host_fits(o, stderr, err) < 0 ? -1 : 0;
}

int run_opts_check_outputs(const struct run_opts *o, const char *recording, struct hv_err *err)
{
    const struct hv_file_role outs[] = {{"-o", recording}, {"--console", o->console}};
    struct hv_file_role ins[2 + RUN_MAX_DISK_FILES] = {{"--kernel", o->kernel},
                                                       {"--initrd", o->initrd}};
    for (unsigned i = 0; i < o->ndisk_files; i++)
        ins[2 + i] = (struct hv_file_role){"--disk (a file of its chain)", o->disk_files[i]};
    return hv_check_outputs(outs, 2, ins, 2 + o->ndisk_files, err);
}

int run_session_open(struct run_session *s, const struct run_opts *o, const struct vm_hooks *hooks,
                     bool sync_regs, struct hv_err *err)
{
    memset(s, 0, sizeof(*s));
    s->console_fd = STDOUT_FILENO;
    s->console.fd = s->console.dirfd = -1;
    if (o->console) {
        /* NAME.part until the guest is loaded (common/output.h): a guest that cannot boot
         * leaves an existing console log as it was. */
        if (hv_output_open(&s->console, AT_FDCWD, o->console, o->force ? HV_OUTPUT_FORCE : 0, err) <
            0)
            return hv_err_prefix(err, "--console");
        s->console_fd = s->console.fd;
        s->console.fd = -1; /* closed by run_session_close */
        s->own_console = true;
    }
    struct vm_config cfg = {
        .nr_vcpus = o->vcpus,
        .mem_bytes = o->mem_bytes,
        .sync_regs = sync_regs,
        .console_fd = s->console_fd,
        .console_max = o->console_max,
        .timeout_s = o->timeout_s,
        .disks = o->disks,
        .ndisks = o->ndisks,
        .net = o->net.enabled ? &o->net : NULL,
    };
    if (hooks)
        cfg.hooks = *hooks;
    s->vm = vm_create(&cfg, err);
    if (!s->vm)
        goto fail;
    struct boot_config bc = {
        .kernel_path = o->kernel,
        .initrd_path = o->initrd,
        .cmdline = o->cmdline,
        .nr_cpus = o->vcpus,
        .mem_bytes = o->mem_bytes,
        .nvirtio = o->ndisks,
    };
    for (unsigned i = 0; i < o->ndisks; i++)
        bc.virtio[i] = (typeof(bc.virtio[i])){vm_disk_base(i), VIRTIO_MMIO_SIZE, vm_disk_gsi(i)};
    if (o->net.enabled)
        bc.virtio[bc.nvirtio++] =
            (typeof(bc.virtio[0])){VM_NET_MMIO_BASE, VIRTIO_MMIO_SIZE, VM_NET_GSI};
    if (o->disk_boot) {
        const struct diskfs_boot *b = &o->disk_boot->b;
        struct boot_image k = {b->kernel_path, b->kernel, b->kernel_size};
        struct boot_image i = {"the entry's initrds", b->initrd, b->initrd_size};
        int rc = boot_load_images(vm_gmem(s->vm), &bc, &k, b->initrd ? &i : NULL, &s->boot, err);
        /* In guest memory now (or refused): the host's copies go (an initrd may be 1 GiB). */
        diskfs_boot_free(&o->disk_boot->b);
        if (rc < 0)
            goto fail;
    } else if (boot_load(vm_gmem(s->vm), &bc, &s->boot, err) < 0) {
        goto fail;
    }
    struct vm_entry ve = {.regs = s->boot.regs, .sregs = s->boot.sregs};
    vm_set_entry(s->vm, &ve);
    if (s->own_console && hv_output_commit(&s->console, err) < 0) {
        hv_err_prefix(err, "--console");
        goto fail;
    }
    return 0;
fail:
    hv_output_discard(&s->console);
    run_session_close(s);
    return -1;
}

/* The signal handler's only way to reach the VM (conventions: globals only for handlers). */
static struct vm *volatile signal_vm;

static volatile sig_atomic_t stop_signals;
static volatile sig_atomic_t pending_signal; /* the first, taken before the VM could be stopped */
static volatile sig_atomic_t finishing;      /* the VM has stopped: the work left is bounded */

/* SIGINT/SIGTERM/SIGHUP, from the command's start (docs/reliability.md, "Signals"):
 *   before the VM runs  the first is remembered: the VM is stopped as soon as it exists, and
 *                       the command finishes its work (a recording is complete) and says so;
 *   while it runs       the first stops the VM cleanly; a second (then or before) leaves at once
 *                       (async-signal-safe calls only): what was written stays on disk as
 *                       whole records (fxt/writer.c writes record-aligned buffers);
 *   after it stopped    ignored: finishing the file and printing the summary take milliseconds
 *                       and no guest, and a second Ctrl-C must not cut them short. */
static void on_stop_signal(int sig)
{
    if (finishing)
        return;
    struct vm *vm = signal_vm;
    if (stop_signals++ > 0) {
        static const char msg[] = "\nhvprof: second signal, exiting now\n";
        ssize_t rc = write(STDERR_FILENO, msg, sizeof(msg) - 1);
        (void)rc;
        _exit(128 + sig);
    }
    if (vm)
        vm_request_stop(vm, VM_STOP_SIGNAL, 128 + sig, -1, NULL);
    else if (!pending_signal)
        pending_signal = sig;
}

void run_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* A closed pipe on stdout or stderr (`hvprof record ... | head`) is a write error, never a
     * reason to die halfway through a recording. */
    signal(SIGPIPE, SIG_IGN);
}

void run_session_catch_signals(struct run_session *s)
{
    signal_vm = s->vm;
    /* A signal that came during start-up: the VM stops as soon as it runs. */
    int sig = pending_signal;
    if (sig)
        vm_request_stop(s->vm, VM_STOP_SIGNAL, 128 + sig, -1, NULL);
}

void run_signals_finishing(void)
{
    finishing = 1;
}

void run_session_close(struct run_session *s)
{
    /* The handlers stay: a stop signal from here on has no VM to stop (the caller only finishes
     * its file and prints its summary now) and is ignored, instead of the default action killing
     * the process halfway through. */
    finishing = 1;
    if (signal_vm == s->vm)
        signal_vm = NULL;
    vm_destroy(s->vm);
    s->vm = NULL;
    if (s->own_console && s->console_fd >= 0)
        close(s->console_fd);
    s->console_fd = -1;
    if (s->own_console)
        hv_output_close(&s->console);
    s->own_console = false;
    s->own_console = false;
}

void run_report_stop(FILE *out, const char *cmd, const struct vm_result *r)
{
    switch (r->reason) {
    case VM_STOP_EXIT:
    case VM_STOP_NONE:
        return;
    case VM_STOP_SIGNAL:
        fprintf(out, "%s: stopped by signal %d\n", cmd, r->status - 128);
        return;
    default:
        fprintf(out, "%s: guest stopped (%s)%s%s\n", cmd, vm_stop_reason_name(r->reason),
                r->detail[0] ? ": " : "", r->detail);
    }
}

void run_disks_summary(const struct vm *vm, const struct run_opts *o, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    if (vm->disks.n) {
        int n = snprintf(buf, len, "  disks: requests served %s\n", vm->disks.served);
        used = n > 0 && (size_t)n < len ? (size_t)n : 0;
    }
    for (unsigned i = 0; i < vm->disks.n && used < len; i++) {
        const struct virtio_blk *b = &vm->disks.v[i].blk;
        char how[320] = "";
        int at = b->qcow ? snprintf(how, sizeof(how), " (%s)", b->format) : 0;
        if (at < 0 || at >= (int)sizeof(how))
            at = 0;
        if (b->mode == VIRTIO_BLK_RO)
            snprintf(how + at, sizeof(how) - (size_t)at, " (read-only)");
        else if (b->mode == VIRTIO_BLK_OVERLAY)
            snprintf(how + at, sizeof(how) - (size_t)at,
                     " (image not written: %.1f MiB in the private overlay, "
                     "dropped)",
                     (double)b->overlay_blocks * VIRTIO_BLK_OVERLAY_BLOCK / (1 << 20));
        /* Compressed clusters kept decompressed (vmm/qcow/cluster_cache.h): how often. */
        uint64_t hits = 0, misses = 0;
        if (b->qcow)
            qcow_image_cache_stats(b->qcow, &hits, &misses);
        char kept[192] = "";
        int k = 0;
        if (hits + misses)
            k = snprintf(kept, sizeof(kept),
                         "; %" PRIu64 " of %" PRIu64
                         " cluster reads from decompressed clusters kept",
                         hits, hits + misses);
        /* Where QEMU's map placed the bytes read (vmm/qcow/qemu_map.h). */
        uint64_t mapped = 0, libqcow = 0;
        if (b->qcow)
            qcow_image_map_stats(b->qcow, &mapped, &libqcow);
        if (mapped + libqcow && k >= 0 && k < (int)sizeof(kept))
            snprintf(kept + k, sizeof(kept) - (size_t)k,
                     "; %.1f%% of the bytes read where QEMU's map placed them, the rest "
                     "through libqcow",
                     100.0 * (double)mapped / (double)(mapped + libqcow));
        int n =
            snprintf(buf + used, len - used,
                     "  disk vd%c %s%s: %" PRIu64 " reads (%.1f MiB), %" PRIu64
                     " writes (%.1f MiB), %" PRIu64 " flushes, %" PRIu64
                     " requests answered with an error%s%s\n",
                     'a' + i, o->disks[i].path, how, b->reads, (double)b->bytes_read / (1 << 20),
                     b->writes, (double)b->bytes_written / (1 << 20), b->flushes, b->errors,
                     b->abandoned ? ", one left unfinished when the guest stopped" : "", kept);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
    if (used < len)
        vm_net_summary(&vm->net, buf + used, len - used);
}
