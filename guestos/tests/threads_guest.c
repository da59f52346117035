#include "guestos/tests/threads_guest.h"

#include <string.h>

#include "guestos/linux/orc_unwind.h"

/* task_struct, mm_struct, signal_struct and inactive_task_frame as a BTF could lay them out. */
enum {
    T_FLAGS = 0x10,
    T_STATE = 0x18,
    T_EXIT_STATE = 0x1c,
    T_EXEC = 0x20,
    T_NVCSW = 0x28,
    T_NIVCSW = 0x30,
    T_SIGNAL = 0x38,
    T_THREAD_NODE = 0x40,
    T_TASKS = 0x50,
    T_ON_CPU = 0x60,
    T_CPU = 0x64,
    T_THREAD_SP = 0x68,
    T_STACK = 0x70,
    T_COMM = 0x80,
    T_PID = 0x100,
    T_TGID = 0x104,
    T_MM = 0x108,
    T_LEADER = 0x110,
    MM_PGD = 0x20,
    SIG_THREAD_HEAD = 0x10,
    F_BP = 0x28,
    F_RET = 0x30,
    F_SIZE = 0x38,
};

void *tg_at(struct tg *x, uint64_t gpa)
{
    return gimg_host(&x->g, gpa);
}

static void put64(struct tg *x, uint64_t va, uint64_t v)
{
    memcpy(tg_at(x, va - TG_DIRECT), &v, 8);
}

static void put32(struct tg *x, uint64_t va, uint32_t v)
{
    memcpy(tg_at(x, va - TG_DIRECT), &v, 4);
}

/* A circular list of the nodes at `off` in each of `items` (n of them) after `head`. */
static void link(struct tg *x, uint64_t head, const uint64_t *items, unsigned n, uint64_t off)
{
    uint64_t prev = head;
    for (unsigned i = 0; i < n; i++) {
        put64(x, prev, items[i] + off);
        put64(x, items[i] + off + 8, prev);
        prev = items[i] + off;
    }
    put64(x, prev, head);
    put64(x, head + 8, prev);
}

static void task(struct tg *x, unsigned i, int32_t pid, int32_t tgid, const char *comm,
                 uint32_t state, uint32_t exit_state, uint32_t flags, uint64_t mm, uint64_t leader,
                 uint64_t signal, uint32_t cpu, uint64_t exec_ns, uint64_t switches, bool fred)
{
    uint64_t t = TG_TASK(i);
    put32(x, t + T_FLAGS, flags);
    put32(x, t + T_STATE, state);
    put32(x, t + T_EXIT_STATE, exit_state);
    put64(x, t + T_EXEC, exec_ns);
    put64(x, t + T_NVCSW, switches);
    put64(x, t + T_NIVCSW, 1);
    put64(x, t + T_SIGNAL, signal);
    put32(x, t + T_ON_CPU, 0);
    put32(x, t + T_CPU, cpu);
    put64(x, t + T_STACK, TG_STACK(i));
    memcpy(tg_at(x, t + T_COMM - TG_DIRECT), comm, strlen(comm) + 1);
    put32(x, t + T_PID, (uint32_t)pid);
    put32(x, t + T_TGID, (uint32_t)tgid);
    put64(x, t + T_MM, mm);
    put64(x, t + T_LEADER, leader);
    /* The switch frame at the stack's middle; a user task's pt_regs at its top. */
    uint64_t frame = TG_STACK(i) + 0x2000;
    put64(x, t + T_THREAD_SP, frame);
    put64(x, frame + F_BP, frame + 0x100);
    put64(x, frame + F_RET, TG_KERNEL_RIP);
    if (mm) {
        uint64_t regs = TG_STACK(i) + 16384 - (fred ? 16 : 0) - LX_PT_SIZE;
        put64(x, regs + LX_PT_IP, TG_USER_RIP + i);
        put64(x, regs + LX_PT_CS, 0x33);
        put64(x, regs + LX_PT_SP, TG_USER_SP);
        put64(x, regs + LX_PT_SP + 8, 0x2b);
        put64(x, regs + LX_PT_BP, TG_USER_BP);
    }
}

