/* The Linux test bed's scenarios, group by group (docs/linux.md, "Test bed" and "CI's matrix and
 * the full one"): one table for all tests, so that CI's matrix can run several groups in one
 * sequence of L1 boots (test_linux_ci_runs) and each test then checks its own. Each entry says
 * how CI's matrix runs it (enum tb_in_ci). */
#include <stddef.h>
#include <string.h>

#include "tests/linux/testbed.h"

/* The workloads (tests/linux/l2_init.sh) for 1.5 s each; --symbols: the guest's binaries, for
 * unwind tables on pages it never touched (docs/cfi.md). */
#define TB_WORK        "hvtest.plan=work hvtest.ms=1500"
#define TB_OPTS        "--hz 1000 --timeout 180 --symbols /guest/files"
#define TB_OPTS_NOSYMS "--hz 1000 --timeout 180"
#define TB_ROOT_OPTS   "--hz 1000 --timeout 240 --symbols /guest/files --disk " TB_ROOT
/* No files at all: unwind tables the guest never read come from the disk (docs/diskfs.md). */
#define TB_ROOT_NOSYMS "--hz 1000 --timeout 300 --disk " TB_ROOT

/* A control's load: hvprof's sampling rate (docs/linux.md, "The reference under hvprof's
 * load"). */
#define TB_KICKED "HVTEST_KICK_HZ=1000"

static const struct tb_scenario reference[] = {
    {"generic-1", "qemu", "generic", 1, "512M", "hvtest.plan=boot hvtest.ms=200", NULL, NULL,
     TB_CI},
    {"generic-2", "qemu", "generic", 2, "512M", "hvtest.plan=boot hvtest.ms=200", NULL, NULL,
     TB_FULL_ONLY},
    {"generic-4", "qemu", "generic", 4, "512M", "hvtest.plan=boot hvtest.ms=200", NULL, NULL,
     TB_FULL_ONLY},
    {"cloud-1", "qemu", "cloud", 1, "512M", "hvtest.plan=boot hvtest.ms=200", NULL, NULL, TB_CI},
    {"cloud-2", "qemu", "cloud", 2, "512M", "hvtest.plan=boot hvtest.ms=200", NULL, NULL,
     TB_FULL_ONLY},
    {"cloud-4", "qemu", "cloud", 4, "512M", "hvtest.plan=boot hvtest.ms=200", NULL, NULL,
     TB_FULL_ONLY},
    /* The platform's controls (control.c): the workloads under QEMU/KVM with its vCPU threads
     * kicked at hvprof's rate; the evidence a guest hvprof loses needs. */
    {"generic-kicked", "qemu", "generic", 2, "512M", TB_WORK, NULL, TB_KICKED, TB_CI},
    {"cloud-kicked", "qemu", "cloud", 2, "512M", TB_WORK, NULL, TB_KICKED, TB_CI},
};

/* generic with the guest's files given to record, cloud with none: every unwind table and
 * name the guest did not map comes from its page cache (docs/user-modules.md), and the chains
 * are judged the same. */
static const struct tb_scenario boot[] = {
    {"generic-1", "record", "generic", 1, "512M", TB_WORK, TB_OPTS, NULL, TB_CI},
    {"generic-2", "record", "generic", 2, "512M", TB_WORK, TB_OPTS, NULL, TB_FULL_ONLY},
    {"generic-4", "record", "generic", 4, "512M", TB_WORK, TB_OPTS, NULL, TB_FULL_ONLY},
    {"cloud-1", "record", "cloud", 1, "512M", TB_WORK, TB_OPTS_NOSYMS, NULL, TB_CI},
    {"cloud-2", "record", "cloud", 2, "512M", TB_WORK, TB_OPTS_NOSYMS, NULL, TB_FULL_ONLY},
    {"cloud-4", "record", "cloud", 4, "512M", TB_WORK, TB_OPTS_NOSYMS, NULL, TB_FULL_ONLY},
};

static const struct tb_scenario modes[] = {
    {"generic-nopti", "record", "generic", 2, "512M", TB_WORK " pti=off", TB_OPTS, NULL,
     TB_CI_ONE_VCPU},
    {"generic-pti", "record", "generic", 2, "512M", TB_WORK " pti=on", TB_OPTS, NULL,
     TB_CI_ONE_VCPU},
    {"generic-nokaslr", "record", "generic", 2, "512M", TB_WORK " nokaslr", TB_OPTS, NULL,
     TB_FULL_ONLY},
    {"cloud-pti-nokaslr", "record", "cloud", 2, "512M", TB_WORK " pti=on nokaslr", TB_OPTS, NULL,
     TB_CI_ONE_VCPU},
};

