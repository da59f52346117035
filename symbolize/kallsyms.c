#include "symbolize/kallsyms.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/files.h"

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* One line: "<hex address> <type> <name>[\t[module]]". Returns 1 for a text symbol added,
 * 0 for a line that is skipped, -1 on allocation failure. */
static int parse_line(struct symtab *t, const char *s, size_t len, struct hv_err *err)
{
    size_t i = 0;
    uint64_t addr = 0;
    unsigned digits = 0;
    for (; i < len && hexval(s[i]) >= 0; i++, digits++) {
        if (digits >= 16)
            return 0;
        addr = addr << 4 | (uint64_t)hexval(s[i]);
    }
    if (digits == 0 || i + 3 > len || s[i] != ' ' || s[i + 2] != ' ')
        return 0;
    char type = s[i + 1];
    i += 3;
    /* Text (code) symbols only: T/t global/local, W/w weak. */
    if (type != 'T' && type != 't' && type != 'W' && type != 'w')
        return 0;
    size_t start = i;
    while (i < len && s[i] != '\t' && s[i] != ' ')
        i++;
    if (i == start)
        return 0;
    uint8_t strength = type == 'T' ? 2 : (type == 'W' || type == 'w') ? 1 : 0;
    return symtab_add(t, addr, 0, s + start, i - start, strength, err) < 0 ? -1 : 1;
}

int kallsyms_parse(struct symtab *t, const char *text, size_t len, struct hv_err *err)
{
    size_t added = 0, off = 0;
    while (off < len) {
        const char *nl = memchr(text + off, '\n', len - off);
        size_t line_len = nl ? (size_t)(nl - (text + off)) : len - off;
        int rc = parse_line(t, text + off, line_len, err);
        if (rc < 0)
            return -1;
        added += (size_t)rc;
        off += line_len + 1;
    }
    if (!added)
        return hv_errf(err, "no text symbols (expected kallsyms / System.map lines such as "
                            "'ffffffff81000000 T _text')");
    bool any = false;
    for (size_t i = 0; i < t->n && !any; i++)
        any = t->v[i].addr != 0;
    /* What /proc/kallsyms shows a reader without CAP_SYSLOG under kptr_restrict: every name,
     * every address 0. Taken as it is, every kernel frame would be named after one symbol. */
    if (!any)
        return hv_errf(err, "every symbol's address is 0: kallsyms read without the right to "
                            "see addresses (kptr_restrict); read /proc/kallsyms as root");
    symtab_finish(t);
    return 0;
}

int kallsyms_load_file(struct symtab *t, const char *path, struct hv_err *err)
{
    /* /proc/kallsyms reports size 0: hv_read_file reads to its end. */
    uint8_t *buf;
    size_t len;
    if (hv_read_file(path, KALLSYMS_MAX_BYTES, &buf, &len, err) < 0)
        return -1;
    int rc = kallsyms_parse(t, (const char *)buf, len, err);
    if (rc < 0)
        hv_err_prefix(err, "%s", path);
    free(buf);
    return rc;
}

int kallsyms_kaslr_slide(const struct symtab *t, uint64_t lstar, int64_t *slide, struct hv_err *err)
{
    /* Linux x86-64 points MSR_LSTAR at entry_SYSCALL_64 (arch/x86/kernel/cpu/common.c
     * syscall_init), so their difference is the KASLR displacement of the whole image. */
    if (lstar < 0xffff800000000000ull)
        return hv_errf(err, "MSR_LSTAR 0x%llx is not a kernel address", (unsigned long long)lstar);
    const struct sym *s = symtab_find_name(t, "entry_SYSCALL_64");
    if (!s)
        return hv_errf(err, "no entry_SYSCALL_64 in the kernel symbols");
    *slide = (int64_t)(lstar - s->addr);
    return 0;
}
