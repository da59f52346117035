/* What hvprof does to the files it is given (docs/reliability.md, "Files"), with the real binary:
 * an output never truncates an input or another output (same inode, any name), a second
 * recorder of the same output is refused while the first goes on, a closed pipe does not kill a
 * recording, a disk full before the header leaves no file, a recording shrinking while it is
 * read gives an error or a prefix (never SIGBUS), a symbolic link planted in a report directory
 * is not written through, and a report that cannot be written whole is removed. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/common/need_kvm.h"
#include "tests/integration/guest_run.h"
#include "tests/integration/test_hostile_util.h"

static char dir[512];

static const char *at(const char *name)
{
    static char paths[8][600];
    static unsigned next;
    char *p = paths[next++ % 8];
    snprintf(p, 600, "%s/%s", dir, name);
    return p;
}

/* Run `script` with /bin/sh in the scratch directory, HV set to the binary; stdout+stderr into
 * `out`. Returns the exit status (128 + N if killed by signal N). */
static int sh(const char *script, char **out)
{
    return hv_sh("/bin/sh", dir, script, out);
}

static bool same_bytes(const char *a, const char *b)
{
    size_t la, lb;
    char *x = hv_read_file(a, &la), *y = hv_read_file(b, &lb);
    bool same = x && y && la == lb && !memcmp(x, y, la);
    free(x);
    free(y);
    return same;
}

static int setup(void **state)
{
    (void)state;
    const char *d = hv_tmp_dir("files");
    if (!d)
        return -1;
    snprintf(dir, sizeof(dir), "%s", d);
    char kernel[1024], initrd[1024], cmd[4096];
    snprintf(kernel, sizeof(kernel), "%s", guest_build_path("tests/guest/hvprof-guest.elf"));
    snprintf(initrd, sizeof(initrd), "%s", guest_build_path("tests/guest/hvprof-guest.cpio"));
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s/k.elf' && cp '%s' '%s/i.cpio'", kernel, dir, initrd,
             dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    hv_tmp_cleanup();
    return 0;
}

static void test_output_is_an_input(void **state)
{
    (void)state;
    assert_int_equal(sh("cp k.elf k.orig && cp i.cpio i.orig && ln -f k.elf k.link", NULL), 0);
    static const char *const cmds[] = {
        "$HV record -o k.elf --kernel k.elf",
        "$HV run --kernel k.elf --console k.elf",
        "$HV record -o i.cpio --kernel k.elf --initrd i.cpio",
        "$HV record -o k.link --kernel k.elf", /* a hard link: another name, the same inode */
        "$HV run --kernel k.elf --initrd i.cpio --console ./i.cpio",
    };
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        char *out;
        assert_int_equal(sh(cmds[i], &out), 2);
        assert_non_null(strstr(out, "refusing to overwrite an input"));
        free(out);
        assert_true(same_bytes(at("k.elf"), at("k.orig")));
        assert_true(same_bytes(at("i.cpio"), at("i.orig")));
    }
    /* The recording and the console, one file: refused before either is created. */
    char *out;
    assert_int_equal(sh("$HV record -o r.fxt --console r.fxt --guest demo", &out), 2);
    assert_non_null(strstr(out, "are the same file"));
    free(out);
    assert_int_not_equal(access(at("r.fxt"), F_OK), 0);
}

/* A second recorder of the same file: refused, the first one's recording complete. */
static void test_second_writer(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    char *out;
    int st = sh("$HV record -o w.fxt --quiet --guest demo --cmdline 'progs=workload seconds=30' "
                "--console w.con --timeout 100s & a=$!; "
                "i=0; until grep -q 'entering user mode' w.con 2>/dev/null || [ $i -ge 200 ]; do "
                "sleep 0.05; i=$((i+1)); done; "
                "$HV record -o w.fxt --quiet --guest demo --cmdline 'progs=workload seconds=1'; "
                "echo second=$?; kill -INT $a; wait $a; echo first=$?",
                &out);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "another process is writing it"));
    assert_non_null(strstr(out, "second=1"));
    assert_non_null(strstr(out, "first=0")); /* stopped with Ctrl-C, its file complete */
    free(out);
    struct hv_fxt_check fc;
    assert_int_equal(hv_fxt_check(at("w.fxt"), &fc), 0);
    assert_int_equal(fc.stats_status, 0);
    assert_true(fc.session_start && fc.session_stop && fc.samples > 0);
}

/* `hvprof record ... | head -c 1`: the guest's console goes to a closed pipe; the recording
 * goes on to its end and exits 0 with a complete file (SIGPIPE used to kill it: status 141). */