static const struct tb_scenario la57[] = {
    {"generic-la57", "record", "generic", 2, "512M", TB_WORK, TB_OPTS_NOSYMS, NULL, TB_CI_ONE_VCPU},
    {"cloud-la57", "record", "cloud", 2, "512M", TB_WORK " pti=on", TB_OPTS_NOSYMS, NULL,
     TB_FULL_ONLY},
};

/* hvprof's boots of 64 vCPUs, each beside the reference VMM's boot of the same kernel and
 * command line in the same L1 (NAME-ref): only its evidence lets a boot hvprof did not complete
 * count as the platform's (test_linux_smp64). */
static const struct tb_scenario smp64[] = {
    {"generic-64", "record", "generic", 64, "1G", "hvtest.plan=boot hvtest.ms=500",
     "--hz 100 --timeout 300", NULL, TB_CI},
    {"generic-64-ref", "qemu", "generic", 64, "1G", "hvtest.plan=boot hvtest.ms=500", NULL, NULL,
     TB_CI},
    {"cloud-64", "record", "cloud", 64, "1G", "hvtest.plan=boot hvtest.ms=500",
     "--hz 100 --timeout 300", NULL, TB_FULL_ONLY},
    {"cloud-64-ref", "qemu", "cloud", 64, "1G", "hvtest.plan=boot hvtest.ms=500", NULL, NULL,
     TB_FULL_ONLY},
};

static const struct tb_scenario disk[] = {
    {"generic-disk", "record", "generic", 2, "512M", "hvtest.plan=disk hvtest.ms=1500",
     "--hz 1000 --timeout 180 --disk " TB_DISK, NULL, TB_CI_ONE_VCPU},
    {"cloud-disk", "record", "cloud", 2, "512M", "hvtest.plan=disk hvtest.ms=1500",
     "--hz 1000 --timeout 180 --disk " TB_DISK, NULL, TB_FULL_ONLY},
};

static const struct tb_scenario disk_root[] = {
    {"generic-root", "record", "generic", 2, "512M", "hvtest.plan=root hvtest.ms=3000",
     TB_ROOT_OPTS, NULL, TB_FULL_ONLY},
    {"cloud-root", "record", "cloud", 2, "512M", "hvtest.plan=root hvtest.ms=3000", TB_ROOT_OPTS,
     NULL, TB_FULL_ONLY},
    {"cloud-root-nofiles", "record", "cloud", 2, "512M",
     "hvtest.plan=root hvtest.ms=3000 hvtest.debian=1", TB_ROOT_NOSYMS, NULL, TB_CI_ONE_VCPU},
    {"generic-root-kill", "record", "generic", 2, "512M", "hvtest.plan=root hvtest.ms=3000",
     TB_ROOT_OPTS, "HVTEST_KILL_AT=HVTEST-root-writing", TB_CI_ONE_VCPU},
    /* The root as a cloud image is: a GPT qcow2 disk with compressed clusters, booted by
     * `--disk` alone from its own grub.cfg (prepare.sh writes it, with this command line), no
     * files given: unwind tables and names from the qcow2 partition (docs/disk-boot.md). */
    {"generic-root-qcow2", "record-disk", "generic", 2, "512M",
     "hvtest.plan=root hvtest.ms=1500 hvtest.root=/dev/vda1",
     "--hz 1000 --timeout 240 --disk " TB_ROOT_QCOW2, NULL, TB_CI_ONE_VCPU},
};

/* A server in the guest, driven from outside while it is profiled (docs/net.md): the network
 * card on user-mode networking, an address by DHCP, busybox's web server on port 80 reached
 * from L1 through the forwarded host port 8080. */
