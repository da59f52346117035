/* A stack walker of the drain thread's, for the sources that walk stacks after the exit (copied
 * stacks, off-CPU visits): opened at its first use (capstone, for the leaf repair), with the
 * recording's depth and leaf-repair choice; one that cannot be opened is never tried again. */
#pragma once

#include <stdbool.h>

#include "guestwalk/walker.h"
#include "sampler/source/config.h"

struct gmem;

struct drain_walker {
    struct gw_walker w;
    bool ok, failed;
};

/* dw ready to walk `mem` (NULL: no guest memory, false). */
bool drain_walker_open(struct drain_walker *dw, const struct gmem *mem,
                       const struct sampler_config *cfg);
void drain_walker_close(struct drain_walker *dw);
