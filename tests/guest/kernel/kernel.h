/* The test guest kernel's internal interfaces: types, per-CPU data, threads and processes, and
 * the small helpers every file uses. Freestanding: no libc, no SSE (-mgeneral-regs-only). */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "vmm/boot/hvprof_boot.h"

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#define NOINLINE __attribute__((noinline))
/* gcc 12 omits the frame pointer in leaf functions that need no stack frame, whatever
 * -mno-omit-leaf-frame-pointer says; taking __builtin_frame_address(0) forces one. Used in the
 * kernel functions whose chains are ground truth (docs/test-guest.md). */
#define FORCE_FRAME() __asm__ volatile("" : : "r"(__builtin_frame_address(0)) : "memory")
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- trap frame (layout fixed by trap.S) ---- */
struct trapframe {
    u64 r15, r14, r13, r12, r11, r10, r9, r8, rbp, rdi, rsi, rdx, rcx, rbx, rax;
    u64 vector, error;
    u64 rip, cs, rflags, rsp, ss; /* pushed by the CPU */
};
_Static_assert(sizeof(struct trapframe) == 176, "trap.S assumes 176 bytes");

/* ---- per-CPU data: at the bottom of a CPU_AREA_SIZE-aligned area whose rest is the CPU's
 * kernel stack, so this_cpu() is a mask of RSP (no GS base needed, user GS stays untouched). */
struct tss {
    u32 reserved0;
    u64 rsp0, rsp1, rsp2;
    u64 reserved1;
    u64 ist[7];
    u64 reserved2;
    u16 reserved3, iomap_base;
} __attribute__((packed));

struct thread;

struct cpu {
    u32 index;
    u32 apic_id;
    struct thread *current; /* NULL while idle */
    u64 loaded_cr3;
    u64 ticks;
    u64 gdt[7];
    struct tss tss;
    volatile u32 online;
};

union cpu_area {
    struct cpu cpu;
    u8 stack[CPU_AREA_SIZE];
} __attribute__((aligned(CPU_AREA_SIZE)));

extern union cpu_area cpu_areas[MAX_CPUS];

static inline struct cpu *this_cpu(void)
{
    u64 rsp;
    __asm__("mov %%rsp, %0" : "=r"(rsp));
    return (struct cpu *)(rsp & ~(u64)(CPU_AREA_SIZE - 1));
}

/* ---- processes and threads ---- */
#define MAX_PROCS     64
#define MAX_THREADS   256
#define PROC_NAME_MAX 32

enum thread_state { T_FREE, T_RUNNABLE, T_RUNNING, T_BLOCKED, T_DEAD };
enum proc_state { P_FREE, P_STARTING, P_LIVE, P_DONE };

struct process;

/* Thread and process ids are never reused; their slots are, once a thread is dead and off
 * every CPU and the run queue, and a spawned process has given its memory back. */
struct thread {
    enum thread_state state;
    int tid; /* 1-based, never reused */
    struct process *proc;
    struct trapframe tf;
    u64 fs_base;
    int join_tid;        /* while T_BLOCKED in thread_join */
    int wait_pid;        /* while T_BLOCKED in wait */
    int stack_slot;      /* its stack: TOP - slot * USER_STACK_SLOT */
    bool in_rq;          /* linked in the run queue (a dead one too, until popped) */
    int joiners;         /* threads blocked joining it */
    struct thread *next; /* run queue */
};

#define PROC_STACK_SLOTS 64 /* threads of one process alive at once */

struct process {
    enum proc_state state;
    int pid;      /* 1-based, never reused */
    int instance; /* copy number among processes of the same program (spawn: its argument) */
    char name[PROC_NAME_MAX];
    u64 cr3; /* physical address of the PML4 (never reused: every process has its own root) */
    int live_threads;
    u64 slots_used, slots_mapped; /* stack slots: a bit each */
    bool exiting;
    bool spawned; /* started by GUEST_SYS_SPAWN: quiet, gives its memory back at its end */
    u64 image_lo, image_hi; /* its program's pages */
    int waiters;            /* threads blocked waiting for it */
    int status;
};

