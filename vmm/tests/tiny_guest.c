#include "vmm/tests/tiny_guest.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define GDT_GPA  0x500ull
#define PML4_GPA 0x1000ull
#define PDPT_GPA 0x2000ull
#define PD_GPA   0x3000ull

static void put64(struct gmem *m, uint64_t gpa, uint64_t v)
{
    void *p = gmem_ptr(m, gpa, 8);
    assert_non_null(p);
    memcpy(p, &v, 8);
}

static struct kvm_segment seg(uint16_t sel, uint8_t type, uint8_t l, uint8_t db)
{
    return (struct kvm_segment){.base = 0,
                                .limit = 0xffffffff,
                                .selector = sel,
                                .type = type,
                                .present = 1,
                                .dpl = 0,
                                .db = db,
                                .s = 1,
                                .l = l,
                                .g = 1};
}

struct vm *tiny_vm(unsigned nr_vcpus, int console_fd, const uint8_t *code, size_t len,
                   const struct vm_config *base)
{
    struct vm_config cfg = {0};
    if (base)
        cfg = *base;
    cfg.nr_vcpus = nr_vcpus;
    if (!cfg.mem_bytes)
        cfg.mem_bytes = 16ull << 20;
    cfg.console_fd = console_fd;
    struct hv_err err = {0};
    struct vm *vm = vm_create(&cfg, &err);
    if (!vm || vm_start_devices(vm, &err) < 0)
        fail_msg("vm_create: %s", err.msg);
    struct gmem *m = vm_gmem(vm);
    /* SDM 3.4.5 descriptors: 64-bit code (L=1, type 0xb) and flat data (type 3). */
    put64(m, GDT_GPA + 0x10, 0x00af9b000000ffffull);
    put64(m, GDT_GPA + 0x18, 0x00cf93000000ffffull);
    put64(m, PML4_GPA, PDPT_GPA | 3);
    put64(m, PDPT_GPA, PD_GPA | 3);
    for (uint64_t i = 0; i < 512; i++)
        put64(m, PD_GPA + i * 8, (i << 21) | 0x83); /* present, writable, 2 MiB page */
    void *dst = gmem_ptr(m, TINY_CODE_GPA, len);
    assert_non_null(dst);
    memcpy(dst, code, len);

    struct vm_entry e;
    memset(&e, 0, sizeof(e));
    e.sregs.cs = seg(0x10, 0xb, 1, 0);
    e.sregs.ds = e.sregs.es = e.sregs.fs = e.sregs.gs = e.sregs.ss = seg(0x18, 0x3, 0, 1);
    e.sregs.tr = (struct kvm_segment){.limit = 0x67, .type = 0xb, .present = 1};
    e.sregs.ldt = (struct kvm_segment){.type = 0x2, .present = 1, .unusable = 1};
    e.sregs.gdt.base = GDT_GPA;
    e.sregs.gdt.limit = 0x1f;
    e.sregs.idt.limit = 0;    /* no IDT: any exception is a triple fault */
    e.sregs.cr0 = 0x80010033; /* PG WP NE ET MP PE */
    e.sregs.cr3 = PML4_GPA;
    e.sregs.cr4 = 0x20;   /* PAE */
    e.sregs.efer = 0x500; /* LMA LME */
    e.regs.rip = TINY_CODE_GPA;
    e.regs.rsp = TINY_STACK_TOP;
    e.regs.rflags = 2;
    vm_set_entry(vm, &e);
    return vm;
}

struct vm_result tiny_run(struct vm *vm)
{
    struct vm_result res;
    struct hv_err err = {0};
    if (vm_run(vm, &res, &err) < 0)
        fail_msg("vm_run: %s", err.msg);
    return res;
}

int tiny_console_fd(void)
{
    char path[] = "/tmp/hvprof-console-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    return fd;
}

size_t tiny_read_console(int fd, char *buf, size_t cap)
{
    ssize_t n = pread(fd, buf, cap - 1, 0);
    assert_true(n >= 0);
    buf[n] = 0;
    return (size_t)n;
}
