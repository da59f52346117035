/* guestwalk/tests/cfi_funcs.c: real call chains without frame pointers. */
#pragma once

#include <stdbool.h>

struct cfi_call {
    void (*leaf)(void *arg); /* called at the innermost point (cfi_c) */
    void *arg;
    int recurse;     /* cfi_a calls itself this many times first */
    bool through_fp; /* cfi_b -> fp_mid -> cfi_c instead of cfi_b -> cfi_c */
    bool signal;     /* cfi_c raises SIGUSR1 instead of calling leaf */
};

long cfi_a(const struct cfi_call *c, int depth);
long cfi_b(const struct cfi_call *c, int depth);
long cfi_c(const struct cfi_call *c, int depth);
long fp_mid(const struct cfi_call *c, int depth);
long cfi_through_qsort(const struct cfi_call *c);
