/* libFuzzer: a hostile Linux guest's cgroups and pid namespaces, read as the recorder reads a
 * task's (guestos/linux/cgroup.h). The guest is the unit test's (guestos/tests/cgroup_guest.h:
 * a task in a container's cgroup, pid 1 of a child namespace); the input is XORed onto its
 * structures and then onto the task's two pointers, so an empty input is the well-formed guest
 * and every mutation changes kernfs nodes, names, css_sets and pids from there. The walk must
 * stay within its bounds, and a path that comes out must be one a report can show: absolute,
 * printable, no empty component, within its buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestos/tests/cgroup_guest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const char *p, int n)
{
    if (n < 0)
        return;
    if ((size_t)n != strlen(p) || n > LX_CGROUP_PATH_MAX)
        abort();
    if (!strncmp(p, "\xe2\x80\xa6", 3))
        p += 3, n -= 3; /* cut at its root end */
    if (n < 1 || p[0] != '/' || (n > 1 && p[n - 1] == '/') || strstr(p, "//"))
        abort();
    for (int i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] == 0x7f)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct tg x;
    static uint8_t *pristine;
    static uint64_t task_words[2];
    const struct lx_cgroup_layout *l = &CG_LAYOUT;
    if (!pristine) {
        if (tg_build(&x, false) < 0 || !(pristine = malloc(CG_SPAN)))
            abort();
        cg_build(&x);
        memcpy(pristine, tg_at(&x, CG_AREA(0) - TG_DIRECT), CG_SPAN);
        memcpy(&task_words[0], tg_at(&x, TG_TASK(1) + l->task_cgroups - TG_DIRECT), 8);
        memcpy(&task_words[1], tg_at(&x, TG_TASK(1) + l->task_thread_pid - TG_DIRECT), 8);
    }
    if (size > CG_SPAN + 16)
        return 0;
    uint8_t *area = tg_at(&x, CG_AREA(0) - TG_DIRECT);
    memcpy(area, pristine, CG_SPAN);
    for (size_t i = 0; i < size && i < CG_SPAN; i++)
        area[i] ^= data[i];
    uint64_t w[2] = {task_words[0], task_words[1]};
    for (size_t i = CG_SPAN; i < size; i++)
        ((uint8_t *)w)[i - CG_SPAN] ^= data[i];
    cg_put64(&x, TG_TASK(1) + l->task_cgroups, w[0]);
    cg_put64(&x, TG_TASK(1) + l->task_thread_pid, w[1]);

    lx_kread_forget(&x.kr);
    uint64_t css;
    char path[LX_CGROUP_PATH_MAX + 1], small[40];
    if (lx_task_css_set(&x.kr, l, TG_TASK(1), &css)) {
        check_path(path, lx_cgroup_path(&x.kr, l, css, path, sizeof(path)));
        check_path(small, lx_cgroup_path(&x.kr, l, css, small, sizeof(small)));
    }
    check_path(path, lx_cgroup_path(&x.kr, l, CG_CSS_ROOT, path, sizeof(path)));
    struct lx_ns_pid np;
    if (lx_task_ns_pid(&x.kr, l, TG_TASK(1), &np) && (np.nr < 0 || np.level >= LX_PID_NS_LEVELS))
        abort();
    /* The hostname: NUL-terminated within its 65 bytes, printable. */
    char host[LX_UTS_NODENAME_LEN];
    uint32_t mnt;
    if (lx_task_uts(&x.kr, l, TG_TASK(1), host, &mnt)) {
        size_t hn = strnlen(host, sizeof(host));
        if (hn == sizeof(host))
            abort();
        for (size_t i = 0; i < hn; i++)
            if ((unsigned char)host[i] < 0x20 || (unsigned char)host[i] >= 0x7f)
                abort();
    }
    return 0;
}
