/* QEMU's map of a qcow2 chain (qemu_map.h). Its JSON form (qemu-img.c, dump_map_entry; the
 * fields of qapi/block-core.json's MapEntry) is an array of objects, one per line, in order of
 * "start" and covering the disk: {"start", "length", "depth", "present", "zero", "data",
 * "offset" when the data lies at a known offset of the file at "depth", and in newer QEMU
 * "compressed"; QEMU 7.2 gives a compressed cluster no "offset"}. Read an object at a time with json-c's tokener, so memory stays one object's;
 * every number is checked against the disk and the chain's files before it is used. */
#include "vmm/qcow/qemu_map.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "vmm/qcow/qemu_img.h"

/* A field that must be a non-negative integer (present: false when absent). */
static bool get_u64(struct json_object *o, const char *key, uint64_t *v, bool *present)
{
    struct json_object *f = NULL;
    *present = json_object_object_get_ex(o, key, &f);
    if (!*present)
        return true;
    if (!json_object_is_type(f, json_type_int) || json_object_get_int64(f) < 0)
        return false;
    *v = json_object_get_uint64(f);
    return true;
}

static bool get_bool(struct json_object *o, const char *key, bool *v)
{
    struct json_object *f = NULL;
    *v = false;
    if (!json_object_object_get_ex(o, key, &f))
        return true;
    if (!json_object_is_type(f, json_type_boolean))
        return false;
    *v = json_object_get_boolean(f);
    return true;
}

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
        p++;
    return p;
}

static int push(struct qcow_map *m, size_t *cap, const struct qcow_extent *e, struct hv_err *err)
{
    struct qcow_extent *last = m->n ? &m->v[m->n - 1] : NULL;
    /* Neighbours of one kind (and one file, one after the other in it) as one. */
    if (last && last->kind == e->kind && last->start + last->length == e->start &&
        (e->kind == QCOW_EXTENT_ZERO ||
         (last->depth == e->depth && last->offset + last->length == e->offset))) {
        last->length += e->length;
        return 0;
    }
    if (m->n == *cap) {
        size_t want = *cap ? *cap * 2 : 256;
        struct qcow_extent *v = realloc(m->v, want * sizeof(*v));
        if (!v)
            return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory for a qcow2 image's map");
        m->v = v;
        *cap = want;
    }
    m->v[m->n++] = *e;
    return 0;
}

/* One of QEMU's objects, checked: into *e (kind -1: neither zero nor at a known offset). */
static int one_extent(struct json_object *o, uint64_t expect, uint64_t size,
                      const uint64_t *file_sizes, unsigned depths, struct qcow_extent *e, int *kind,
                      struct hv_err *err)
{
    uint64_t start = 0, length = 0, depth = 0, offset = 0;
    bool has_start, has_length, has_depth, has_offset, zero, data, compressed;
    if (!json_object_is_type(o, json_type_object) || !get_u64(o, "start", &start, &has_start) ||
        !get_u64(o, "length", &length, &has_length) || !get_u64(o, "depth", &depth, &has_depth) ||
        !get_u64(o, "offset", &offset, &has_offset) || !get_bool(o, "zero", &zero) ||
        !get_bool(o, "data", &data) || !get_bool(o, "compressed", &compressed) || !has_start ||
        !has_length || !has_depth)
        return hv_errk(err, HV_ERR_CORRUPT, "an extent that is not QEMU's map entry");
    if (start != expect || !length || length > size || start > size - length)
        return hv_errk(err, HV_ERR_CORRUPT,
                       "an extent of %llu bytes at %llu, where %llu was next, in a disk of "
                       "%llu bytes",
                       (unsigned long long)length, (unsigned long long)start,
                       (unsigned long long)expect, (unsigned long long)size);
    *e = (struct qcow_extent){.start = start, .length = length};
    *kind = -1;
    if (zero) {
        e->kind = QCOW_EXTENT_ZERO;
        *kind = QCOW_EXTENT_ZERO;
    } else if (data && has_offset && !compressed) {
        if (depth >= depths || offset > file_sizes[depth] || length > file_sizes[depth] - offset)
            return hv_errk(
                err, HV_ERR_CORRUPT, "%llu bytes at %llu of the chain's file %llu, past its end",
                (unsigned long long)length, (unsigned long long)offset, (unsigned long long)depth);
        e->kind = QCOW_EXTENT_DATA;
        e->depth = (uint32_t)depth;
        e->offset = offset;
        *kind = QCOW_EXTENT_DATA;
    }
    return 0;
}

