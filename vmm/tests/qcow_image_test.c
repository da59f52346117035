/* qcow2 images through libqcow (vmm/qcow/qcow_image.c), against QEMU's own reading of the same
 * images (qemu-img convert -O raw, the reference): images QEMU wrote (qemu-img, qemu-io) with data
 * clusters, holes, a backing chain named relatively, and compressed clusters read back byte for
 * byte in reads of every shape; then what QEMU itself refuses or a hostile image may be: a
 * backing chain that loops, one deeper than the bound, a raw backing file, a missing backing
 * file, a cut image, an image whose header is garbage or claims an impossible size (refused by
 * QEMU's own check before libqcow reads it). qemu-img and qemu-io (qemu-utils) must be there:
 * the test fails without them. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmm/qcow/qcow_image.h"
#include "vmm/qcow/qemu_map.h"

static char dir[64];

__attribute__((format(printf, 1, 2))) static void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    char full[2300];
    snprintf(full, sizeof(full), "cd '%s' && (%s) >/dev/null 2>&1", dir, cmd);
    if (system(full) != 0)
        fail_msg("failed: %s", cmd);
}

static uint8_t *slurp(const char *name, size_t *len)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*len ? *len : 1);
    assert_int_equal(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/hvprof-qcow-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    if (system("command -v qemu-img >/dev/null && command -v qemu-io >/dev/null") != 0) {
        fprintf(stderr, "qcow_image_test: qemu-img and qemu-io (qemu-utils) are needed: "
                        "scripts/deps.sh installs them\n");
        return -1;
    }
    /* base: two data runs and holes; top over it (relative backing name): two more runs, one
     * over a hole of base's and one over its data; comp: the whole of top, compressed. */
    sh("qemu-img create -q -f qcow2 base.qcow2 4M");
    sh("qemu-io -c 'write -P 0xaa 0 64k' -c 'write -P 0xbb 1049088 4k' base.qcow2");
    sh("qemu-img create -q -f qcow2 -b base.qcow2 -F qcow2 top.qcow2");
    sh("qemu-io -c 'write -P 0xcc 3M 8k' -c 'write -P 0xdd 32k 4k' top.qcow2");
    sh("qemu-img convert -O raw top.qcow2 top.raw");
    sh("qemu-img convert -c -O qcow2 top.raw comp.qcow2");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("rm -f *.qcow2 *.raw *.img");
    rmdir(dir);
    return 0;
}

static struct qcow_image *open_ok(const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct qcow_image *q = NULL;
    struct hv_err err = {0};
    if (qcow_image_open(&q, path, NULL, &err) < 0)
        fail_msg("%s: %s", name, err.msg);
    return q;
}

static const char *open_fails(const char *name)
{
    static struct hv_err err;
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct qcow_image *q = NULL;
    memset(&err, 0, sizeof(err));
    assert_int_equal(qcow_image_open(&q, path, NULL, &err), -1);
    assert_null(q);
    print_message("%s: %s\n", name, err.msg);
    return err.msg;
}

static int open_with(const char *name, const struct image_opts *o, struct hv_err *err)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct qcow_image *q = NULL;
    memset(err, 0, sizeof(*err));
    int rc = qcow_image_open(&q, path, o, err);
    qcow_image_close(q);
    if (rc < 0)
        print_message("%s: %s\n", name, err->msg);
    return rc;
}

