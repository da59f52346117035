/* Java frames from a thread's registers, as the JVM lays them on x86-64 (docs/java.md, "The
 * walk"): from a pc in the code cache or the template interpreter, frame by frame, until the
 * return leaves Java (the call stub that entered it, or native code): each interpreted frame's
 * Method* and bytecode index from its slots, each compiled frame's nmethod, its size and its
 * PcDesc's scope chain (the inlined methods as frames of their own), stubs and adapters as
 * themselves. Bounded, no allocation: the exit path's rules. */
#pragma once

#include <stdint.h>

#include "java/hs_code.h"

enum hs_frame_kind {
    HS_FRAME_INTERPRETED = 1, /* code: Method*, bci */
    HS_FRAME_COMPILED,        /* code: Method* (the nmethod's own), bci from its PcDesc */
    HS_FRAME_INLINED,         /* code: Method* inlined into the compiled frame after it */
    HS_FRAME_STUB,            /* code: the blob (a stub, an adapter, a runtime stub) */
};

struct hs_frame {
    uint8_t kind;
    int32_t bci; /* -1: not known */
    uint64_t code;
};

struct hs_regs {
    uint64_t pc, sp, fp;
};

#define HS_MAX_SCOPES 64 /* inlining depth read of one compiled frame (C2's MaxInlineLevel 15) */

/* Frames of the thread at *r (innermost first) into out[0..max); returns how many. On return
 * *r holds where native code resumes (the frame that called into Java), its pc 0 when the walk
 * could not tell. */
unsigned hs_walk(const struct hs_code_cache *cc, const struct hs_layout *l, const struct rt_mem *m,
                 struct hs_regs *r, struct hs_frame *out, unsigned max);

/* The scope chain of nmethod `blob` at pc (innermost first): Method*s and bcis. */
unsigned hs_scopes(const struct hs_layout *l, const struct rt_mem *m, const struct hs_blob *b,
                   uint64_t pc, bool exact, struct hs_frame *out, unsigned max);
