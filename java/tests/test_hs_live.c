/* Debian's own OpenJDK (its libjvm.so, the JVM the test bed's guests run), running a program of
 * known call chains on this host, read from outside as a guest's would be: the VMStructs
 * tables' symbols from libjvm.so's dynamic symbols, the process's memory through
 * process_vm_readv. The tables must read whole and hold what every later step looks up. */
#include <fcntl.h>
#include <limits.h>
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

#include "java/hs_vmstructs.h"

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

/* Start the JVM on Chains and wait for its "ready". */
static void start_jvm(void)
{
    /* HVPROF_JAVA: another JDK's java (a later one's tables, read by the same code) */
    const char *java = getenv("HVPROF_JAVA");
    if (!java || !*java)
        java = HV_JAVA;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    child = fork();
    assert_true(child >= 0);
    if (!child) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(java, java, "-Xmx64m", "-cp", HV_CLASSES, "Chains", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[128] = "";
    if (!fgets(line, sizeof(line), f) || strncmp(line, "ready ", 6))
        fail_msg("%s -cp %s Chains printed no 'ready' (got '%s')", java, HV_CLASSES, line);
    fclose(f);
}

/* Where libjvm.so is mapped in the child (the mapping of its file offset 0) and its path. */
static uint64_t libjvm_base(char *path, size_t cap)
{
    char maps[64];
    snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)child);
    FILE *f = fopen(maps, "r");
    assert_non_null(f);
    char line[1024];
    uint64_t base = 0;
    while (!base && fgets(line, sizeof(line), f)) {
        unsigned long long lo, off;
        char file[900] = "";
        if (sscanf(line, "%llx-%*x %*s %llx %*s %*s %899s", &lo, &off, file) == 3 && !off &&
            strstr(file, "/libjvm.so")) {
            base = lo;
            snprintf(path, cap, "%s", file);
        }
    }
    fclose(f);
    if (!base)
        fail_msg("no libjvm.so in /proc/%d/maps", (int)child);
    return base;
}

/* The run-time addresses of the tables' symbols: libjvm's dynamic symbols, its first PT_LOAD at
 * the mapping of offset 0. */
static void symbols(const char *path, uint64_t base, uint64_t addr[HS_SYM_COUNT])
{
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    assert_non_null(e);
    size_t nph;
    assert_int_equal(elf_getphdrnum(e, &nph), 0);
    uint64_t first = UINT64_MAX;
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < first)
            first = ph.p_vaddr & ~4095ull;
    }
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
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
                    addr[k] = base - first + s.st_value;
        }
    }
    elf_end(e);
    close(fd);
    for (unsigned k = 0; k < HS_SYM_COUNT; k++)
        if (!addr[k])
            fail_msg("%s exports no %s", path, hs_sym_names[k]);
}

static void read_live(struct hs_vmstructs *vs, struct rt_mem *m)
{
    start_jvm();
    char path[900];
    uint64_t base = libjvm_base(path, sizeof(path));
    uint64_t addr[HS_SYM_COUNT] = {0};
    symbols(path, base, addr);
    struct hv_err err = {0};
    if (hs_vmstructs_read(vs, m, addr, &err) < 0)
        fail_msg("%s's tables: %s", path, err.msg);
    print_message("%s: %zu fields, %zu types, %zu int and %zu long constants, %zu bytes of names\n",
                  path, vs->nfields, vs->ntypes, vs->nints, vs->nlongs, vs->pool_len);
}

/* What the Java reader looks up (java/hs_layout.c) is there; a few values are what HotSpot's
 * sources make them on every x86-64 build. */
static void test_tables_read(void **state)
{
    (void)state;
    struct rt_mem m = {read_remote, &child};
    struct hs_vmstructs vs;
    read_live(&vs, &m);
    assert_true(vs.nfields > 500 && vs.ntypes > 300 && vs.nints > 100 && vs.nlongs > 10);

    static const char *const offsets[][2] = {
        {"Klass", "_name"},
        {"Symbol", "_length"},
        {"Symbol", "_body"},
        {"Method", "_constMethod"},
        {"ConstMethod", "_constants"},
        {"ConstMethod", "_name_index"},
        {"ConstantPool", "_pool_holder"},
        {"JavaThread", "_anchor"},
        {"JavaFrameAnchor", "_last_Java_sp"},
        {"CodeHeap", "_memory"},
        {"VirtualSpace", "_low"},
    };
    for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
        uint64_t off;
        if (!hs_offset(&vs, offsets[i][0], offsets[i][1], &off))
            fail_msg("no field %s::%s", offsets[i][0], offsets[i][1]);
        assert_true(off < 4096);
    }
    uint64_t heaps, size;
    assert_true(hs_static(&vs, "CodeCache", "_heaps", &heaps));
    assert_false(hs_offset(&vs, "CodeCache", "_heaps", &heaps)); /* static, not an offset */
    assert_false(hs_offset(&vs, "Klass", "no_such_field", &heaps));
    assert_true(hs_type_size(&vs, "Method", &size) && size >= 48 && size < 1024);
    assert_true(hs_type_size(&vs, "jint", &size) && size == 4);
    assert_true(hs_type_size(&vs, "address", &size) && size == 8);
    int64_t c;
    /* globalDefinitions.hpp: a HeapWord is a word, on every 64-bit build */
    assert_true(hs_int_constant(&vs, "HeapWordSize", &c) && c == 8);

    /* The version from the same tables: Abstract_VM_Version::_s_vm_release, a char* static. */
    uint64_t rel, str;
    assert_true(hs_static(&vs, "Abstract_VM_Version", "_s_vm_release", &rel));
    assert_true(rt_read_u64(&m, rel, &str));
    char version[32] = "";
    assert_true(rt_read(&m, str, version, 8));
    print_message("_s_vm_release: %.8s\n", version);
    assert_true(version[0] >= '1' && version[0] <= '9');
    hs_vmstructs_free(&vs);
}

/* A read that fails halfway (memory gone) is an error, never a half table: cut after every
 * 40th of the reads a whole read makes. */
static long reads_left, reads_made;
static bool read_until(void *ctx, uint64_t va, void *dst, size_t len)
{
    reads_made++;
    return reads_left-- > 0 && read_remote(ctx, va, dst, len);
}

static void test_cut_read(void **state)
{
    (void)state;
    struct rt_mem m = {read_remote, &child};
    struct hs_vmstructs vs;
    read_live(&vs, &m);
    hs_vmstructs_free(&vs);
    char path[900];
    uint64_t base = libjvm_base(path, sizeof(path));
    uint64_t addr[HS_SYM_COUNT] = {0};
    symbols(path, base, addr);
    struct rt_mem cut = {read_until, &child};
    struct hv_err err = {0};
    reads_left = LONG_MAX;
    assert_int_equal(hs_vmstructs_read(&vs, &cut, addr, &err), 0);
    hs_vmstructs_free(&vs);
    long whole = reads_made;
    print_message("a whole read: %ld reads\n", whole);
    for (long at = 0; at < whole; at += whole / 40 + 1) {
        reads_left = at;
        assert_int_equal(hs_vmstructs_read(&vs, &cut, addr, &err), -1);
        assert_true(err.kind == HV_ERR_GUEST || err.kind == HV_ERR_CORRUPT);
        assert_null(vs.fields);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_tables_read, kill_child),
        cmocka_unit_test_teardown(test_cut_read, kill_child),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