static const struct tb_scenario net[] = {
    {"generic-net", "record", "generic", 2, "512M", "hvtest.plan=net hvtest.ms=120000",
     "--hz 1000 --timeout 240 --net user,hostfwd=tcp:127.0.0.1:8080-:80", "HVTEST_NET_LOAD=8080",
     TB_CI_ONE_VCPU},
    {"cloud-net", "record", "cloud", 2, "512M", "hvtest.plan=net hvtest.ms=120000",
     "--hz 1000 --timeout 240 --net user,hostfwd=tcp:127.0.0.1:8080-:80", "HVTEST_NET_LOAD=8080",
     TB_FULL_ONLY},
    /* A Debian 12 system as installed (tests/linux/debian_disk.sh: its own kernel, initramfs
     * and systemd) booted by --disk alone from its GPT qcow2 disk's grub.cfg, its web server
     * driven the same way; a CGI request powers it off. No command line here: its grub.cfg's. */
    {"debian12-systemd", "record-disk", "debian12", 1, "1G", "",
     "--hz 1000 --timeout 420 --disk /guest/debian12.qcow2,readonly "
     "--net user,hostfwd=tcp:127.0.0.1:8080-:80",
     "HVTEST_NET_LOAD=8080", TB_CI_ONE_VCPU},
    /* Debian 13 the same way (its 6.12 kernel, systemd 257), its pages served by nginx, which
     * passes the CGI requests to busybox httpd behind it. */
    {"debian13-systemd", "record-disk", "debian13", 2, "1G", "",
     "--hz 1000 --timeout 420 --disk /guest/debian13.qcow2,readonly "
     "--net user,hostfwd=tcp:127.0.0.1:8080-:80",
     "HVTEST_NET_LOAD=8080", TB_CI_ONE_VCPU},
    /* The references: QEMU/KVM in the same L1 boots each system from the same disk with its
     * boot entry's kernel, initrd and command line (debian_disk.sh writes them beside the
     * disk), under the same requests (docs/disk-boot.md). */
    {"debian12-systemd-ref", "qemu-disk", "debian12", 2, "1G", "", NULL, "HVTEST_NET_LOAD=8080",
     TB_FULL_ONLY},
    {"debian13-systemd-ref", "qemu-disk", "debian13", 2, "1G", "", NULL, "HVTEST_NET_LOAD=8080",
     TB_FULL_ONLY},
};

/* Off-CPU time of every thread (`record --off-cpu`, docs/off-cpu.md): a writer blocked in fsync
 * on the virtio disk beside a CPU-bound thread, among 200 sleeping processes; the writer's
 * off-CPU time against the guest's own account of it (/proc/thread-self/schedstat). */
static const struct tb_scenario offcpu[] = {
    {"generic-offcpu", "record", "generic", 2, "512M", "hvtest.plan=offcpu hvtest.ms=6000",
     "--hz 1000 --timeout 240 --off-cpu --disk " TB_DISK, NULL, TB_CI_ONE_VCPU},
};

/* Python frames (docs/python.md): a program of known call chains (tests/linux/workloads/
 * chains.py) run by Debian 12's python3.11 and Debian 13's python3.13 from the ext4 root, with
 * no files given: the interpreters found and read from the guest's memory, native frames from
 * the disk's unwind tables. */
static const struct tb_scenario python[] = {
    {"cloud-python", "record", "cloud", 2, "512M", "hvtest.plan=python hvtest.ms=4000",
     TB_ROOT_NOSYMS, NULL, TB_CI_ONE_VCPU},
};

/* Containers (docs/containers.md): Debian's runc runs two containers of one program from the
 * ext4 root, as Docker's cgroupfs driver names them, beside the same program outside any;
 * halfway one container's process is moved to a third cgroup. No files given. */
static const struct tb_scenario containers[] = {
    {"cloud-containers", "record", "cloud", 2, "512M", "hvtest.plan=containers hvtest.ms=8000",
     TB_ROOT_NOSYMS, NULL, TB_CI_ONE_VCPU},
};

/* A busy guest's churn (docs/identities.md): the shell starts short-lived processes beside
 * hv_busy, through identity tables of 1,024 processes: the guest's task list ends each one's
 * identity and gives its slot back. 5,000 in the full matrix; CI's 1,500, past the tables' size
 * (each fork and exec costs ~30 ms of emulated time here). */
static const struct tb_scenario churn[] = {
    {"generic-churn", "record", "generic", 2, "512M",
     "hvtest.plan=churn hvtest.churn=5000 hvtest.ms=1500", "--hz 1000 --timeout 1200", NULL,
     TB_FULL_ONLY},
    {"generic-churn-1500", "record", "generic", 2, "512M",
     "hvtest.plan=churn hvtest.churn=1500 hvtest.ms=1500", "--hz 1000 --timeout 600", NULL,
     TB_CI_ONE_VCPU},
};