/* Every byte as QEMU reads it, in reads of 4 KiB, 64 KiB, and odd pieces over odd offsets. */
static void same_as_qemu(const char *image, const uint8_t *ref, size_t len)
{
    struct qcow_image *q = open_ok(image);
    assert_int_equal(qcow_image_size(q), len);
    uint8_t *got = malloc(len);
    struct hv_err err;
    static const size_t sizes[] = {4096, 65536, 1536};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        memset(got, 0x5a, len);
        for (size_t off = 0; off < len; off += sizes[k]) {
            size_t n = len - off < sizes[k] ? len - off : sizes[k];
            /* Two iovecs, split unevenly. */
            struct iovec iov[2] = {{got + off, n / 3}, {got + off + n / 3, n - n / 3}};
            if (!qcow_image_readv(q, iov, 2, off, &err))
                fail_msg("%s: read at %zu: %s", image, off, err.msg);
        }
        assert_memory_equal(got, ref, len);
    }
    /* Past the end: refused. */
    struct iovec one = {got, 512};
    assert_false(qcow_image_readv(q, &one, 1, len - 256, &err));
    free(got);
    qcow_image_close(q);
}

static void test_same_as_qemu(void **state)
{
    (void)state;
    size_t len;
    uint8_t *ref = slurp("top.raw", &len);
    assert_int_equal(len, 4u << 20);
    /* What the images hold, as written: top over base, base's data under top's holes. */
    assert_int_equal(ref[0], 0xaa);
    assert_int_equal(ref[32768], 0xdd);
    assert_int_equal(ref[1049088], 0xbb);
    assert_int_equal(ref[3u << 20], 0xcc);
    assert_int_equal(ref[2u << 20], 0);
    same_as_qemu("top.qcow2", ref, len);
    same_as_qemu("comp.qcow2", ref, len);
    /* Compressed clusters (QEMU's check counts them) are kept decompressed: the first 64 KiB
     * (the one cluster of the first MiB with data; QEMU's map says the other 15 read as
     * zeros) read 4 KiB at a time decompress it once; the 15 other reads are served from it.
     * An image without compressed clusters keeps none. */
    uint64_t hits, misses, mapped, libqcow;
    uint8_t page[4096];
    struct hv_err err;
    struct qcow_image *c = open_ok("comp.qcow2");
    for (size_t off = 0; off < (1u << 20); off += sizeof(page)) {
        struct iovec iov = {page, sizeof(page)};
        assert_true(qcow_image_readv(c, &iov, 1, off, &err));
        assert_memory_equal(page, ref + off, sizeof(page));
    }
    qcow_image_cache_stats(c, &hits, &misses);
    assert_int_equal(misses, 1);
    assert_int_equal(hits, 15);
    qcow_image_map_stats(c, &mapped, &libqcow);
    assert_int_equal(libqcow, 64u << 10);
    assert_int_equal(mapped, (1u << 20) - (64u << 10));
    qcow_image_close(c);
    /* Uncompressed, over a backing file: every byte where QEMU's map placed it (pread() of
     * top.qcow2 or base.qcow2, or zeros), none through libqcow. */
    c = open_ok("top.qcow2");
    for (size_t off = 0; off < (4u << 20); off += sizeof(page)) {
        struct iovec iov = {page, sizeof(page)};
        assert_true(qcow_image_readv(c, &iov, 1, off, &err));
        assert_memory_equal(page, ref + off, sizeof(page));
    }
    qcow_image_cache_stats(c, &hits, &misses);
    assert_int_equal(hits + misses, 0);
    qcow_image_map_stats(c, &mapped, &libqcow);
    assert_int_equal(mapped, 4u << 20);
    assert_int_equal(libqcow, 0);
    qcow_image_close(c);
    free(ref);
    struct qcow_image *q = open_ok("top.qcow2");
    assert_string_equal(qcow_image_describe(q), "qcow2, backing chain: base.qcow2");
    qcow_image_close(q);
}