int qcow_map_parse(struct qcow_map *m, const char *json, size_t len, uint64_t size,
                   const uint64_t *file_sizes, unsigned depths, struct hv_err *err)
{
    memset(m, 0, sizeof(*m));
    const char *p = json, *end = json + len;
    size_t cap = 0;
    uint64_t next = 0;
    p = skip_space(p, end);
    if (p == end || *p != '[')
        return hv_errk(err, HV_ERR_CORRUPT, "QEMU's map is not a JSON array");
    p++;
    /* Flat objects: a depth of 2 is all QEMU's map needs. */
    struct json_tokener *tok = json_tokener_new_ex(2);
    if (!tok)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    int rc = 0;
    for (bool first = true;; first = false) {
        p = skip_space(p, end);
        if (p < end && *p == ']' && first)
            break; /* an empty disk */
        if (p == end || (size_t)(end - p) > INT_MAX) {
            rc = hv_errk(err, HV_ERR_CORRUPT, "QEMU's map ends early");
            break;
        }
        json_tokener_reset(tok);
        struct json_object *o = json_tokener_parse_ex(tok, p, (int)(end - p));
        if (!o) {
            rc = hv_errk(err, HV_ERR_CORRUPT, "QEMU's map does not parse: %s",
                         json_tokener_error_desc(json_tokener_get_error(tok)));
            break;
        }
        p += json_tokener_get_parse_end(tok);
        struct qcow_extent e;
        int kind;
        rc = one_extent(o, next, size, file_sizes, depths, &e, &kind, err);
        json_object_put(o);
        if (rc < 0)
            break;
        next = e.start + e.length;
        if (kind >= 0 && (rc = push(m, &cap, &e, err)) < 0)
            break;
        p = skip_space(p, end);
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == ']')
            break;
        rc = hv_errk(err, HV_ERR_CORRUPT, "QEMU's map: no ',' or ']' after an extent");
        break;
    }
    json_tokener_free(tok);
    if (rc < 0)
        qcow_map_free(m);
    return rc;
}

int qcow_map_of(struct qcow_map *m, const char *path, uint64_t size, const uint64_t *file_sizes,
                unsigned depths, struct hv_err *err)
{
    memset(m, 0, sizeof(*m));
    char spec[2 * PATH_MAX + 128];
    if (qemu_img_spec(path, true, spec, sizeof(spec), err) < 0)
        return -1;
    /* -U: the image's locks are judged by the block device (image_lock.h), not here. */
    char *argv[] = {"qemu-img", "map", "--output=json", "-U", spec, NULL};
    struct qemu_img_out r;
    if (qemu_img_run(argv, path, QCOW_MAP_SECONDS, QCOW_MAP_MAX_OUTPUT, &r, err) < 0)
        return -1;
    int rc;
    if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
        r.errtext[strcspn(r.errtext, "\n")] = 0;
        rc = hv_errk(err, HV_ERR_CORRUPT, "%s: QEMU cannot map the image: %.200s", path, r.errtext);
    } else {
        rc = qcow_map_parse(m, r.out, r.out_len, size, file_sizes, depths, err);
    }
    qemu_img_out_free(&r);
    return rc;
}

const struct qcow_extent *qcow_map_find(const struct qcow_map *m, uint64_t off)
{
    size_t lo = 0, hi = m->n; /* the first extent that ends after off */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->v[mid].start + m->v[mid].length <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n ? &m->v[lo] : NULL;
}

void qcow_map_free(struct qcow_map *m)
{
    free(m->v);
    m->v = NULL;
    m->n = 0;
}
