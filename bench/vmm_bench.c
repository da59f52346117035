/* vmm benchmark (not a test): cost of the VMM's exit paths on this host.
 *   1. port-I/O exit round trip: a guest doing N `out %al,$0x80` (handled by the iobus in user
 *      space, then re-entered), booted through the real loader (in-memory ELF64);
 *   2. KVM_RUN with immediate_exit = 1: the ioctl returns -EINTR without entering the guest,
 *      i.e. the floor of a kick/tick that the VMM itself adds;
 *   3. kicked-exit round trip: a HV_SIG_TICK timer at 4 kHz; ticks delivered per second.
 * Usage: bench_vmm [iterations]   Prints one line per measurement. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "tests/common/tiny_elf.h"
#include "vmm/boot/boot.h"
#include "vmm/vm.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* mov $N,%ecx; 1: out %al,$0x80; dec %ecx; jnz 1b; mov $0xf4,%dx; xor %eax,%eax; out %eax,%dx;
 * hlt */
static uint8_t code_out_loop[] = {0xb9, 0xa0, 0x86, 0x01, 0x00, 0xe6, 0x80, 0xff, 0xc9, 0x75,
                                  0xfa, 0x66, 0xba, 0xf4, 0x00, 0x31, 0xc0, 0xef, 0xf4};
/* 1: jmp 1b */
static uint8_t code_spin[] = {0xeb, 0xfe};

static struct vm *boot_vm(const uint8_t *code, size_t len, struct vm_config *cfg)
{
    struct hv_err err = {0};
    cfg->nr_vcpus = 1;
    cfg->mem_bytes = 64ull << 20;
    cfg->console_fd = -1;
    struct vm *vm = vm_create(cfg, &err);
    if (!vm) {
        fprintf(stderr, "bench_vmm: %s\n", err.msg);
        exit(1);
    }
    static uint8_t img[0x2000];
    struct boot_image k = {"bench.elf", img, tiny_elf_image(img, sizeof(img), code, len)};
    struct boot_config bc = {.nr_cpus = 1, .mem_bytes = cfg->mem_bytes};
    struct boot_entry be;
    if (boot_load_images(vm_gmem(vm), &bc, &k, NULL, &be, &err) < 0) {
        fprintf(stderr, "bench_vmm: %s\n", err.msg);
        exit(1);
    }
    struct vm_entry e = {.regs = be.regs, .sregs = be.sregs};
    vm_set_entry(vm, &e);
    return vm;
}

static void bench_port_io(uint32_t n)
{
    memcpy(code_out_loop + 1, &n, 4);
    struct vm_config cfg = {0};
    struct vm *vm = boot_vm(code_out_loop, sizeof(code_out_loop), &cfg);
    struct vm_result r;
    struct hv_err err = {0};
    double t0 = now_s();
    vm_run(vm, &r, &err);
    double dt = now_s() - t0;
    printf("port-io exit round trip: %u exits in %.3f s = %.2f us/exit (includes ~3 emulated "
           "CPL0 instructions per iteration; stop=%s)\n",
           n, dt, dt * 1e6 / n, vm_stop_reason_name(r.reason));
    vm_destroy(vm);
}

struct imm_ctx {
    uint32_t n;
    double us;
};

static int imm_start(void *ctx, struct vcpu *v, struct hv_err *err)
{
    struct imm_ctx *c = ctx;
    double t0 = now_s();
    for (uint32_t i = 0; i < c->n; i++) {
        v->run->immediate_exit = 1;
        if (ioctl(v->fd, KVM_RUN, 0) == 0 || errno != EINTR)
            return hv_errf(err, "KVM_RUN with immediate_exit did not return EINTR");
    }
    v->run->immediate_exit = 0;
    c->us = (now_s() - t0) * 1e6 / c->n;
    return 0;
}

static void bench_immediate_exit(uint32_t n)
{
    struct imm_ctx c = {.n = n};
    struct vm_config cfg = {.timeout_s = 0.05, .hooks = {.ctx = &c, .vcpu_start = imm_start}};
    struct vm *vm = boot_vm(code_spin, sizeof(code_spin), &cfg);
    struct vm_result r;
    struct hv_err err = {0};
    vm_run(vm, &r, &err);
    printf("KVM_RUN with immediate_exit (no guest entry): %.2f us per call (%u calls)\n", c.us, n);
    vm_destroy(vm);
}

struct tick_ctx {
    timer_t t;
    uint64_t ticks, calls;
};

static int tick_start(void *ctx, struct vcpu *v, struct hv_err *err)
{
    struct tick_ctx *c = ctx;
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = HV_SIG_TICK;
    sev._sigev_un._tid = v->tid;
    if (timer_create(CLOCK_MONOTONIC, &sev, &c->t) < 0)
        return hv_errf_errno(err, "timer_create");
    struct itimerspec its = {{0, 250000}, {0, 250000}}; /* 4 kHz */
    return timer_settime(c->t, 0, &its, NULL);
}

static void tick_int(void *ctx, struct vcpu *v, uint64_t ticks)
{
    struct tick_ctx *c = ctx;
    struct kvm_regs regs;
    vcpu_get_regs(v, &regs, NULL);
    c->ticks += ticks;
    c->calls++;
}

static void tick_stop(void *ctx, struct vcpu *v)
{
    (void)v;
    timer_delete(((struct tick_ctx *)ctx)->t);
}

static void bench_ticks(bool sync)
{
    struct tick_ctx c = {0};
    struct vm_config cfg = {.timeout_s = 1.0,
                            .sync_regs = sync,
                            .hooks = {.ctx = &c,
                                      .vcpu_start = tick_start,
                                      .vcpu_interrupted = tick_int,
                                      .vcpu_stop = tick_stop}};
    struct vm *vm = boot_vm(code_spin, sizeof(code_spin), &cfg);
    struct vm_result r;
    struct hv_err err = {0};
    vm_run(vm, &r, &err);
    printf("4 kHz HV_SIG_TICK timer, %s: %llu ticks, %llu interrupted exits in 1 s\n",
           sync ? "SYNC_REGS" : "KVM_GET_REGS", (unsigned long long)c.ticks,
           (unsigned long long)c.calls);
    vm_destroy(vm);
}

int main(int argc, char **argv)
{
    uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 100000;
    bench_port_io(n);
    bench_immediate_exit(n);
    bench_ticks(true);
    bench_ticks(false);
    return 0;
}