static void test_closed_pipe(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    char *out;
    assert_int_equal(sh("($HV record -o p.fxt --quiet --guest demo "
                        "--cmdline 'progs=workload seconds=1' 2>p.err; echo $? >p.status) "
                        "| head -c 1 >/dev/null; cat p.status p.err",
                        &out),
                     0);
    assert_true(!strncmp(out, "0\n", 2));
    free(out);
    struct hv_fxt_check fc;
    assert_int_equal(hv_fxt_check(at("p.fxt"), &fc), 0);
    assert_int_equal(fc.stats_status, 0);
    assert_true(fc.session_stop && fc.samples > 0);
}

/* Not even the header fits (RLIMIT_FSIZE of 1 byte, as a full disk): the error names the file,
 * and no file is left (a file that exists is a readable recording). */
static void test_full_before_header(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    char *out;
    /* The limit in a subshell whose messages go through a pipe (not limited) to the log. */
    assert_int_equal(sh("(ulimit -f 0; $HV record -o h.fxt --quiet --guest demo; echo status=$?) "
                        "2>&1 | cat",
                        &out),
                     0);
    assert_non_null(strstr(out, "status=1"));
    assert_non_null(strstr(out, "cannot write h.fxt"));
    free(out);
    assert_int_not_equal(access(at("h.fxt"), F_OK), 0);
}

/* --quiet is quiet: a recording that went well prints nothing of its own (the guest's console
 * is on stdout), one the guest ended with a triple fault says how it stopped. */
static void test_quiet_record(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    char *out;
    assert_int_equal(sh("$HV record -o q.fxt --quiet --guest demo --vcpus 2 --cmdline "
                        "'progs=workload seconds=1' 2>q.err >/dev/null; echo status=$?; "
                        "echo stderr; cat q.err; echo end",
                        &out),
                     0);
    assert_non_null(strstr(out, "status=0\nstderr\nend\n"));
    free(out);
    assert_int_equal(sh("$HV record -o t.fxt --quiet --guest demo --cmdline "
                        "'progs=hostile_triple seconds=0' 2>t.err >/dev/null; echo status=$?; "
                        "cat t.err",
                        &out),
                     0);
    assert_non_null(strstr(out, "status=1\nhvprof record: guest stopped (triple-fault): "));
    assert_null(strstr(out, "us/sample"));
    free(out);
}

/* A recording cut short while report and dump read it: an error or a report of the prefix,
 * never a signal (the reader mapped the file: SIGBUS past the new end). */
static void test_shrinking_input(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    assert_int_equal(sh("$HV record -o s.fxt --quiet --guest demo --vcpus 2 "
                        "--cmdline 'progs=workload seconds=2' >/dev/null",
                        NULL),
                     0);
    char script[1024];
    for (unsigned i = 0; i < 12; i++) {
        /* The truncation lands at a different moment of the read each time. */
        snprintf(script, sizeof(script),
                 "cp s.fxt t.fxt; (sleep 0.00%u; truncate -s %u t.fxt) & "
                 "$HV %s t.fxt >/dev/null 2>&1; echo status=$?; wait",
                 i % 10, 4096 * (i + 1), i % 2 ? "dump" : "report --format folded -q -o t.out");
        char *out;
        assert_int_equal(sh(script, &out), 0);
        int status = -1;
        const char *p = strstr(out, "status=");
        if (p)
            status = atoi(p + 7);
        free(out);
        assert_true(status == 0 || status == 1);
    }
}

/* report --format all into a directory where someone planted a symbolic link under a report's
 * name: the link's target is not written, the run fails with a message naming the file. */
static void test_symlink_in_report_dir(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    assert_int_equal(sh("$HV record -o l.fxt --quiet --guest demo --cmdline 'progs=workload "
                        "seconds=1' >/dev/null && mkdir -p out && echo precious >victim && "
                        "ln -sf ../victim out/top.txt",
                        NULL),
                     0);
    char *out;
    assert_int_equal(sh("$HV report l.fxt --format all -o out", &out), 1);
    assert_non_null(
        strstr(out, "top.txt: a symbolic link; hvprof replaces it, never writes through it"));
    free(out);
    char *v = hv_read_file(at("victim"), NULL);
    assert_string_equal(v, "precious\n");
    free(v);
}

/* A report that cannot be written whole (a full device) names the file; one that is a
 * regular file is removed rather than left cut; /dev/full itself stays. */
