/* User stacks copied at an exit, to be walked later with tables that do not exist yet
 * (docs/cfi.md, "Code the tables do not cover yet").
 *
 * A process's unwind tables are compiled on the drain thread after a look at its address space
 * (sampler/sources/cfi/cfi_tables.c), so a program's first moments — the loader, a library's
 * constructors, the start-up code of a library still being paged in — run before its modules have
 * tables. Walked with frame pointers there, code built without them (all of a distribution's
 * userland) loses its callers. So when a user walk meets a PC outside every module of the
 * process's map, the exit path copies the stack instead: the registers and up to
 * EXIT_COPY_BYTES from RSP into a slot of the vCPU's queue. The sample carries a continuation
 * (RFC-0274) with its exact PC, as a kernel-mode sample does. The drain thread walks the copy
 * once a newer map covers it (or after a wait), reading the stack from the copy and code from
 * the guest (guestwalk/tlb.h, struct gw_tlb_pin), and writes the completion.
 *
 * The queue is single-producer (the vCPU thread), single-consumer (the drain thread); the
 * recorder allocates its slots. Copies are bounded per vCPU (the slots) and per process
 * (EXIT_COPY_PER_PROC, ended early by the drain thread when copies stop gaining frames), so
 * code that never gets tables (JIT code, binaries without a build-id) costs a bounded number
 * of copies and is walked at the exit as before. */
#pragma once

#include "sampler/exit/copy_queue.h"

struct exit_vcpu;
struct guestos;

/* Exit path: should this user walk of process `proc` be done again later from a copy? `map`
 * is the map it used. */
bool exit_copy_wanted(const struct exit_vcpu *sv, const struct gw_cfi_map *map,
                      const struct gw_stack *st);
/* Exit path: copy the stack at `regs` (through the walker's current translation) into a free
 * slot, with the walk done now; NULL when the queue is full, the process's copies are spent
 * or nothing of the stack is readable. The caller fills in the ids and commits. */
struct exit_stack_copy *exit_copy_take(struct exit_vcpu *sv, uint32_t proc,
                                       const struct gw_cfi_map *map, const struct gw_regs *regs,
                                       const struct gw_stack *exit_walk, uint64_t exit_walk_word);
void exit_copy_commit(struct exit_vcpu *sv);

/* Drain thread: walk copy `c` with `map` (the process's current one) on `w`, a walker of the
 * drain thread's own. */
void exit_copy_walk(struct gw_walker *w, const struct guestos *os, const struct exit_stack_copy *c,
                    const struct gw_cfi_map *map, struct gw_stack *st);
