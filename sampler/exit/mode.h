/* What a timer exit samples (`record --mode`), shared by the exit core and the recorder's
 * configuration (sampler/sampler.h). */
#pragma once

enum sampler_mode {
    SAMPLER_MODE_CPU,   /* a tick counts only if the vCPU was running (not halted) */
    SAMPLER_MODE_WALL,  /* every tick is a sample, halted or not */
    SAMPLER_MODE_EXITS, /* take every timer exit and re-enter at once: the machine's exit floor */
};
