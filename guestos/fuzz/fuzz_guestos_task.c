/* libFuzzer: the current task read at an exit from a hostile guest's memory. The input is guest
 * RAM from guest-physical 0, page tables included (CR3 points at its first page), so the guest
 * controls every translation, the per-CPU areas, the task pointers, the task_structs and their
 * mms; the reader's layout is fixed. Each input is read as four stops (kernel mode with a CPU's
 * GS base, user mode with and without IA32_KERNEL_GS_BASE, kernel mode before SWAPGS): every
 * read must stay bounded, and what comes out must be a valid identity or "unreadable". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_ram.h"
#include "guestos/linux/task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CPU0 0xffff888000001000ull
#define CPU1 0xffff888000002000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gmem mem;
    uint8_t *ram = fuzz_ram(data, size, 1u << 20, 0, &mem);
    if (!ram)
        return 0;
    static struct gw_walker w;
    static bool ready;
    if (!ready) {
        if (gw_walker_init(&w, &mem, NULL, NULL) < 0)
            abort();
        ready = true;
    }
    w.mem = &mem;
    static struct lx_task_reader *rd;
    if (!rd) {
        rd = calloc(1, sizeof(*rd) + 2 * sizeof(rd->cpus[0]));
        if (!rd)
            abort();
        rd->current_ptr = 0x40;
        rd->layout = (struct lx_task_layout){.known = true,
                                             .pid = 0x100,
                                             .tgid = 0x104,
                                             .flags = 0x10,
                                             .mm = 0x108,
                                             .group_leader = 0x110,
                                             .comm = 0xff8,
                                             .comm_size = 16,
                                             .mm_pgd = 0x20};
        rd->ncpus = 2;
        rd->cpus[0] = (struct lx_cpu_area){CPU0, 0};
        rd->cpus[1] = (struct lx_cpu_area){CPU1, 1};
    }
    struct guestos_vcpu vc;
    guestos_vcpu_init(NULL, &vc);
    const struct {
        uint8_t cpl;
        uint64_t gs, kgs;
    } stops[] = {{0, CPU0, 0}, {3, 0, CPU1}, {3, 0x7f0000000000ull, 0}, {0, 0, 0}};
    for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
        struct gw_snapshot s = {
            .cr0 = 0x80000001, .cr3 = 0, .cr4 = 0x20, .efer = 0x500, .cpl = stops[i].cpl};
        s.gs_base = stops[i].gs;
        if (stops[i].kgs) {
            s.kernel_gs_base = stops[i].kgs;
            s.have = GW_SNAP_MSRS;
        }
        gw_walker_begin(&w, &s);
        struct guestos_ident id = {.proc_key = 0x5000, .as_root = 0x5000, .thread_key = 1};
        lx_task_read(rd, &vc, &w, &id);
        if (id.task.known) {
            if (id.task.pid < 0 || id.task.tid < 0 || id.task.pid > LX_PID_MAX_LIMIT ||
                memchr(id.task.comm, 0, sizeof(id.task.comm)) == NULL ||
                memchr(id.task.process, 0, sizeof(id.task.process)) == NULL)
                abort();
            for (const char *c = id.task.comm; *c; c++)
                if (*c < 0x20 || *c >= 0x7f)
                    abort();
            if (!id.as_root && !(id.proc_key & GUESTOS_KEY_NOT_ROOT))
                abort();
        } else if (id.proc_key != 0x5000 || id.thread_key != 1) {
            abort(); /* an unreadable task leaves the generic identity as it was */
        }
    }
    free(ram);
    return 0;
}