static void test_refused(void **state)
{
    (void)state;
    /* A loop: b's backing file is a, a's is b (qemu-img rebase -u writes it unchecked). */
    sh("qemu-img create -q -f qcow2 a.qcow2 1M && qemu-img create -q -f qcow2 -b a.qcow2 -F "
       "qcow2 b.qcow2 && qemu-img rebase -u -b b.qcow2 -F qcow2 a.qcow2");
    assert_non_null(strstr(open_fails("b.qcow2"), "comes back to"));
    /* Deeper than the bound. */
    sh("qemu-img create -q -f qcow2 c0.qcow2 1M");
    for (int i = 1; i <= QCOW_MAX_CHAIN; i++)
        sh("qemu-img create -q -f qcow2 -b c%d.qcow2 -F qcow2 c%d.qcow2", i - 1, i);
    char deep[32];
    snprintf(deep, sizeof(deep), "c%d.qcow2", QCOW_MAX_CHAIN);
    assert_non_null(strstr(open_fails(deep), "a backing chain longer than"));
    snprintf(deep, sizeof(deep), "c%d.qcow2", QCOW_MAX_CHAIN - 1);
    qcow_image_close(open_ok(deep)); /* at the bound: read */
    /* A raw backing file, and a missing one. */
    sh("qemu-img create -q -f raw r.raw 1M && qemu-img create -q -f qcow2 -b r.raw -F raw "
       "onraw.qcow2");
    assert_non_null(strstr(open_fails("onraw.qcow2"), "is raw (backing_fmt)"));
    assert_non_null(strstr(open_fails("onraw.qcow2"), "qemu-img convert -f qcow2 -O raw"));
    sh("qemu-img create -q -f qcow2 -b gone.qcow2 -F qcow2 -o size=1M orphan.qcow2 || "
       "qemu-img create -q -f qcow2 -u -b gone.qcow2 -F qcow2 orphan.qcow2 1M");
    assert_non_null(strstr(open_fails("orphan.qcow2"), "gone.qcow2"));
    /* Cut short, and garbage after the magic: an error, never a crash. */
    sh("head -c 1000 top.qcow2 > cut.qcow2");
    open_fails("cut.qcow2");
    sh("(printf 'QFI\\373'; head -c 65532 /dev/urandom) > junk.qcow2");
    open_fails("junk.qcow2");
    /* The image qcow_image_fuzz found overflowing a heap buffer in libqcow's reads (a header
     * claiming an impossible size): QEMU's check refuses it before libqcow reads it. */
    sh("cp '%s/vmm/tests/data/qcow2-impossible-size.qcow2' big.qcow2", getenv("HVPROF_SOURCE_DIR"));
    assert_non_null(strstr(open_fails("big.qcow2"), "QEMU finds the image unreadable: Image is "
                                                    "too big"));
}

/* A hostile image's backing chain (qcow_chain.h): a file elsewhere on the host, through an
 * absolute name, "..", or a symbolic link, is refused unless the user allows its directory; a
 * backing file whose format the header does not state is refused unless the user states it;
 * while the image is open nobody else may write any file of its chain. */
