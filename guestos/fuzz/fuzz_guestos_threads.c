/* libFuzzer: every thread of a hostile Linux guest, listed as an off-CPU visit lists them
 * (guestos/linux/threads.h). The guest is the synthetic one of the unit test
 * (guestos/tests/threads_guest.h: page tables, the direct map, init_task and three thread
 * groups); the input is XORed onto its task area, so an empty input is a well-formed guest and
 * every mutation changes task_structs, lists, stacks and switch frames from there. Every list
 * walk must stay within its bounds, and what comes out must be a thread a report can show:
 * pids in range, a printable name, a state of /proc's, user registers in the user half. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestos/tests/threads_guest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ctx {
    struct tg *x;
    unsigned n;
};

static int check(void *arg, const struct guestos_thread *t)
{
    struct ctx *c = arg;
    c->n++;
    if (t->task.pid <= 0 || t->task.tid <= 0 || t->task.pid > LX_PID_MAX_LIMIT ||
        t->task.tid > LX_PID_MAX_LIMIT || t->state > GUESTOS_THREAD_IDLE ||
        memchr(t->task.comm, 0, sizeof(t->task.comm)) == NULL ||
        memchr(t->task.process, 0, sizeof(t->task.process)) == NULL)
        abort();
    for (const char *p = t->task.comm; *p; p++)
        if (*p < 0x20 || *p >= 0x7f)
            abort();
    if ((t->proc_key & GUESTOS_KEY_NOT_ROOT) ? t->as.root != 0 : t->as.root == 0)
        abort();
    struct gw_regs k, u;
    if (lx_thread_regs(&c->x->t, t, &k, &u)) {
        if ((k.rip >> 63) == 0 || (u.user && ((u.rip >> 56) || (u.rsp >> 56) || !u.rip)))
            abort();
    } else if (u.user) {
        abort();
    }
    (void)lx_thread_unchanged(&c->x->t, t);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct tg x;
    static uint8_t *pristine;
    if (!pristine) {
        if (tg_build(&x, false) < 0 || !(pristine = malloc(TG_AREA_SIZE)))
            abort();
        memcpy(pristine, tg_at(&x, TG_AREA_GPA), TG_AREA_SIZE);
    }
    if (size > TG_AREA_SIZE)
        return 0;
    uint8_t *area = tg_at(&x, TG_AREA_GPA);
    memcpy(area, pristine, TG_AREA_SIZE);
    for (size_t i = 0; i < size; i++)
        area[i] ^= data[i];
    struct ctx c = {.x = &x};
    char why[128];
    lx_kread_forget(x.t.kr);
    long n = lx_threads_each(&x.t, check, &c, 1u << 20, why, sizeof(why));
    if (n >= 0 && (unsigned long)n != c.n)
        abort();
    if (c.n > LX_MAX_VISIT_STEPS)
        abort();
    return 0;
}
