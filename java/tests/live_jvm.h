/* A JVM on this host for the Java tests and benchmark: Debian's java running Chains
 * (java/tests/Chains.java), its libjvm.so found in its maps, the VMStructs symbols' run-time
 * addresses from libjvm's dynamic symbols, its memory read through process_vm_readv. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "java/hs_vmstructs.h"

struct live_jvm {
    pid_t pid;
    char libjvm[900];
    uint64_t base; /* where libjvm.so's file offset 0 is mapped */
    uint64_t addr[HS_SYM_COUNT];
    char why[1200]; /* what failed */
};

/* Start `java` (NULL: $HVPROF_JAVA, else the configured one) on Chains in `classes`, wait for
 * its "ready", find libjvm and its symbols. False with why (the JVM then killed). */
bool live_jvm_start(struct live_jvm *j, const char *java, const char *classes);
void live_jvm_stop(struct live_jvm *j);
/* rt_mem's read for j->pid (ctx: the struct live_jvm). */
bool live_jvm_read(void *ctx, uint64_t va, void *dst, size_t len);
/* The tid of its thread whose kernel name starts with comm, or -1. */
pid_t live_jvm_thread(const struct live_jvm *j, const char *comm);
