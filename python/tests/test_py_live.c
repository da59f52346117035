/* Debian's own CPython 3.11 (/usr/bin/python3.11, Debian 12), running a script of known call
 * chains on this host, read from outside as a guest's would be: _PyRuntime and Py_Version from
 * the executable's dynamic symbols, its memory through process_vm_readv. The thread state of
 * each native thread (the ids the script prints), each frame's qualified name, file and line
 * must be the script's, outermost frame an entry of the evaluation loop; a tid that is none of
 * its threads finds nothing. */
#include <fcntl.h>
#include <gelf.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "python/py_code.h"

#define PYTHON "/usr/bin/python3.11"

static const char script[] = "import threading, time\n"    /* 1 */
                             "def leaf(ready):\n"          /* 2 */
                             "    ready.set()\n"           /* 3 */
                             "    time.sleep(1000)\n"      /* 4 */
                             "def middle(ready):\n"        /* 5 */
                             "    leaf(ready)\n"           /* 6 */
                             "def outer(ready):\n"         /* 7 */
                             "    middle(ready)\n"         /* 8 */
                             "class Worker:\n"             /* 9 */
                             "    def run(self, ready):\n" /* 10 */
                             "        outer(ready)\n"      /* 11 */
                             "r = threading.Event()\n"     /* 12 */
                             "t = threading.Thread(target=Worker().run, args=(r,), daemon=True)\n"
                             "t.start()\n" /* 14 */
                             "r.wait()\n"  /* 15 */
                             "print('ready', threading.get_native_id(), t.native_id, flush=True)\n"
                             "outer(threading.Event())\n"; /* 17 */

static pid_t child; /* killed at the test's end, failed or not */

static int kill_child(void **state)
{
    (void)state;
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    child = 0;
    return 0;
}

static bool read_remote(void *ctx, uint64_t va, void *dst, size_t len)
{
    pid_t pid = *(pid_t *)ctx;
    struct iovec local = {dst, len}, remote = {(void *)(uintptr_t)va, len};
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* A dynamic symbol's value in the executable (non-PIE: its address). */
static uint64_t dynsym(const char *path, const char *name)
{
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    assert_non_null(e);
    uint64_t value = 0;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn)) && !value) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym s;
            const char *n =
                gelf_getsym(d, (int)i, &s) ? elf_strptr(e, sh.sh_link, s.st_name) : NULL;
            if (n && !strcmp(n, name))
                value = s.st_value;
        }
    }
    GElf_Ehdr eh;
    assert_non_null(gelf_getehdr(e, &eh));
    assert_int_equal(eh.e_type, ET_EXEC); /* Debian builds python3.11 without PIE */
    elf_end(e);
    close(fd);
    return value;
}

struct want {
    const char *qualname;
    int line;
    bool entry; /* called from C: Thread.run calls its target through PyObject_Call */
};

static void check_thread(const struct py_runtime *rt, const struct rt_mem *m, long tid,
                         const char *file, const struct want *want, unsigned nwant)
{
    uint64_t ts = py_thread_state(rt, m, tid, PY_MAX_THREADS);
    if (!ts)
        fail_msg("no thread state for native thread %ld", tid);
    struct py_frame f[64];
    unsigned n = py_frames(rt, m, ts, f, 64);
    char got[4096] = "";
    size_t used = 0;
    for (unsigned i = 0; i < n && used < sizeof(got) - 300; i++) {
        struct py_code_info ci;
        if (!py_code_read(rt, m, f[i].code, &ci))
            fail_msg("tid %ld: frame %u's code object at 0x%llx does not read", tid, i,
                     (unsigned long long)f[i].code);
        used += (size_t)snprintf(got + used, sizeof(got) - used, " %s:%s:%d%s", ci.qualname,
                                 strrchr(ci.filename, '/') ? strrchr(ci.filename, '/') + 1
                                                           : ci.filename,
                                 py_code_line(rt, m, f[i].code, f[i].instr), f[i].entry ? "*" : "");
    }
    print_message("tid %ld:%s\n", tid, got);
    if (n != nwant)
        fail_msg("tid %ld: %u frames, want %u:%s", tid, n, nwant, got);
    for (unsigned i = 0; i < n; i++) {
        struct py_code_info ci;
        assert_true(py_code_read(rt, m, f[i].code, &ci));
        int line = py_code_line(rt, m, f[i].code, f[i].instr);
        if (strcmp(ci.qualname, want[i].qualname) || (want[i].line && line != want[i].line))
            fail_msg("tid %ld: frame %u is %s:%d, want %s:%d:%s", tid, i, ci.qualname, line,
                     want[i].qualname, want[i].line, got);
        if (want[i].line)
            assert_string_equal(ci.filename, file);
        assert_true(ci.firstlineno > 0);
        if (f[i].entry != want[i].entry)
            fail_msg("tid %ld: frame %u %s: entry %d:%s", tid, i, ci.qualname, f[i].entry, got);
    }
}

static void test_live_python(void **state)
{
    (void)state;
    if (access(PYTHON, X_OK) != 0)
        fail_msg("%s missing: Debian 12's python3.11 (scripts/deps.sh installs it)", PYTHON);
    char file[] = "/tmp/hvprof-py-XXXXXX.py";
    int fd = mkstemps(file, 3);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, script, sizeof(script) - 1), (ssize_t)sizeof(script) - 1);
    close(fd);
    int out[2];
    assert_int_equal(pipe(out), 0);
    pid_t pid = child = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        execl(PYTHON, PYTHON, "-S", file, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    long main_tid = 0, worker_tid = 0;
    char line[128];
    if (!fgets(line, sizeof(line), f) ||
        sscanf(line, "ready %ld %ld", &main_tid, &worker_tid) != 2) {
        kill(pid, SIGKILL);
        fail_msg("%s did not start the script", PYTHON);
    }
    usleep(300000); /* the main thread into its sleep too */
    struct rt_mem m = {read_remote, &pid};
    struct py_runtime rt;
    char why[160];
    int rc = py_runtime_open(&rt, &m, dynsym(PYTHON, "_PyRuntime"), dynsym(PYTHON, "Py_Version"),
                             why, sizeof(why));
    if (rc < 0) {
        kill(pid, SIGKILL);
        fail_msg("%s", why);
    }
    assert_int_equal(rt.version >> 16, 0x030b);
    const struct want main_chain[] = {
        {"leaf", 4, false}, {"middle", 6, false}, {"outer", 8, false}, {"<module>", 17, true}};
    const struct want worker_chain[] = {{"leaf", 4, false},
                                        {"middle", 6, false},
                                        {"outer", 8, false},
                                        {"Worker.run", 11, true},
                                        {"Thread.run", 0, false},
                                        {"Thread._bootstrap_inner", 0, false},
                                        {"Thread._bootstrap", 0, true}};
    check_thread(&rt, &m, main_tid, file, main_chain, 4);
    check_thread(&rt, &m, worker_tid, file, worker_chain, 7);
    /* A thread that is none of the interpreter's. */
    assert_int_equal(py_thread_state(&rt, &m, 1, PY_MAX_THREADS), 0);
    /* The bound counts thread states: the newest (the worker) heads the list, the main
     * thread's is the second. */
    assert_int_not_equal(py_thread_state(&rt, &m, worker_tid, 1), 0);
    assert_int_equal(py_thread_state(&rt, &m, main_tid, 1), 0);
    assert_int_not_equal(py_thread_state(&rt, &m, main_tid, 2), 0);
    fclose(f);
    unlink(file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test_teardown(test_live_python, kill_child)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
