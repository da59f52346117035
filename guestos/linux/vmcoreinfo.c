#include "guestos/linux/vmcoreinfo.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE         4096u
#define NOTE_NAME    "VMCOREINFO" /* n_namesz 11 with the NUL, padded to 12 */
#define NOTE_HDR     24u          /* namesz, descsz, type, name[12] */
#define FIRST_KEY    "OSRELEASE=" /* the first line the kernel writes */
#define MAX_LINE_LEN 80u          /* each line is formatted into an 80-byte buffer */

static bool hex_u64(const char *s, size_t n, uint64_t *out)
{
    if (n == 0 || n > 16)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else
            return false;
        v = v << 4 | d;
    }
    *out = v;
    return true;
}

static bool dec_i64(const char *s, size_t n, int64_t *out)
{
    bool neg = n > 0 && s[0] == '-';
    size_t i = neg ? 1 : 0;
    if (i == n)
        return false;
    int64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        int d = s[i] - '0';
        if (v > (INT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = neg ? -v : v;
    return true;
}

bool lx_vmcoreinfo_get(const struct lx_vmcoreinfo *v, const char *key, const char **value,
                       size_t *len)
{
    size_t klen = strlen(key);
    const char *p = v->text, *end = v->text + v->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        if ((size_t)(line_end - p) > klen && !memcmp(p, key, klen) && p[klen] == '=') {
            *value = p + klen + 1;
            *len = (size_t)(line_end - *value);
            return true;
        }
        p = line_end + 1;
    }
    return false;
}

bool lx_vmcoreinfo_symbol(const struct lx_vmcoreinfo *v, const char *name, uint64_t *addr)
{
    char key[96];
    if ((size_t)snprintf(key, sizeof(key), "SYMBOL(%s)", name) >= sizeof(key))
        return false;
    const char *val;
    size_t n;
    return lx_vmcoreinfo_get(v, key, &val, &n) && hex_u64(val, n, addr);
}

bool lx_vmcoreinfo_decimal(const struct lx_vmcoreinfo *v, const char *key, int64_t *value)
{
    const char *val;
    size_t n;
    return lx_vmcoreinfo_get(v, key, &val, &n) && dec_i64(val, n, value);
}

int lx_vmcoreinfo_parse(const char *text, size_t len, struct lx_vmcoreinfo *out, struct hv_err *err)
{
    memset(out, 0, sizeof(*out));
    const char *nul = memchr(text, 0, len);
    if (nul)
        len = (size_t)(nul - text);
    if (len == 0 || len > LX_VMCOREINFO_MAX)
        return hv_errk(err, HV_ERR_GUEST, "vmcoreinfo: %zu bytes of text (1-%u expected)", len,
                       LX_VMCOREINFO_MAX);
    size_t line_start = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n') {
            if (!memchr(text + line_start, '=', i - line_start))
                return hv_errk(err, HV_ERR_GUEST, "vmcoreinfo: line at byte %zu has no '='",
                               line_start);
            line_start = i + 1;
        } else if (c < 0x20 || c > 0x7e) {
            return hv_errk(err, HV_ERR_GUEST,
                           "vmcoreinfo: byte 0x%02x at %zu is not printable text", c, i);
        } else if (i - line_start >= MAX_LINE_LEN) {
            return hv_errk(err, HV_ERR_GUEST,
                           "vmcoreinfo: line at byte %zu is longer than %u bytes", line_start,
                           MAX_LINE_LEN);
        }
    }
    if (line_start < len && !memchr(text + line_start, '=', len - line_start))
        return hv_errk(err, HV_ERR_GUEST, "vmcoreinfo: line at byte %zu has no '='", line_start);
    memcpy(out->text, text, len);
    out->text[len] = 0;
    out->len = len;

    const char *val;
    size_t n;
    if (!lx_vmcoreinfo_get(out, "OSRELEASE", &val, &n) || n == 0 || n >= sizeof(out->osrelease))
        return hv_errk(err, HV_ERR_GUEST, "vmcoreinfo: no OSRELEASE line");
    memcpy(out->osrelease, val, n);
    if (lx_vmcoreinfo_get(out, "BUILD-ID", &val, &n)) {
        if (n != 40)
            return hv_errk(err, HV_ERR_GUEST, "vmcoreinfo: BUILD-ID has %zu hex digits, not 40", n);
        for (unsigned i = 0; i < 20; i++) {
            uint64_t b;
            if (!hex_u64(val + 2 * i, 2, &b))
                return hv_errk(err, HV_ERR_GUEST, "vmcoreinfo: BUILD-ID is not lower-case hex");
            out->build_id[i] = (uint8_t)b;
        }
        out->has_build_id = true;
    }
    if (lx_vmcoreinfo_get(out, "KERNELOFFSET", &val, &n)) {
        if (!hex_u64(val, n, &out->kernel_offset))
            return hv_errk(err, HV_ERR_GUEST, "vmcoreinfo: KERNELOFFSET is not hex");
        out->has_kernel_offset = true;
    }
    return 0;
}

