/* Boot both loaders' output on real KVM: a tiny ELF kernel (tiny_kernel.S) and a synthetic
 * bzImage whose 64-bit entry (bz_entry.S) checks the boot-protocol state. Each guest writes 0
 * to port 0xf4 when every check passes, else the number of the failed check. This exercises the
 * GDT, page tables, segment state and boot info exactly as the VMM will load them. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/kvm.h>

#include "vmm/boot/tests/fixture.h"
#include "vmm/boot/hvprof_boot.h"
#include "tests/common/need_kvm.h"

#define MiB (1ull << 20)

/* tiny_kernel.S reads struct hvprof_bootinfo by these offsets (docs/boot-elf.md). */
_Static_assert(offsetof(struct hvprof_bootinfo, cmdline_gpa) == 24, "bootinfo layout");
_Static_assert(offsetof(struct hvprof_bootinfo, initrd_gpa) == 40, "bootinfo layout");
_Static_assert(offsetof(struct hvprof_bootinfo, initrd_size) == 48, "bootinfo layout");
_Static_assert(offsetof(struct hvprof_bootinfo, mptable_gpa) == 64, "bootinfo layout");
_Static_assert(offsetof(struct hvprof_bootinfo, e820) == 72, "bootinfo layout");
_Static_assert(sizeof(struct hvprof_bootinfo) == 456, "bootinfo layout");

extern const uint8_t bz_entry_code[], bz_entry_code_end[];
static const char *tiny_kernel_path;

/* Run vCPU 0 from `b` until it writes port 0xf4; returns the value, or fails the test. */
static int run_guest(struct test_ram *r, const struct boot_entry *b)
{
    int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (kvm < 0)
        hv_need_kvm("test_kvm_boot");
    int vm;
    do
        vm = ioctl(kvm, KVM_CREATE_VM, 0);
    while (vm < 0 && errno == EINTR);
    assert_true(vm >= 0);
    assert_int_equal(ioctl(vm, KVM_SET_TSS_ADDR, 0xfffbd000ul), 0);
    for (unsigned i = 0; i < r->n; i++) {
        struct kvm_userspace_memory_region m = {.slot = i,
                                                .guest_phys_addr = r->region[i].gpa,
                                                .memory_size = r->region[i].size,
                                                .userspace_addr = (uintptr_t)r->host[i]};
        assert_int_equal(ioctl(vm, KVM_SET_USER_MEMORY_REGION, &m), 0);
    }
    int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
    assert_true(vcpu >= 0);
    int run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
    struct kvm_run *run = mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
    assert_true(run != MAP_FAILED);

    /* Long mode needs CPUID.80000001:EDX.LM visible to the guest on some KVMs. */
    size_t csz = sizeof(struct kvm_cpuid2) + 256 * sizeof(struct kvm_cpuid_entry2);
    struct kvm_cpuid2 *cpuid = calloc(1, csz);
    cpuid->nent = 256;
    if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, cpuid) == 0)
        assert_int_equal(ioctl(vcpu, KVM_SET_CPUID2, cpuid), 0);
    free(cpuid);

    struct kvm_sregs sregs;
    assert_int_equal(ioctl(vcpu, KVM_GET_SREGS, &sregs), 0);
    boot_apply_sregs(&sregs, &b->sregs);
    assert_int_equal(ioctl(vcpu, KVM_SET_SREGS, &sregs), 0);
    assert_int_equal(ioctl(vcpu, KVM_SET_REGS, &b->regs), 0);

    int result = -1;
    for (int exits = 0; exits < 1000 && result < 0; exits++) {
        if (ioctl(vcpu, KVM_RUN, 0) < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            fail_msg("KVM_RUN: %s", strerror(errno));
        }
        switch (run->exit_reason) {
        case KVM_EXIT_IO:
            if (run->io.direction == KVM_EXIT_IO_OUT && run->io.port == 0xf4) {
                uint32_t v = 0;
                memcpy(&v, (uint8_t *)run + run->io.data_offset,
                       run->io.size < 4 ? run->io.size : 4);
                result = (int)v;
            }
            break;
        case KVM_EXIT_SHUTDOWN: {
            struct kvm_regs regs;
            ioctl(vcpu, KVM_GET_REGS, &regs);
            fail_msg("guest triple-faulted (rip 0x%llx)", (unsigned long long)regs.rip);
            break;
        }
        default:
            fail_msg("unexpected exit %u", run->exit_reason);
        }
    }
    munmap(run, (size_t)run_size);
    close(vcpu);
    close(vm);
    close(kvm);
    return result;
}

static void test_elf_boots(void **state)
{
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    test_ram_init(&r, 64 * MiB);
    uint8_t initrd[3000];
    memset(initrd, 0x5a, sizeof(initrd));
    const char *initrd_path = test_write_file(0, "initrd.bin", initrd, sizeof(initrd));
    struct boot_config cfg = {.kernel_path = tiny_kernel_path,
                              .initrd_path = initrd_path,
                              .cmdline = "hello",
                              .nr_cpus = 2,
                              .mem_bytes = 64 * MiB};
    if (boot_load(&r.gmem, &cfg, &b, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(run_guest(&r, &b), 0);
    test_ram_free(&r);
}

static void test_bzimage_boots(void **state)
{
    struct bz_spec spec = bz_default_spec();
    spec.entry_code = bz_entry_code;
    spec.entry_code_size = (size_t)(bz_entry_code_end - bz_entry_code);
    size_t len;
    uint8_t *img = bz_build(&spec, &len);
    uint8_t initrd[3000];
    memset(initrd, 0x5a, sizeof(initrd));
    struct test_ram r;
    struct boot_entry b;
    struct hv_err err = {0};
    test_ram_init(&r, 64 * MiB);
    struct boot_config cfg = {.cmdline = "hello", .nr_cpus = 1, .mem_bytes = 64 * MiB};
    struct boot_image k = {.name = "bzImage", .data = img, .size = len};
    struct boot_image i = {.name = "initrd", .data = initrd, .size = sizeof(initrd)};
    if (boot_load_images(&r.gmem, &cfg, &k, &i, &b, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(b.regs.rip, 16 * MiB + 0x200);
    assert_int_equal(run_guest(&r, &b), 0);
    test_ram_free(&r);
    free(img);
}

int main(int argc, char **argv)
{
    tiny_kernel_path = argc > 1 ? argv[1] : "boot_tiny_kernel";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elf_boots),
        cmocka_unit_test(test_bzimage_boots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