int tg_build(struct tg *x, bool fred)
{
    memset(x, 0, sizeof(*x));
    if (gimg_init(&x->g, false) < 0 || !(x->k = lx_kernel_new()))
        return -1;
    for (uint64_t off = 0; off < GIMG_RAM0_SIZE; off += 2ull << 20)
        if (!gimg_map(&x->g, TG_DIRECT + off, off, 2ull << 20, GIMG_KERN_RW))
            return -1;
    /* The allocator must not hand out the task area. */
    if (x->g.next_page < TG_AREA_GPA + TG_AREA_SIZE)
        x->g.next_page = TG_AREA_GPA + TG_AREA_SIZE;
    x->k->task = (struct lx_task_layout){.known = true,
                                         .pid = T_PID,
                                         .tgid = T_TGID,
                                         .comm = T_COMM,
                                         .mm = T_MM,
                                         .flags = T_FLAGS,
                                         .group_leader = T_LEADER,
                                         .comm_size = 16,
                                         .mm_pgd = MM_PGD,
                                         .stack = T_STACK};
    x->k->sym.init_task = TG_INIT_TASK;
    x->pl = (struct lx_proc_layout){.known = true, .tasks = T_TASKS};
    x->sl = (struct lx_switch_layout){.known = true,
                                      .thread_sp = T_THREAD_SP,
                                      .frame_bp = F_BP,
                                      .frame_ret = F_RET,
                                      .frame_size = F_SIZE};
    char why[128];
    if (lx_kread_init(&x->kr, &x->g.mem, x->g.root, false, why, sizeof(why)) < 0)
        return -1;
    x->t = (struct lx_threads){
        .k = x->k,
        .kr = &x->kr,
        .pl = &x->pl,
        .sl = &x->sl,
        .tl = {.known = true,
               .state = T_STATE,
               .state_size = 4,
               .exit_state = T_EXIT_STATE,
               .on_cpu = T_ON_CPU,
               .cpu = T_CPU,
               .exec_ns = T_EXEC,
               .nvcsw = T_NVCSW,
               .nivcsw = T_NIVCSW,
               .signal = T_SIGNAL,
               .thread_node = T_THREAD_NODE,
               .has_cpu = true,
               .has_on_cpu = true,
               .thread_head = SIG_THREAD_HEAD},
        .kernel_root = x->g.root,
    };
    put64(x, TG_MM + MM_PGD, TG_VA(TG_PGD_GPA));
    /* include/linux/sched.h: TASK_INTERRUPTIBLE 1, TASK_UNINTERRUPTIBLE 2, TASK_IDLE 0x402,
     * EXIT_ZOMBIE 32; PF_KTHREAD. */
    task(x, 0, 0, 0, "swapper/0", 0, 0, LX_PF_KTHREAD, 0, TG_INIT_TASK, TG_SIGNAL(0), 0, 0, 0,
         fred);
    task(x, 1, 100, 100, "server", 1, 0, 0, TG_MM, TG_TASK(1), TG_SIGNAL(1), 0, 5000000, 40, fred);
    task(x, 2, 101, 100, "server-io", 2, 0, 0, TG_MM, TG_TASK(1), TG_SIGNAL(1), 1, 7000000, 9,
         fred);
    task(x, 3, 2, 2, "kthreadd", 0x402, 0, LX_PF_KTHREAD, 0, TG_TASK(3), TG_SIGNAL(3), 0, 100, 3,
         fred);
    task(x, 4, 300, 300, "gone", 0, 32, 0, 0, TG_TASK(4), TG_SIGNAL(4), 0, 1, 1, fred);
    /* init_task is a task of its own list's head (not a thread the visit gives). */
    uint64_t leaders[] = {TG_TASK(1), TG_TASK(3), TG_TASK(4)};
    link(x, TG_INIT_TASK + T_TASKS, leaders, 3, T_TASKS);
    uint64_t server[] = {TG_TASK(1), TG_TASK(2)};
    link(x, TG_SIGNAL(1) + SIG_THREAD_HEAD, server, 2, T_THREAD_NODE);
    link(x, TG_SIGNAL(3) + SIG_THREAD_HEAD, &leaders[1], 1, T_THREAD_NODE);
    link(x, TG_SIGNAL(4) + SIG_THREAD_HEAD, &leaders[2], 1, T_THREAD_NODE);
    return 0;
}

void tg_free(struct tg *x)
{
    lx_kernel_free(x->k);
    gimg_free(&x->g);
    memset(x, 0, sizeof(*x));
}