/* ---- global configuration (from the command line) ---- */
struct guest_config {
    char cmdline[4096];
    char progs[512];
    int procs;      /* copies of `workload` */
    int hugepages;  /* user stacks as 2 MiB pages */
    int cpus;       /* vCPUs to use (0 = all in the MP table) */
    int zero_pages; /* zero every allocated page (RAM not known to start zeroed) */
    u32 timer_hz;   /* LAPIC timer (scheduler tick) rate */
};

extern struct guest_config config;
extern u64 tsc_hz;
extern u32 nr_cpus_online;

/* ---- small helpers (lib.c) ---- */
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strncmp(const char *a, const char *b, size_t n);
void zero_page(void *p); /* 4 KiB, rep stosq */

#include "lib/fmt.h"

/* ---- console.c ---- */
void console_write(const char *s, size_t n); /* takes the console lock */
void kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void guest_exit(u32 status);

/* ---- spinlocks (lock cmpxchg: emulated correctly at CPL 0 here) ---- */
typedef struct {
    volatile u32 v;
} spinlock_t;

static inline void spin_lock(spinlock_t *l)
{
    for (;;) {
        u32 expected = 0;
        if (__atomic_compare_exchange_n(&l->v, &expected, 1, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            return;
        while (__atomic_load_n(&l->v, __ATOMIC_RELAXED))
            __asm__ volatile("pause");
    }
}

static inline void spin_unlock(spinlock_t *l)
{
    __atomic_store_n(&l->v, 0, __ATOMIC_RELEASE);
}

/* ---- CPU instructions ---- */
static inline u64 rdtsc(void)
{
    u32 lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((u64)hi << 32) | lo;
}
static inline u64 rdmsr(u32 msr)
{
    u32 lo, hi;
    __asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
    return ((u64)hi << 32) | lo;
}
static inline void wrmsr(u32 msr, u64 v)
{
    __asm__ volatile("wrmsr" ::"c"(msr), "a"((u32)v), "d"((u32)(v >> 32)));
}
static inline void outb(u16 port, u8 v)
{
    __asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port));
}
static inline void outl(u16 port, u32 v)
{
    __asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port));
}
static inline u8 inb(u16 port)
{
    u8 v;
    __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
static inline void write_cr3(u64 v)
{
    __asm__ volatile("mov %0, %%cr3" ::"r"(v) : "memory");
}
static inline u64 read_cr3(void)
{
    u64 v;
    __asm__ volatile("mov %%cr3, %0" : "=r"(v));
    return v;
}
static inline void cpuid(u32 leaf, u32 sub, u32 *a, u32 *b, u32 *c, u32 *d)
{
    __asm__ volatile("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(sub));
}

#define MSR_EFER    0xc0000080
#define MSR_FS_BASE 0xc0000100 /* SDM Vol. 4, table 2-2 */

/* ---- physical memory: phys <-> kernel virtual ---- */
static inline void *phys_to_virt(u64 pa)
{
    return (void *)(DMAP_BASE + pa);
}
static inline u64 kimage_to_phys(const void *p)
{
    return (u64)p - KVBASE;
}

/* mem.c */
void mem_init(const struct hvprof_bootinfo *bi);
u64 phys_alloc(u64 size); /* 4 KiB or 2 MiB, aligned, zero; panics when out of memory */
/* A 4 KiB page from the pools of pages processes gave back, else new: `clean` = all zero (a
 * page table's); else maybe a used page (a program's data or stack). */
u64 page_alloc(bool clean);
void page_free(u64 pa, bool clean); /* clean: every word zero but what the pool writes */
u64 mem_free_bytes(void);

/* vm.c: user address spaces */
#define PTE_P    0x1ull
#define PTE_W    0x2ull
#define PTE_U    0x4ull
#define PTE_PS   0x80ull
#define PTE_SHARED 0x200ull /* AVL bit 9: a page of a program's code shared by its processes */
#define PTE_ADDR 0x000ffffffffff000ull
u64 vm_new_pml4(void);
void vm_map(u64 pml4, u64 va, u64 pa, u64 flags, bool huge);
u64 *vm_pte(u64 pml4, u64 va); /* the 4 KiB PTE for va, creating page tables on the way */
bool vm_user_range_ok(u64 pml4, u64 va, u64 len, bool write);
void vm_map_stack(u64 pml4, u64 top, bool huge);
/* A process that gives its memory back (spawned, no hostile mappings): the pages of [lo, hi)
 * unmapped (shared code pages stay), then the tables that covered only such ranges. */
void vm_unmap_range(u64 pml4, u64 lo, u64 hi);
void vm_free_tables(u64 pml4, u64 lo, u64 hi);

/* cpu.c */
void cpu_init_tables(struct cpu *c); /* GDT, TSS, IDT, CR4 features */
extern bool cpu_has_fsgsbase;

/* lapic.c */
void lapic_init(void);
u32 lapic_id(void);
void lapic_eoi(void);
void lapic_timer_start(u32 hz);
u64 lapic_calibrate_tsc(void);
void lapic_send_init(u32 apic_id);
void lapic_send_sipi(u32 apic_id, u32 vector);
void delay_us(u64 us);

/* mptable.c */
int mptable_cpus(const struct hvprof_bootinfo *bi, u32 *apic_ids, int max);

/* smp.c */
void smp_start_aps(const u32 *apic_ids, int n);

/* cmdline.c */
void cmdline_parse(const char *s, size_t len);
bool cmdline_get(const char *key, char *out, size_t outsz);
long cmdline_int(const char *key, long def);

/* archive.c: cpio "newc" boot archive */
void archive_init(const void *base, u64 size);
const void *archive_find(const char *name, u64 *size);

/* elf.c */
/* shared: the process gives its memory back (its read-only pages are the program's). */
/* [*lo, *hi): the pages it mapped. */
int elf_load(u64 pml4, const u8 *img, u64 size, u64 *entry, const char **why, bool shared,
             u64 *lo, u64 *hi);

/* proc.c */
struct process *proc_spawn(const char *name, int instance);
/* GUEST_SYS_SPAWN: pid, or GUEST_EAGAIN (no slot) / GUEST_EINVAL (no such program). */
long proc_spawn_user(const char *name, int arg);
/* GUEST_SYS_WAIT: blocks `cur` until process pid ends; false if it is not running (then
 * *status is its status if its slot still says, else 0). Caller holds sched_lock. */
bool proc_wait(struct thread *cur, int pid, int *status);
struct thread *thread_new(struct process *p, u64 rip, u64 rdi, u64 rsi, u64 fs_base);
int thread_create_user(struct thread *cur, u64 fn, u64 arg, u64 fs_base, u64 entry);
void proc_exit(struct thread *cur, int status); /* caller holds sched_lock */
void thread_die(struct thread *t);              /* caller holds sched_lock */
struct thread *thread_by_tid(int tid);
int thread_last_tid(void); /* the highest tid given so far */
void proc_start_all(void);
extern spinlock_t sched_lock;

/* sched.c */
void rq_push(struct thread *t); /* caller holds sched_lock */
void sched_tick(struct cpu *c, struct trapframe *tf);
void sched_yield(struct cpu *c, struct trapframe *tf);
void sched_block(struct cpu *c, struct trapframe *tf); /* current already marked blocked */
void sched_leave(struct cpu *c, struct trapframe *tf); /* current is dead: run something else */
void sched_first(struct trapframe *tf);
void cpu_idle_wait(void); /* sti; hlt; cli */
void sched_user_return(struct cpu *c, struct trapframe *tf);
_Noreturn void cpu_enter_scheduler(void);

/* syscall.c */
void syscall_dispatch(struct cpu *c, struct trapframe *tf);
u64 kbusy_level1(u64 until);

/* hostile.c: GUEST_SYS_HOSTILE, the hostile programs' debug operations (guest_abi.h) */
long sys_hostile(struct thread *t, struct trapframe *tf);

/* trap.c */
void trap_dispatch(struct trapframe *tf);

/* stats */
extern volatile u64 first_user_tsc;
extern u64 kernel_entry_tsc;
