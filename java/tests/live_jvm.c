/* A JVM on this host (live_jvm.h). */
#include "java/tests/live_jvm.h"

#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

bool live_jvm_read(void *ctx, uint64_t va, void *dst, size_t len)
{
    const struct live_jvm *j = ctx;
    struct iovec local = {dst, len}, remote = {(void *)(uintptr_t)va, len};
    return process_vm_readv(j->pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static bool fail(struct live_jvm *j, const char *a, const char *b)
{
    snprintf(j->why, sizeof(j->why), "%s%s", a, b);
    live_jvm_stop(j);
    return false;
}

static bool find_libjvm(struct live_jvm *j)
{
    char maps[64];
    snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)j->pid);
    FILE *f = fopen(maps, "r");
    if (!f)
        return false;
    char line[1024];
    while (!j->base && fgets(line, sizeof(line), f)) {
        unsigned long long lo, off;
        char file[900] = "";
        if (sscanf(line, "%llx-%*x %*s %llx %*s %*s %899s", &lo, &off, file) == 3 && !off &&
            strstr(file, "/libjvm.so")) {
            j->base = lo;
            snprintf(j->libjvm, sizeof(j->libjvm), "%s", file);
        }
    }
    fclose(f);
    return j->base != 0;
}

/* libjvm's dynamic symbols, its first PT_LOAD at the mapping of offset 0. */
static bool find_symbols(struct live_jvm *j)
{
    elf_version(EV_CURRENT);
    int fd = open(j->libjvm, O_RDONLY);
    if (fd < 0)
        return false;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    size_t nph = 0;
    uint64_t first = UINT64_MAX;
    if (e && elf_getphdrnum(e, &nph) == 0)
        for (size_t i = 0; i < nph; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < first)
                first = ph.p_vaddr & ~4095ull;
        }
    Elf_Scn *scn = NULL;
    while (e && (scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym s;
            const char *n =
                gelf_getsym(d, (int)i, &s) ? elf_strptr(e, sh.sh_link, s.st_name) : NULL;
            for (unsigned k = 0; n && k < HS_SYM_COUNT; k++)
                if (!strcmp(n, hs_sym_names[k]))
                    j->addr[k] = j->base - first + s.st_value;
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    for (unsigned k = 0; k < HS_SYM_COUNT; k++)
        if (!j->addr[k])
            return fail(j, "libjvm.so exports no ", hs_sym_names[k]);
    return true;
}

bool live_jvm_start(struct live_jvm *j, const char *java, const char *classes)
{
    memset(j, 0, sizeof(*j));
    if (!java) {
        java = getenv("HVPROF_JAVA");
        if (!java || !*java)
            java = HV_JAVA;
    }
    int fds[2];
    if (pipe(fds) != 0)
        return fail(j, "pipe failed", "");
    j->pid = fork();
    if (j->pid < 0)
        return fail(j, "fork failed", "");
    if (!j->pid) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(java, java, "-Xmx64m", "-cp", classes, "Chains", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[128] = "";
    bool ready = f && fgets(line, sizeof(line), f) && !strncmp(line, "ready ", 6);
    if (f)
        fclose(f);
    if (!ready)
        return fail(j, java,
                    " -cp ... Chains printed no 'ready' (scripts/deps.sh installs "
                    "openjdk-17-jdk-headless)");
    if (!find_libjvm(j))
        return fail(j, "no libjvm.so in the maps of ", java);
    return find_symbols(j);
}

void live_jvm_stop(struct live_jvm *j)
{
    if (j->pid > 0) {
        kill(j->pid, SIGKILL);
        waitpid(j->pid, NULL, 0);
    }
    j->pid = 0;
}

pid_t live_jvm_thread(const struct live_jvm *j, const char *comm)
{
    char dir[64];
    for (int tid = j->pid; tid < j->pid + 4096; tid++) {
        snprintf(dir, sizeof(dir), "/proc/%d/task/%d/comm", (int)j->pid, tid);
        FILE *c = fopen(dir, "r");
        if (!c)
            continue;
        char got[32] = "";
        bool is = fgets(got, sizeof(got), c) && !strncmp(got, comm, strlen(comm));
        fclose(c);
        if (is)
            return tid;
    }
    return -1;
}
