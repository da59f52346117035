/* Debian's own OpenJDK (its libjvm.so, the JVM the test bed's guests run), running a program of
 * known call chains on this host, read from outside as a guest's would be: the VMStructs
 * tables' symbols from libjvm.so's dynamic symbols, the process's memory through
 * process_vm_readv, a thread's registers through ptrace. The tables must read whole and hold
 * what the reader looks up; the code cache's blobs, methods, lines and threads must be the
 * program's; a thread stopped in Java code must walk to its exact Java chain, the methods C2
 * inlined as frames of their own. HVPROF_JAVA=.../bin/java runs it on another JDK. */
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
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "java/hs_walk.h"
#include "java/tests/live_jvm.h"

static struct live_jvm jvm; /* stopped at each test's end, failed or not */

static int kill_child(void **state)
{
    (void)state;
    live_jvm_stop(&jvm);
    return 0;
}

#define child jvm.pid

static void read_live(struct hs_vmstructs *vs, struct rt_mem *m)
{
    if (!live_jvm_start(&jvm, NULL, HV_CLASSES))
        fail_msg("%s", jvm.why);
    const char *path = jvm.libjvm;
    struct hv_err err = {0};
    if (hs_vmstructs_read(vs, m, jvm.addr, &err) < 0)
        fail_msg("%s's tables: %s", path, err.msg);
    print_message("%s: %zu fields, %zu types, %zu int and %zu long constants, %zu bytes of names\n",
                  path, vs->nfields, vs->ntypes, vs->nints, vs->nlongs, vs->pool_len);
    /* HVPROF_JAVA_DUMP=FILE: every entry, to see what a JDK publishes (docs/java.md) */
    const char *dump = getenv("HVPROF_JAVA_DUMP");
    FILE *f = dump && *dump ? fopen(dump, "w") : NULL;
    for (size_t i = 0; f && i < vs->nfields; i++)
        fprintf(f, "field %s::%s %s %s 0x%llx\n", hs_str(vs, vs->fields[i].type),
                hs_str(vs, vs->fields[i].name), hs_str(vs, vs->fields[i].type_string),
                vs->fields[i].is_static ? "static" : "offset",
                (unsigned long long)vs->fields[i].value);
    for (size_t i = 0; f && i < vs->ntypes; i++)
        fprintf(f, "type %s : %s size %llu\n", hs_str(vs, vs->types[i].name),
                hs_str(vs, vs->types[i].super), (unsigned long long)vs->types[i].size);
    for (size_t i = 0; f && i < vs->nints; i++)
        fprintf(f, "int %s %lld\n", hs_str(vs, vs->ints[i].name), (long long)vs->ints[i].value);
    for (size_t i = 0; f && i < vs->nlongs; i++)
        fprintf(f, "long %s 0x%llx\n", hs_str(vs, vs->longs[i].name),
                (unsigned long long)vs->longs[i].value);
    if (f)
        fclose(f);
}

/* What the Java reader looks up (java/hs_layout.c) is there; a few values are what HotSpot's
 * sources make them on every x86-64 build. */
static void test_tables_read(void **state)
{
    (void)state;
    struct rt_mem m = {live_jvm_read, &jvm};
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
    return reads_left-- > 0 && live_jvm_read(ctx, va, dst, len);
}

