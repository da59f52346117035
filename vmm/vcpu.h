/* vCPU thread internals shared by vm.c and vcpu.c (not for hook writers: see vm.h). */
#pragma once

#include <stddef.h>

#include "vmm/vm.h"

/* pthread entry point of vCPU `arg` (a struct vcpu *). */
void *vcpu_thread(void *arg);

/* Append a register + sregs dump of v to buf (bounded). For fatal exits. */
void vcpu_dump(struct vcpu *v, char *buf, size_t len);
