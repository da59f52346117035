#include "sampler/parts/drain_walker.h"

bool drain_walker_open(struct drain_walker *dw, const struct gmem *mem,
                       const struct sampler_config *cfg)
{
    if (dw->ok || dw->failed)
        return dw->ok;
    struct gw_config gc = {.max_depth = cfg->max_depth, .no_leaf_repair = cfg->no_leaf_repair};
    struct hv_err e = {0};
    dw->ok = mem && gw_walker_init(&dw->w, mem, &gc, &e) == 0;
    dw->failed = !dw->ok;
    return dw->ok;
}

void drain_walker_close(struct drain_walker *dw)
{
    if (dw->ok)
        gw_walker_fini(&dw->w);
    dw->ok = false;
}