/* The flight recorder on a guest that panics (docs/sampling.md, "A flight recorder"): its
 * ring of 1 MiB holds the last seconds, the kernel's own panic record is seen, and the last
 * samples are the panic's path. */
static const struct tb_scenario flight[] = {
    {"generic-panic", "record", "generic", 2, "512M", "hvtest.plan=panic hvtest.ms=1500",
     "--hz 1000 --timeout 180 --ring 1M", NULL, TB_CI_ONE_VCPU},
};

/* The kernel matrix (docs/linux.md, "The kernel matrix"): the kernels of Debian 11 (5.10), 13
 * (6.12) and sid (the newest, 7.x), generic and cloud, fetched by suite (prepare.sh), beside
 * 12's 6.1 in the groups above; with KASLR and PTI. Under trixie's QEMU as L0: bookworm's cannot
 * run 5.10 or 7.x (its TCG ignores SVM's XSETBV intercept). The references boot each kernel in
 * QEMU/KVM in the same L1, for the console comparison (tb_check_console_clean). CI's matrix runs
 * the two that differ most from 6.1, 5.10 (kallsyms found by structure) and 7.x (another ORC
 * register numbering); 6.12 reads like 6.1 and runs in the full matrix. */
/* A kernel of the matrix joins the test bed with this line (and its suite in prepare.sh): its
 * reference, QEMU/KVM booting it in the same L1 (the console the recorded boot is compared
 * with), and its boot under `hvprof record`, both at two vCPUs with PTI on. `ci`: how CI's
 * matrix runs both. */
/* clang-format off */
#define TB_KERNEL(kernel, ci)                                                                      \
    {kernel "-ref", "qemu", kernel, 2, "512M", "hvtest.plan=boot hvtest.ms=200 pti=on", NULL,      \
     NULL, ci},                                                                                    \
    {kernel, "record", kernel, 2, "512M", TB_WORK " pti=on", TB_OPTS, NULL, ci}
/* clang-format on */

static const struct tb_scenario kernels[] = {
    /* The control on trixie's QEMU: this group's own emulator. */
    {"sid-kicked", "qemu", "sid", 2, "512M", TB_WORK " pti=on", NULL, TB_KICKED, TB_CI},
    TB_KERNEL("bullseye", TB_CI_ONE_VCPU),
    TB_KERNEL("trixie", TB_FULL_ONLY),
    TB_KERNEL("sid", TB_CI_ONE_VCPU),
    /* Their cloud kernels, which differ in configuration (fewer drivers; 6.1's had no MP-table
     * parser): the full matrix. */
    TB_KERNEL("bullseye-cloud", TB_FULL_ONLY),
    TB_KERNEL("trixie-cloud", TB_FULL_ONLY),
    TB_KERNEL("sid-cloud", TB_FULL_ONLY),
};

#define GROUP(name, table)                                                                         \
    {                                                                                              \
        name, table, sizeof(table) / sizeof(table[0])                                              \
    }
static const struct {
    const char *name;
    const struct tb_scenario *s;
    size_t n;
} groups[] = {
    GROUP("reference", reference), GROUP("boot", boot),
    GROUP("modes", modes),         GROUP("la57", la57),
    GROUP("smp64", smp64),         GROUP("disk", disk),
    GROUP("disk-root", disk_root), GROUP("kernels", kernels),
    GROUP("flight", flight),       GROUP("net", net),
    GROUP("offcpu", offcpu),       GROUP("python", python),
    GROUP("churn", churn),         GROUP("containers", containers),
};

const struct tb_scenario *tb_group(const char *name, size_t *n)
{
    for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
        if (!strcmp(groups[i].name, name)) {
            *n = groups[i].n;
            return groups[i].s;
        }
    *n = 0;
    return NULL;
}

/* The groups whose L1 settings are the defaults (CPU model, L1 CPUs): CI's matrix runs them
 * together. la57 needs another CPU model, smp64 4 L1 CPUs; the references are QEMU's. */
const char *const tb_ci_shared[] = {"boot",   "modes",  "disk",  "disk-root",  "flight", "net",
                                    "offcpu", "python", "churn", "containers", NULL};
