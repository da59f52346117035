/* The one continuation store of the exit path (RFC-0274's continuation records, with the
 * hypervisor as "the kernel"; docs/sampling.md). A guest thread's open continuation lives in
 * its slot of the id tables (id_thread.cont, shared by every vCPU, one CAS winner); each vCPU
 * keeps the continuations its own samples carried (exit_vcpu.pend) to re-check for and to
 * abandon. Every record a continuation ends with — a completion with the user stack, or one
 * abandoned — is written here, and only here. */
#pragma once

#include <stdint.h>

#include "guestwalk/unwind.h"
#include "sampler/exit/core.h"

/* A kernel-mode sample of user thread (proc, thread): its open continuation id, opened now if
 * none is; 0 when the thread has no slot (table full). */
uint64_t exit_cont_open(struct exit_vcpu *sv, uint32_t proc, uint32_t thread, uint64_t now);
/* The thread is back in user mode: its open continuation (0: none), taken from the slot so
 * that no other vCPU completes it too. */
uint64_t exit_cont_take(struct exit_vcpu *sv, uint32_t thread);
/* Complete `cont` (taken with exit_cont_take) with this user stack: one completion record for
 * every partial record that carried it, on whichever vCPU they were taken (`walk`: the walk
 * word of ustack, schema/schema.h). */
void exit_cont_complete(struct exit_vcpu *sv, uint64_t cont, uint64_t pid, uint64_t tid,
                        uint64_t now, const struct gw_stack *ustack, uint64_t walk);
/* A continuation id of this vCPU's, unique in the recording (the vCPU index in the top byte). */
uint64_t exit_cont_fresh(struct exit_vcpu *sv);
/* `cont` (taken with exit_cont_take) will be completed by the drain thread, from a copy of the
 * stack (stack_copy.h): counted as completed, no longer this vCPU's to re-check or abandon. */
void exit_cont_handed_off(struct exit_vcpu *sv, uint64_t cont);
/* Forget what was completed elsewhere; abandon what stayed open too long. */
void exit_conts_expire(struct exit_vcpu *sv, uint64_t now);
/* The vCPU stops: abandon every continuation it still carries (none left without its
 * completion). */
void exit_conts_end(struct exit_vcpu *sv, uint64_t now);
