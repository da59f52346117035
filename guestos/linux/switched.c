#include "guestos/linux/switched.h"

#include <stdio.h>
#include <string.h>

bool lx_switch_layout_of(const struct lx_kernel *k, struct lx_switch_layout *out, char *why,
                         size_t why_len)
{
    memset(out, 0, sizeof(*out));
    const struct lx_btf *b = &k->btf;
    uint32_t task = k->btf_types ? lx_btf_find_struct(b, "task_struct") : 0,
             frame = k->btf_types ? lx_btf_find_struct(b, "inactive_task_frame") : 0;
    uint64_t size;
    if (!task || !frame || !lx_btf_member(b, task, "thread.sp", &out->thread_sp, &size) ||
        size != 8 || !lx_btf_member(b, frame, "bp", &out->frame_bp, &size) || size != 8 ||
        !lx_btf_member(b, frame, "ret_addr", &out->frame_ret, &size) || size != 8 ||
        !lx_btf_type_size(b, frame, &out->frame_size) || out->frame_size > 256) {
        snprintf(why, why_len, "BTF: no task_struct.thread.sp or struct inactive_task_frame");
        return false;
    }
    out->known = true;
    return true;
}

bool lx_task_switched_regs(struct lx_kread *kr, const struct lx_switch_layout *l, uint64_t task,
                           struct gw_regs *out)
{
    uint64_t sp, bp, ret;
    if (!l->known || !lx_kread(kr, task + l->thread_sp, &sp, 8) || (sp >> 63) == 0 || (sp & 7) ||
        !lx_kread(kr, sp + l->frame_bp, &bp, 8) || !lx_kread(kr, sp + l->frame_ret, &ret, 8) ||
        (ret >> 63) == 0)
        return false;
    *out = (struct gw_regs){.rip = ret, .rsp = sp + l->frame_size, .rbp = bp};
    return true;
}
