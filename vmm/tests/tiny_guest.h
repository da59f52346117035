/* Hand-assembled 64-bit guests for the real-KVM tests: a minimal long-mode set-up (GDT with
 * code 0x10 / data 0x18, 2 MiB identity map of the first 1 GiB, no IDT) and code at
 * TINY_CODE_GPA. The VMM is exercised exactly as `hvprof run` uses it. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "vmm/vm.h"

#define TINY_CODE_GPA  0x100000ull
#define TINY_STACK_TOP 0x90000ull

/* Create a VM (16 MiB, nr_vcpus, console to console_fd), copy code to TINY_CODE_GPA, build the
 * GDT/page tables and set vCPU 0's entry. Fails the test on error. */
struct vm *tiny_vm(unsigned nr_vcpus, int console_fd, const uint8_t *code, size_t len,
                   const struct vm_config *base);

/* Run to completion; returns the result. */
struct vm_result tiny_run(struct vm *vm);

/* Read everything written to fd (a temp file) from offset 0. */
size_t tiny_read_console(int fd, char *buf, size_t cap);
int tiny_console_fd(void);

/* 1 if /dev/kvm can be opened; tests skip (cmocka skip()) otherwise. */