/* The text at the start of a page: the data page itself, or the note's descriptor. */
static bool page_text(const uint8_t *page, const char **text, size_t *len)
{
    if (!memcmp(page, FIRST_KEY, strlen(FIRST_KEY))) {
        *text = (const char *)page;
        *len = PAGE;
        return true;
    }
    uint32_t namesz, descsz, type;
    memcpy(&namesz, page, 4);
    memcpy(&descsz, page + 4, 4);
    memcpy(&type, page + 8, 4);
    if (namesz == sizeof(NOTE_NAME) && type == 0 && descsz > 0 && descsz <= LX_VMCOREINFO_MAX &&
        !memcmp(page + 12, NOTE_NAME, sizeof(NOTE_NAME)) &&
        !memcmp(page + NOTE_HDR, FIRST_KEY, strlen(FIRST_KEY))) {
        *text = (const char *)page + NOTE_HDR; /* the note is 4132 bytes: read across pages */
        *len = descsz;
        return true;
    }
    return false;
}

/* Which pages of [host, host + size) the host has ever backed (mincore(2)): a page the guest
 * never wrote is not resident and holds zeros, so it cannot hold VMCOREINFO, and reading it would
 * first-touch guest RAM from hvprof's side (mapping the zero page under the guest; on the nested
 * test bed such first touches made guests fault more, docs/linux.md). One bit per page in `vec`
 * for `chunk` bytes from `host`; false when mincore cannot say (an unaligned test buffer): then
 * every page is read. */
#define RESIDENCY_CHUNK (64ull << 20)
static bool residency(const uint8_t *host, uint64_t chunk, unsigned char *vec)
{
    if ((uintptr_t)host % PAGE)
        return false;
    return mincore((void *)host, chunk, vec) == 0;
}

int lx_vmcoreinfo_find(const struct gmem *mem, struct lx_vmcoreinfo *out, struct hv_err *err)
{
    static const char first[] = FIRST_KEY;
    unsigned char vec[RESIDENCY_CHUNK / PAGE]; /* 16 KiB: the drain thread's stack has room */
    unsigned copies = 0;
    struct lx_vmcoreinfo cand;
    for (unsigned s = 0; s < mem->nslots; s++) {
        const struct gmem_slot *sl = &mem->slot[s];
        bool known = false;
        for (uint64_t off = 0; off + PAGE <= sl->size; off += PAGE) {
            if (off % RESIDENCY_CHUNK == 0) {
                uint64_t chunk =
                    sl->size - off < RESIDENCY_CHUNK ? sl->size - off : RESIDENCY_CHUNK;
                known = residency(sl->host + off, chunk & ~(uint64_t)(PAGE - 1), vec);
            }
            if (known && !(vec[(off % RESIDENCY_CHUNK) / PAGE] & 1))
                continue;
            const uint8_t *page = sl->host + off;
            /* Cheap first test: the data page starts with 'O', the note with namesz 11. */
            if (page[0] != (uint8_t)first[0] && page[0] != sizeof(NOTE_NAME))
                continue;
            const char *text;
            size_t len;
            if (!page_text(page, &text, &len))
                continue;
            size_t avail = (size_t)(sl->size - off) - (size_t)((const uint8_t *)text - page);
            if (len > avail)
                len = avail;
            if (lx_vmcoreinfo_parse(text, len, &cand, NULL) < 0)
                continue;
            cand.gpa = sl->gpa + off;
            if (copies == 0) {
                *out = cand;
            } else if (cand.len != out->len || memcmp(cand.text, out->text, cand.len) != 0) {
                return hv_errk(err, HV_ERR_GUEST,
                               "vmcoreinfo: copies at 0x%" PRIx64 " and 0x%" PRIx64
                               " disagree (a stale or forged copy)",
                               out->gpa, cand.gpa);
            }
            copies++;
        }
    }
    if (copies)
        out->copies = copies;
    return copies ? 1 : 0;
}