static void test_chain_rules(void **state)
{
    (void)state;
    struct hv_err err;
    char other[128];
    snprintf(other, sizeof(other), "%s-other", dir);
    sh("mkdir -p '%s' && qemu-img create -q -f qcow2 '%s/victim.qcow2' 1M && chmod 0600 "
       "'%s/victim.qcow2'",
       other, other, other);
    sh("qemu-img create -q -f qcow2 -u -b '%s/victim.qcow2' -F qcow2 abs.qcow2 1M", other);
    assert_int_equal(open_with("abs.qcow2", NULL, &err), -1);
    assert_non_null(strstr(err.msg, "outside the image's directory"));
    assert_non_null(strstr(err.msg, "backing-dir=DIR"));
    struct image_opts allow = {.backing_dir = other};
    assert_int_equal(open_with("abs.qcow2", &allow, &err), 0);
    /* "..", and a symbolic link beside the image that points out of its directory. */
    const char *base = strrchr(other, '/') + 1;
    sh("qemu-img create -q -f qcow2 -u -b '../%s/victim.qcow2' -F qcow2 dots.qcow2 1M", base);
    assert_int_equal(open_with("dots.qcow2", NULL, &err), -1);
    assert_non_null(strstr(err.msg, "outside the image's directory"));
    sh("ln -sf '%s/victim.qcow2' link.qcow2 && qemu-img create -q -f qcow2 -u -b link.qcow2 -F "
       "qcow2 vialink.qcow2 1M",
       other);
    assert_int_equal(open_with("vialink.qcow2", NULL, &err), -1);
    assert_non_null(strstr(err.msg, "outside the image's directory"));
    /* No backing_fmt: never probed; backing-format=qcow2 states it. */
    /* (qemu-img no longer writes one without: its backing format extension renamed to one
     * nobody knows, which QEMU ignores, as old images never had it.) */
    sh("qemu-img create -q -f qcow2 -b base.qcow2 -F qcow2 nofmt.qcow2 && python3 -c \"import "
       "sys; b=bytearray(open('nofmt.qcow2','rb').read()); i=b.index(bytes.fromhex('e2792aca')); "
       "b[i:i+4]=bytes.fromhex('0badf00d'); open('nofmt.qcow2','wb').write(b)\"");
    assert_int_equal(open_with("nofmt.qcow2", NULL, &err), -1);
    assert_non_null(strstr(err.msg, "without its format"));
    assert_non_null(strstr(err.msg, "backing-format=qcow2"));
    struct image_opts said = {.backing_format = "qcow2"};
    assert_int_equal(open_with("nofmt.qcow2", &said, &err), 0);
    /* A stated format the file does not have. */
    sh("qemu-img create -q -f raw plain.raw 1M && qemu-img create -q -f qcow2 -u -b plain.raw "
       "-F qcow2 liar.qcow2 1M");
    assert_int_equal(open_with("liar.qcow2", NULL, &err), -1);
    assert_non_null(strstr(err.msg, "is not a qcow2 image, as backing_fmt says"));
    /* Open: QEMU may not write the image or its backing file meanwhile; after, it may. */
    char top[256];
    snprintf(top, sizeof(top), "%s/top.qcow2", dir);
    struct qcow_image *q = open_ok("top.qcow2");
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "qemu-io -c 'write 0 4k' '%s/top.qcow2' >/dev/null 2>&1", dir);
    assert_int_not_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "qemu-io -f qcow2 -c 'write 0 4k' '%s/base.qcow2' >/dev/null 2>&1",
             dir);
    assert_int_not_equal(system(cmd), 0);
    qcow_image_close(q);
    assert_int_equal(system(cmd), 0);
    sh("rm -rf '%s'", other);
}

/* QEMU's map as hvprof takes it, or refuses it whole (vmm/qcow/qemu_map.h). */
static int parse(const char *json, struct qcow_map *m, struct hv_err *err)
{
    static const uint64_t files[2] = {1u << 20, 1u << 20};
    memset(err, 0, sizeof(*err));
    return qcow_map_parse(m, json, strlen(json), 4u << 20, files, 2, err);
}