static void test_report_write_error(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    assert_int_equal(sh("$HV record -o e.fxt --quiet --guest demo --cmdline 'progs=workload "
                        "seconds=1' >/dev/null",
                        NULL),
                     0);
    char *out;
    assert_int_equal(sh("$HV report e.fxt -o /dev/full", &out), 1);
    assert_non_null(strstr(out, "cannot write /dev/full"));
    free(out);
    struct stat st;
    assert_int_equal(stat("/dev/full", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    /* A 4 KiB file size limit: the regular file is removed, not left cut. */
    assert_int_equal(sh("(ulimit -f 4; $HV report e.fxt --format perf-script -o big.txt; "
                        "echo status=$?) 2>&1 | cat",
                        &out),
                     0);
    assert_non_null(strstr(out, "status=1"));
    assert_non_null(strstr(out, "cannot write big.txt"));
    assert_non_null(strstr(out, "(nothing written)"));
    free(out);
    assert_int_not_equal(access(at("big.txt"), F_OK), 0);
}

static unsigned mode_of(const char *name)
{
    struct stat st;
    assert_int_equal(lstat(at(name), &st), 0);
    return st.st_mode & 07777;
}

/* Outputs never destroy data (docs/security.md, "Outputs"): a second recording keeps the first
 * as .old; an existing file that is not a recording, and a symbolic link, are refused without
 * --force and, with it, replaced (a link's target never written); the console and -o may not
 * name any file of a disk's backing chain; every output is 0600 whatever the umask. */
static void test_outputs_never_destroy(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    char *out;
    const char *rec = "--quiet --guest demo --cmdline 'progs=workload seconds=0.3'";
    char cmd[1024];
    /* A recording over a recording: the first is kept, whole, as .old. */
    snprintf(cmd, sizeof(cmd),
             "umask 0; $HV record -o keep.fxt %s && cp keep.fxt first.fxt && "
             "$HV record -o keep.fxt %s",
             rec, rec);
    assert_int_equal(sh(cmd, NULL), 0);
    assert_true(same_bytes(at("keep.fxt.old"), at("first.fxt")));
    assert_false(same_bytes(at("keep.fxt"), at("first.fxt")));
    assert_int_equal(mode_of("keep.fxt"), 0600);
    assert_int_equal(access(at("keep.fxt.part"), F_OK), -1);
    /* Another file: refused, untouched; --force replaces it. */
    snprintf(cmd, sizeof(cmd), "echo precious >notes.txt && $HV record -o notes.txt %s", rec);
    assert_int_equal(sh(cmd, &out), 1);
    assert_non_null(strstr(out, "notes.txt exists and is not an hvprof recording (which would be "
                                "kept as .old): not overwritten (--force replaces it)"));
    free(out);
    char *v = hv_read_file(at("notes.txt"), NULL);
    assert_string_equal(v, "precious\n");
    free(v);
    snprintf(cmd, sizeof(cmd), "$HV record -o notes.txt --force %s && $HV dump --stats notes.txt",
             rec);
    assert_int_equal(sh(cmd, NULL), 0);
    /* A symbolic link planted at the output (a root-owned file behind it): never written
     * through; with --force the link itself is replaced. */
    snprintf(cmd, sizeof(cmd),
             "echo secret >target && chmod 0600 target && ln -sf target "
             "link.fxt && $HV record -o link.fxt %s",
             rec);
    assert_int_equal(sh(cmd, &out), 1);
    assert_non_null(strstr(out, "link.fxt: a symbolic link; hvprof replaces it, never writes "
                                "through it"));
    free(out);
    snprintf(cmd, sizeof(cmd), "$HV record -o link.fxt --force %s && test ! -L link.fxt", rec);
    assert_int_equal(sh(cmd, NULL), 0);
    v = hv_read_file(at("target"), NULL);
    assert_string_equal(v, "secret\n");
    free(v);
    /* The console too: through a link, never; its file 0600. */
    assert_int_equal(sh("ln -sf target con.txt && $HV run --guest demo --cmdline "
                        "'progs=workload seconds=0.2' --console con.txt",
                        &out),
                     2 - 1);
    assert_non_null(strstr(out, "con.txt: a symbolic link"));
    free(out);
    assert_int_equal(sh("umask 0; $HV run --guest demo --cmdline 'progs=workload seconds=0.2' "
                        "--console fresh.txt",
                        NULL),
                     0);
    assert_int_equal(mode_of("fresh.txt"), 0600);
    /* A report over its own recording, and over an existing report. */
    assert_int_equal(sh("$HV report keep.fxt -o keep.fxt", &out), 2);
    assert_non_null(strstr(out, "refusing to overwrite an input"));
    free(out);
    assert_int_equal(sh("umask 0; $HV report keep.fxt -q -o top.txt && $HV report keep.fxt -q -o "
                        "top.txt",
                        &out),
                     1);
    assert_non_null(strstr(out, "top.txt exists and is not empty: not overwritten (--force "
                                "replaces it)"));
    free(out);
    assert_int_equal(mode_of("top.txt"), 0600);
    assert_int_equal(sh("$HV report keep.fxt -q --force -o top.txt", NULL), 0);
    /* A disk's backing file as an output: --console and -o refused before anything runs. */
    assert_int_equal(sh("qemu-img create -q -f qcow2 base.qcow2 16M && qemu-img create -q -f "
                        "qcow2 -b base.qcow2 -F qcow2 top.qcow2 && cp base.qcow2 base.copy",
                        NULL),
                     0);
    assert_int_equal(sh("$HV run --guest demo --disk top.qcow2 --console base.qcow2", &out), 2);
    assert_non_null(strstr(out, "--console base.qcow2 is the same file as --disk (a file of its "
                                "chain)"));
    free(out);
    assert_int_equal(sh("$HV record -o base.qcow2 --force --guest demo --disk top.qcow2", &out), 2);
    assert_non_null(strstr(out, "-o base.qcow2 is the same file as --disk (a file of its chain)"));
    free(out);
    assert_true(same_bytes(at("base.qcow2"), at("base.copy")));
}

/* Inputs that are wrong without being malformed get a warning that says what the report does:
 * filters that match no sample, a symbol file whose build-id matches but that holds no symbols
 * (a stripped copy), a recording cut on a record boundary before its session_stop. */
static void test_silent_garbage_warned(void **state)
{
    (void)state;
    hv_need_kvm(__func__);
    char prog[1024], script[4096];
    snprintf(prog, sizeof(prog), "%s", guest_build_path("tests/guest/progs/workload.elf"));
    snprintf(script, sizeof(script),
             "$HV record -o g.fxt --quiet --guest demo --cmdline 'progs=workload seconds=1' "
             ">/dev/null && mkdir -p stripped && cp '%s' stripped/ && strip stripped/workload.elf",
             prog);
    assert_int_equal(sh(script, NULL), 0);
    char *out;
    assert_int_equal(sh("$HV report g.fxt --comm no-such-program -o r1.txt", &out), 0);
    assert_non_null(strstr(out, "g.fxt: the report is empty: --comm no-such-program: no thread or "
                                "process of the recording is named so"));
    free(out);
    /* The name the report prints for the program matches (a process the recorder knew only by
     * its address space is named after its program before the filter runs): every sample
     * left is the program's. */
    assert_int_equal(sh("$HV report g.fxt --comm workload.elf --format perf-script -o r0.txt && "
                        "test -s r0.txt && ! grep -v -e '^workload.elf ' -e '^\\s' -e '^$' r0.txt",
                        &out),
                     0);
    assert_null(strstr(out, "matches the filters"));
    free(out);
    /* A directory given with its slash: the paths said are the files' own. */
    assert_int_equal(sh("$HV report g.fxt --format all -o rall/", &out), 0);
    assert_non_null(strstr(out, "hvprof report: wrote rall/top.txt\n"));
    assert_null(strstr(out, "//"));
    free(out);
    assert_int_equal(sh("$HV report g.fxt --symbols stripped -o r2.txt", &out), 0);
    assert_non_null(strstr(out, "holds no function symbols (a stripped file?)"));
    free(out);
    /* Cut at the last whole record before 60 %% of the file: what `dump` lists as its offset. */
    assert_int_equal(sh("m=$(( $(stat -c %s g.fxt) * 6 / 10 )); cut=$($HV dump g.fxt | "
                        "{ last=0; while read -r off rest; do o=$((off)); "
                        "[ $o -le $m ] && last=$o; done; echo $last; }); "
                        "head -c $cut g.fxt >cut.fxt && $HV report cut.fxt -o r3.txt",
                        &out),
                     0);
    assert_non_null(strstr(out, "ends without its session_stop marker"));
    free(out);
}

/* A /dev/kvm that is something else (here /dev/null bound over it in a private mount namespace):
 * the error says so, instead of "API version -1". Skipped where mounting is not permitted. */
static void test_kvm_not_kvm(void **state)
{
    (void)state;
    char *out;
    int st = sh("unshare -m sh -c 'mount --bind /dev/null /dev/kvm || exit 77; "
                "$HV run --guest demo'",
                &out);
    if (st == 77 || strstr(out, "unshare:")) {
        free(out);
        skip();
    }
    assert_int_equal(st, 1);
    assert_non_null(strstr(out, "/dev/kvm is not a KVM device (KVM_GET_API_VERSION failed)"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_is_an_input),    cmocka_unit_test(test_second_writer),
        cmocka_unit_test(test_closed_pipe),           cmocka_unit_test(test_full_before_header),
        cmocka_unit_test(test_shrinking_input),       cmocka_unit_test(test_symlink_in_report_dir),
        cmocka_unit_test(test_report_write_error),    cmocka_unit_test(test_silent_garbage_warned),
        cmocka_unit_test(test_kvm_not_kvm),           cmocka_unit_test(test_quiet_record),
        cmocka_unit_test(test_outputs_never_destroy),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