static void test_cut_read(void **state)
{
    (void)state;
    struct rt_mem m = {live_jvm_read, &jvm};
    struct hs_vmstructs vs;
    read_live(&vs, &m);
    hs_vmstructs_free(&vs);
    const uint64_t *addr = jvm.addr;
    struct rt_mem cut = {read_until, &jvm};
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

/* What the code cache holds once Chains has warmed up: its hot methods compiled, each named
 * by class, method, signature and source file, found again from a pc inside it; lines from the
 * methods' tables; the threads by the kernel's tids. */
struct found {
    const struct hs_layout *l;
    const struct rt_mem *m;
    const struct hs_code_cache *cc;
    unsigned nmethods, named, blobs_found_again;
    bool leafA, leafB;
    uint64_t leafA_method;
};

static bool each_blob(void *ctx, uint64_t at)
{
    struct found *f = ctx;
    struct hs_blob b;
    if (!hs_blob_read(f->l, f->m, at, &b)) {
        uint32_t w[32];
        rt_read(f->m, at, w, sizeof(w));
        for (int i = 0; i < 32; i++)
            print_message("%08x%s", w[i], i % 8 == 7 ? "\n" : " ");
        fail_msg("blob at 0x%llx does not read", (unsigned long long)at);
    }
    if (hs_blob_at(f->cc, f->l, f->m, b.code_begin + (b.code_end - b.code_begin) / 2) == at)
        f->blobs_found_again++;
    if (!b.is_nmethod)
        return true;
    f->nmethods++;
    struct hs_method_info mi;
    if (!hs_method_read(f->l, f->m, b.method, &mi))
        return true;
    f->named++;
    if (!strcmp(mi.klass, "Chains") && !strcmp(mi.name, "leafA")) {
        assert_string_equal(mi.signature, "(J)J");
        assert_string_equal(mi.source, "Chains.java");
        f->leafA = true;
        f->leafA_method = b.method;
    }
    if (!strcmp(mi.klass, "Chains") && !strcmp(mi.name, "leafB"))
        f->leafB = true;
    return true;
}

static void test_code_cache(void **state)
{
    (void)state;
    struct rt_mem m = {live_jvm_read, &jvm};
    struct hs_vmstructs vs;
    read_live(&vs, &m);
    struct hs_layout l;
    struct hv_err err = {0};
    if (hs_layout_resolve(&l, &vs, &m, &err) < 0)
        fail_msg("layout: %s", err.msg);
    print_message("JVM %s (feature %u)\n", l.release, l.major);
    struct hs_code_cache cc;
    if (hs_code_cache_read(&cc, &l, &m, &err) < 0)
        fail_msg("code cache: %s", err.msg);
    assert_true(cc.nheaps >= 1);
    assert_true(cc.interp_low && cc.interp_low < cc.interp_high);
    struct found f = {&l, &m, &cc, 0, 0, 0, false, false, 0};
    /* C2 compiles the two leaves within a second or two of their loops starting */
    for (int tries = 0; tries < 50 && !(f.leafA && f.leafB); tries++) {
        usleep(200 * 1000);
        memset(&f.nmethods, 0, sizeof(f) - offsetof(struct found, nmethods));
        unsigned n = hs_blobs_each(&cc, &l, &m, 1u << 20, each_blob, &f);
        print_message("%u blobs (%u found again from a pc), %u nmethods, %u named\n", n,
                      f.blobs_found_again, f.nmethods, f.named);
        assert_int_equal(f.blobs_found_again, n);
    }
    assert_true(f.leafA && f.leafB);
    assert_true(f.named == f.nmethods);
    /* leafA's bytecode 0 is 'long s = x;' (line 8); its loop (line 10) begins at bci 2 */
    assert_int_equal(hs_method_line(&l, &m, f.leafA_method, 0), 8);
    struct hs_method_info mi;
    assert_true(hs_method_read(&l, &m, f.leafA_method, &mi));
    bool line10 = false;
    for (uint32_t bci = 0; bci < mi.code_size; bci++) {
        int line = hs_method_line(&l, &m, f.leafA_method, (int)bci);
        assert_true(line >= 8 && line <= 11);
        line10 |= line == 10;
    }
    assert_true(line10);
    assert_int_equal(hs_method_line(&l, &m, f.leafA_method, (int)mi.code_size), -1);

    /* the threads: Chains's three by their tids (the kernel's comm) among the JVM's */
    struct hs_thread th[256];
    unsigned nt = hs_threads(&l, &m, th, 256);
    print_message("%u Java threads\n", nt);
    assert_true(nt >= 4);
    unsigned named = 0;
    for (unsigned i = 0; i < nt; i++) {
        char p[64], comm[32] = "";
        snprintf(p, sizeof(p), "/proc/%d/task/%d/comm", (int)child, (int)th[i].tid);
        FILE *c = fopen(p, "r");
        if (!c)
            fail_msg("Java thread %u's tid %d is no thread of the JVM", i, (int)th[i].tid);
        if (fgets(comm, sizeof(comm), c) && !strncmp(comm, "chains-", 7))
            named++;
        fclose(c);
    }
    assert_int_equal(named, 3); /* chains-a, chains-b, chains-deep */
    hs_vmstructs_free(&vs);
}

/* Stop thread tid (ptrace), take its registers, walk its Java frames, let it go on. */
static unsigned walk_thread(const struct hs_code_cache *cc, const struct hs_layout *l,
                            const struct rt_mem *m, pid_t tid, struct hs_frame *f, unsigned max,
                            struct hs_regs *r)
{
    assert_int_equal(ptrace(PTRACE_SEIZE, tid, 0, 0), 0);
    assert_int_equal(ptrace(PTRACE_INTERRUPT, tid, 0, 0), 0);
    int st;
    assert_int_equal(waitpid(tid, &st, __WALL), tid);
    struct user_regs_struct regs;
    assert_int_equal(ptrace(PTRACE_GETREGS, tid, 0, &regs), 0);
    *r = (struct hs_regs){regs.rip, regs.rsp, regs.rbp};
    unsigned n = hs_in_code_cache(cc, r->pc) ? hs_walk(cc, l, m, r, f, max) : 0;
    assert_int_equal(ptrace(PTRACE_DETACH, tid, 0, 0), 0);
    return n;
}

/* chains-a's Java stack at 40 stops: leafA, middleA, outerA, the lambda, Thread.run, each
 * caller of the one before (a stop may land in any of them), from the PcDescs of compiled code
 * with its inlined methods or the interpreter's frames; the walk ends in libjvm's native code. */
static void test_walk(void **state)
{
    (void)state;
    struct rt_mem m = {live_jvm_read, &jvm};
    struct hs_vmstructs vs;
    read_live(&vs, &m);
    struct hs_layout l;
    struct hv_err err = {0};
    if (hs_layout_resolve(&l, &vs, &m, &err) < 0)
        fail_msg("layout: %s", err.msg);
    struct hs_code_cache cc;
    if (hs_code_cache_read(&cc, &l, &m, &err) < 0)
        fail_msg("code cache: %s", err.msg);
    if (!l.has_scopes)
        print_message("JVM %s: no scopes in its tables; compiled frames are their nmethods\n",
                      l.release);
    pid_t tid = live_jvm_thread(&jvm, "chains-a");
    assert_true(tid > 0);
    static const char *const chain[] = {"leafA", "middleA", "outerA", "lambda$main$0", "run"};
    unsigned stops = 0, in_java = 0, exact = 0, inlined = 0;
    sleep(2); /* past warm-up: C2's code */
    for (; stops < 40; stops++) {
        struct hs_frame f[64];
        struct hs_regs r;
        unsigned n = walk_thread(&cc, &l, &m, tid, f, 64, &r);
        usleep(20 * 1000);
        if (!n)
            continue;
        in_java++;
        char got[2048] = "";
        size_t used = 0;
        unsigned at = 5; /* where in chain[] the frames are */
        bool ok = true;
        for (unsigned i = 0; i < n; i++) {
            struct hs_method_info mi;
            const char *name = "?";
            if (f[i].kind != HS_FRAME_STUB && hs_method_read(&l, &m, f[i].code, &mi))
                name = mi.name;
            used += (size_t)snprintf(got + used, sizeof(got) - used, " %s%s:%d", name,
                                     f[i].kind == HS_FRAME_INLINED       ? "(i)"
                                     : f[i].kind == HS_FRAME_INTERPRETED ? "(int)"
                                                                         : "",
                                     f[i].bci);
            if (used > sizeof(got) - 200)
                break;
            inlined += f[i].kind == HS_FRAME_INLINED;
            if (i == 0)
                for (at = 0; at < 5 && strcmp(chain[at], name); at++)
                    ;
            else if (at < 4 && !strcmp(chain[at + 1], name))
                at++;
            else if (at < 4 && strstr(name, "run")) /* the lambda's generated class's run */
                ;
            else if (!(at == 4 && i == n - 1))
                ok = ok && at >= 4; /* past Thread.run: nothing else is Java */
        }
        const char *last = "";
        struct hs_method_info mi;
        if (hs_method_read(&l, &m, f[n - 1].code, &mi))
            last = mi.klass;
        ok = ok && at == 4 && !strcmp(last, "java.lang.Thread");
        /* native code resumes in libjvm (JavaCalls::call_helper called the call stub) */
        ok = ok && r.pc > jvm.base && r.pc < jvm.base + (64ull << 20);
        exact += ok;
        if (!ok || stops < 3)
            print_message("stop %u:%s -> native pc 0x%llx\n", stops, got, (unsigned long long)r.pc);
    }
    print_message("%u stops, %u in Java, %u with the exact chain, %u inlined frames\n", stops,
                  in_java, exact, inlined);
    assert_true(in_java >= stops * 3 / 4);
    assert_true(exact * 100 >= in_java * 95);
    if (l.has_scopes) /* C2 inlines leafA and middleA into what calls them */
        assert_true(inlined >= in_java);
    hs_vmstructs_free(&vs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_tables_read, kill_child),
        cmocka_unit_test_teardown(test_cut_read, kill_child),
        cmocka_unit_test_teardown(test_code_cache, kill_child),
        cmocka_unit_test_teardown(test_walk, kill_child),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