static void test_map_parse(void **state)
{
    (void)state;
    struct qcow_map m;
    struct hv_err err;
    /* QEMU 7.2's own words: data at offsets of two files, zeros, compressed data (no offset,
     * left out), neighbours joined; with its last extent running past the disk's 4 MiB, the
     * map is refused whole. */
#define MAP_HEAD                                                                                   \
    "[{ \"start\": 0, \"length\": 65536, \"depth\": 1, \"present\": true, "                        \
    "\"zero\": false, \"data\": true, \"offset\": 327680},\n"                                      \
    "{ \"start\": 65536, \"length\": 65536, \"depth\": 1, \"present\": true, "                     \
    "\"zero\": false, \"data\": true, \"offset\": 393216},\n"                                      \
    "{ \"start\": 131072, \"length\": 65536, \"depth\": 0, \"present\": true, "                    \
    "\"zero\": false, \"data\": true},\n"                                                          \
    "{ \"start\": 196608, \"length\": 65536, \"depth\": 0, \"present\": true, "                    \
    "\"zero\": false, \"data\": true, \"offset\": 0, \"compressed\": true},\n"
#define MAP_TAIL(len)                                                                              \
    "{ \"start\": 262144, \"length\": " len ", \"depth\": 0, \"present\": false, "                 \
    "\"zero\": true, \"data\": false}]\n"
    assert_int_equal(parse(MAP_HEAD MAP_TAIL("4194304"), &m, &err), -1);
    assert_non_null(strstr(err.msg, "in a disk of 4194304 bytes"));
    assert_int_equal(parse(MAP_HEAD MAP_TAIL("3932160"), &m, &err), 0);
    assert_int_equal(m.n, 2);
    assert_int_equal(m.v[0].kind, QCOW_EXTENT_DATA);
    assert_int_equal(m.v[0].start, 0);
    assert_int_equal(m.v[0].length, 131072);
    assert_int_equal(m.v[0].depth, 1);
    assert_int_equal(m.v[0].offset, 327680);
    assert_int_equal(m.v[1].kind, QCOW_EXTENT_ZERO);
    assert_int_equal(m.v[1].start, 262144);
    assert_ptr_equal(qcow_map_find(&m, 65535), &m.v[0]);
    assert_ptr_equal(qcow_map_find(&m, 131072), &m.v[1]); /* the next one after a hole */
    assert_ptr_equal(qcow_map_find(&m, 4u << 20), NULL);
    qcow_map_free(&m);
    /* Refused whole, each with its reason. */
    static const struct {
        const char *json, *why;
    } bad[] = {
        {"", "not a JSON array"},
        {"[{ \"start\": 0, \"length\": 512, \"depth\": 0, \"zero\": true},", "ends early"},
        {"[{ \"start\": 0, \"length\": 512, \"depth\": 0, \"zero\": true}", "no ','"},
        {"[{ \"start\": 0, \"length\": 512, \"dep", "does not parse"},
        {"[{ \"start\": 512, \"length\": 512, \"depth\": 0, \"zero\": true}]", "where 0 was next"},
        {"[{ \"start\": 0, \"length\": 0, \"depth\": 0, \"zero\": true}]", "where 0"},
        {"[{ \"start\": 0, \"length\": 512, \"depth\": 2, \"data\": true, \"offset\": 0}]",
         "past its end"},
        {"[{ \"start\": 0, \"length\": 512, \"depth\": 0, \"data\": true, "
         "\"offset\": 18446744073709551615}]",
         "past its end"},
        {"[{ \"start\": 0, \"length\": 512, \"depth\": 0, \"data\": true, "
         "\"offset\": 1048065}]",
         "past its end"},
        {"[{ \"start\": -1, \"length\": 512, \"depth\": 0, \"zero\": true}]",
         "not QEMU's map entry"},
        {"[{ \"start\": 0, \"length\": \"512\", \"depth\": 0, \"zero\": true}]",
         "not QEMU's map entry"},
        {"[{ \"start\": 0, \"length\": 512, \"depth\": 0, \"zero\": 1}]", "not QEMU's map entry"},
        {"[[1]]", "not QEMU's map entry"},
        {"[{ \"start\": 0, \"length\": 512, \"depth\": 0, \"zero\": true} x", "no ','"},
        {"[{\"a\": {\"b\": {\"c\": 1}}}]", "does not parse"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&m, 0x5a, sizeof(m));
        if (parse(bad[i].json, &m, &err) != -1 || !strstr(err.msg, bad[i].why))
            fail_msg("map %zu (%s): '%s', not '%s'", i, bad[i].json, err.msg, bad[i].why);
        assert_null(m.v);
        assert_int_equal(m.n, 0);
    }
    /* An empty disk's map. */
    assert_int_equal(parse(" [] ", &m, &err), 0);
    assert_int_equal(m.n, 0);
    qcow_map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_same_as_qemu),
                                       cmocka_unit_test(test_refused),
        cmocka_unit_test(test_chain_rules),
                                       cmocka_unit_test(test_map_parse)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
