/* grub.cfg and BLS entries into a boot menu (boot_menu.h). GRUB's syntax as its manual gives it
 * (GNU GRUB manual, "Shell-like scripting"): words split at blanks, ';' and newlines end a
 * command, '#' at a word's start comments out the rest of the line, single quotes are literal,
 * double quotes and bare words expand $name and ${name} and take '\' escapes, and '{' / '}'
 * open and close the bodies of menuentry, submenu and function. */
#include "diskfs/boot_menu.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 64
#define CMD_BUF   8192
#define MAX_VARS  64

struct var {
    char name[32];
    char val[BOOT_MENU_OPTIONS];
};

struct cmd {
    unsigned n;
    char *w[MAX_WORDS];
    char buf[CMD_BUF];
    size_t used;
    bool open;  /* ended with a bare '{' */
    bool close; /* a bare '}' */
};

struct parser {
    const char *p, *end;
    struct boot_menu *m;
    struct var *vars;
    unsigned nvars;
    struct cmd cmd;
};

/* src into dst, cut at cap - 1 bytes (fields are bounded: a longer value is truncated). */
static void copy(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}

static const char *var_get(const struct parser *ps, const char *name)
{
    for (unsigned i = 0; i < ps->nvars; i++)
        if (!strcmp(ps->vars[i].name, name))
            return ps->vars[i].val;
    return "";
}

static void var_set(struct parser *ps, const char *name, const char *val)
{
    if (strlen(name) >= sizeof(ps->vars[0].name))
        return;
    unsigned i = 0;
    while (i < ps->nvars && strcmp(ps->vars[i].name, name))
        i++;
    if (i == ps->nvars) {
        if (ps->nvars == MAX_VARS)
            return;
        ps->nvars++;
        copy(ps->vars[i].name, sizeof(ps->vars[i].name), name);
    }
    copy(ps->vars[i].val, sizeof(ps->vars[i].val), val);
}

static bool name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* One byte into the current word (dropped when the buffer is full: words are truncated). */
static void put(struct cmd *c, char ch)
{
    if (c->used + 1 < CMD_BUF)
        c->buf[c->used++] = ch;
}

/* $name or ${name} at ps->p (just past the '$'): its value into the word. */
static void expand(struct parser *ps)
{
    char name[32];
    size_t n = 0;
    if (ps->p < ps->end && *ps->p == '{') {
        ps->p++;
        while (ps->p < ps->end && *ps->p != '}' && *ps->p != '\n') {
            if (n + 1 < sizeof(name))
                name[n++] = *ps->p;
            ps->p++;
        }
        if (ps->p < ps->end && *ps->p == '}')
            ps->p++;
    } else if (ps->p < ps->end &&
               (*ps->p == '?' || *ps->p == '#' || isdigit((unsigned char)*ps->p))) {
        name[n++] = *ps->p++;
    } else {
        while (ps->p < ps->end && name_char(*ps->p)) {
            if (n + 1 < sizeof(name))
                name[n++] = *ps->p;
            ps->p++;
        }
        if (!n) { /* a lone '$' is itself */
            put(&ps->cmd, '$');
            return;
        }
    }
    name[n] = 0;
    for (const char *v = var_get(ps, name); *v; v++)
        put(&ps->cmd, *v);
}

/* The next command's words into ps->cmd; false at the end of the text. */
static bool read_cmd(struct parser *ps)
{
    struct cmd *c = &ps->cmd;
    c->n = 0;
    c->used = 0;
    c->open = c->close = false;
    for (;;) {
        while (ps->p < ps->end) {
            if (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r')
                ps->p++;
            else if (*ps->p == '\\' && ps->p + 1 < ps->end && ps->p[1] == '\n')
                ps->p += 2;
            else
                break;
        }
        if (ps->p >= ps->end)
            return c->n > 0;
        char ch = *ps->p;
        if (ch == '#') {
            while (ps->p < ps->end && *ps->p != '\n')
                ps->p++;
            continue;
        }
        if (ch == '\n' || ch == ';') {
            ps->p++;
            if (c->n)
                return true;
            continue;
        }
        /* A word. */
        const char *start = ps->p;
        size_t wstart = c->used;
        bool quoted = false;
        while (ps->p < ps->end) {
            ch = *ps->p;
            if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == ';')
                break;
            if (ch == '\'') {
                quoted = true;
                ps->p++;
                while (ps->p < ps->end && *ps->p != '\'')
                    put(c, *ps->p++);
                if (ps->p < ps->end)
                    ps->p++;
            } else if (ch == '"') {
                quoted = true;
                ps->p++;
                while (ps->p < ps->end && *ps->p != '"') {
                    if (*ps->p == '\\' && ps->p + 1 < ps->end && strchr("$\"\\\n", ps->p[1])) {
                        if (ps->p[1] != '\n')
                            put(c, ps->p[1]);
                        ps->p += 2;
                    } else if (*ps->p == '$') {
                        ps->p++;
                        expand(ps);
                    } else {
                        put(c, *ps->p++);
                    }
                }
                if (ps->p < ps->end)
                    ps->p++;
            } else if (ch == '\\' && ps->p + 1 < ps->end) {
                put(c, ps->p[1]);
                ps->p += 2;
            } else if (ch == '$') {
                ps->p++;
                expand(ps);
            } else {
                put(c, ch);
                ps->p++;
            }
        }
        char *w = c->buf + wstart;
        size_t wlen = c->used - wstart;
        if (!quoted && wlen == 1 && (*w == '{' || *w == '}')) {
            c->used = wstart;
            if (*w == '{') {
                c->open = true;
                return true;
            }
            if (c->n) { /* "... }": end this command, the '}' is read next */
                ps->p = start;
                return true;
            }
            c->close = true;
            return true;
        }
        put(c, 0);
        if (c->used < CMD_BUF && c->n < MAX_WORDS)
            c->w[c->n++] = w;
        else
            c->used = wstart; /* no room: the word is dropped */
        if (c->used >= CMD_BUF - 1)
            c->buf[CMD_BUF - 1] = 0;
    }
}

static struct boot_menu_entry *new_entry(struct boot_menu *m)
{
    if (m->n >= BOOT_MENU_MAX)
        return NULL;
    struct boot_menu_entry *e = &m->e[m->n++];
    memset(e, 0, sizeof(*e));
    return e;
}

/* Words from `from` on, joined by one space. */
static void join(const struct cmd *c, unsigned from, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = 0;
    for (unsigned i = from; i < c->n && at + 1 < cap; i++) {
        int w = snprintf(out + at, cap - at, "%s%s", at ? " " : "", c->w[i]);
        if (w < 0)
            break;
        at += (size_t)w < cap - at ? (size_t)w : cap - at - 1;
    }
}

/* A GRUB file name without its device: "(hd0,gpt1)/boot/vmlinuz" -> "/boot/vmlinuz". */
static void file_name(char *dst, size_t cap, const char *src)
{
    if (*src == '(') {
        const char *close = strchr(src, ')');
        if (close)
            src = close + 1;
    }
    copy(dst, cap, src);
}

static bool is(const char *a, const char *b)
{
    return !strcmp(a, b);
}

/* A command inside a menuentry's body. */
static void entry_cmd(struct boot_menu_entry *e, const struct cmd *c)
{
    const char *w0 = c->w[0];
    if ((is(w0, "linux") || is(w0, "linuxefi") || is(w0, "linux16")) && c->n >= 2) {
        file_name(e->kernel, sizeof(e->kernel), c->w[1]);
        join(c, 2, e->options, sizeof(e->options));
    } else if ((is(w0, "initrd") || is(w0, "initrdefi") || is(w0, "initrd16"))) {
        e->ninitrd = 0;
        for (unsigned i = 1; i < c->n && e->ninitrd < BOOT_MENU_MAX_INITRDS; i++)
            file_name(e->initrd[e->ninitrd++], sizeof(e->initrd[0]), c->w[i]);
    } else if (is(w0, "search") || is(w0, "search.fs_uuid")) {
        /* search [--no-floppy] --fs-uuid|-u [--set[=root]] [--hint...] UUID: the last word. */
        bool uuid = is(w0, "search.fs_uuid"), root = true;
        for (unsigned i = 1; i < c->n; i++) {
            if (is(c->w[i], "--fs-uuid") || is(c->w[i], "-u"))
                uuid = true;
            else if (!strncmp(c->w[i], "--set=", 6) && !is(c->w[i] + 6, "root"))
                root = false;
        }
        if (uuid && root && c->n >= 2 && c->w[c->n - 1][0] != '-')
            copy(e->fs_uuid, sizeof(e->fs_uuid), c->w[c->n - 1]);
    }
}

static void skip_block(struct parser *ps, unsigned depth)
{
    while (read_cmd(ps)) {
        if (ps->cmd.close)
            return;
        if (ps->cmd.open && depth < 64)
            skip_block(ps, depth + 1);
    }
}

/* menuentry/submenu's title (its first word that is no option) and --id. */
static void title_and_id(const struct cmd *c, char *title, size_t tcap, char *id, size_t icap)
{
    title[0] = id[0] = 0;
    bool have_title = false;
    for (unsigned i = 1; i < c->n; i++) {
        const char *w = c->w[i];
        if (is(w, "--id") && i + 1 < c->n) {
            copy(id, icap, c->w[++i]);
        } else if (is(w, "--class") || is(w, "--users") || is(w, "--hotkey")) {
            i++;
        } else if (!strncmp(w, "--", 2)) {
            continue;
        } else if (!have_title) {
            copy(title, tcap, w);
            have_title = true;
        } else if (!id[0]) {
            /* `$menuentry_id_option 'gnulinux-simple-...'` where the option expanded to
             * nothing (GRUB's feature test is not run): the id all the same. */
            copy(id, icap, w);
        }
    }
}

static void parse_block(struct parser *ps, unsigned depth, const char *prefix, unsigned *index,
                        struct boot_menu_entry *cur)
{
    while (read_cmd(ps)) {
        struct cmd *c = &ps->cmd;
        if (c->close) {
            if (depth)
                return;
            continue; /* a stray '}' at the top: GRUB reports it; the rest is still read */
        }
        /* "then"/"else"/"do" start a command in GRUB's grammar; what follows runs. */
        unsigned skip = 0;
        while (skip < c->n &&
               (is(c->w[skip], "then") || is(c->w[skip], "else") || is(c->w[skip], "do")))
            skip++;
        if (skip) {
            memmove(c->w, c->w + skip, (c->n - skip) * sizeof(c->w[0]));
            c->n -= skip;
        }
        if (c->open) {
            bool menu = c->n && is(c->w[0], "menuentry"), sub = c->n && is(c->w[0], "submenu");
            struct boot_menu_entry *e = NULL;
            if ((menu || sub) && !cur && depth < BOOT_MENU_MAX_DEPTH)
                e = new_entry(ps->m);
            if (!e) {
                skip_block(ps, 0);
                continue;
            }
            title_and_id(c, e->title, sizeof(e->title), e->id, sizeof(e->id));
            snprintf(e->path, sizeof(e->path), "%s%u", prefix, (*index)++);
            if (!depth)
                ps->m->top++;
            if (menu) {
                parse_block(ps, depth + 1, "", index, e);
            } else {
                char sub_prefix[sizeof(e->path) + 1];
                snprintf(sub_prefix, sizeof(sub_prefix), "%s>", e->path);
                unsigned sub_index = 0;
                parse_block(ps, depth + 1, sub_prefix, &sub_index, NULL);
            }
            continue;
        }
        if (!c->n)
            continue;
        if (cur) {
            entry_cmd(cur, c);
            continue;
        }
        const char *w0 = c->w[0];
        const char *assign = NULL;
        if (is(w0, "set") && c->n >= 2)
            assign = c->w[1];
        else if (strchr(w0, '=') && name_char(w0[0]) && !isdigit((unsigned char)w0[0]))
            assign = w0;
        if (assign) {
            char name[32];
            const char *eq = strchr(assign, '=');
            size_t n = eq ? (size_t)(eq - assign) : strlen(assign);
            if (n >= sizeof(name))
                continue;
            memcpy(name, assign, n);
            name[n] = 0;
            const char *val = eq ? eq + 1 : "";
            /* `if` is not evaluated, so both branches' `set default=` run: one that expands to
             * nothing (set default="${next_entry}" with no next entry) does not count. */
            if (is(name, "default")) {
                if (!*val)
                    continue;
                copy(ps->m->deflt, sizeof(ps->m->deflt), val);
            }
            var_set(ps, name, val);
        } else if (is(w0, "blscfg")) {
            ps->m->blscfg = true;
        }
    }
}

/* GRUB's environment block (grub-editenv): "name=value" lines after a "# GRUB Environment
 * Block" line, padded with '#'. */
void boot_menu_init(struct boot_menu *m, const char *grubenv, size_t len)
{
    memset(m, 0, sizeof(*m));
    for (const char *p = grubenv, *end = grubenv ? grubenv + len : NULL; p && p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t n = eol ? (size_t)(eol - p) : (size_t)(end - p);
        const char *eq = memchr(p, '=', n);
        if (eq && *p != '#') {
            size_t klen = (size_t)(eq - p), vlen = n - klen - 1;
            char *dst = NULL;
            size_t cap = 0;
            if (klen == 11 && !memcmp(p, "saved_entry", 11))
                dst = m->saved, cap = sizeof(m->saved);
            else if (klen == 10 && !memcmp(p, "kernelopts", 10))
                dst = m->kernelopts, cap = sizeof(m->kernelopts);
            if (dst)
                snprintf(dst, cap, "%.*s", (int)(vlen < cap ? vlen : cap - 1), eq + 1);
        }
        p = eol ? eol + 1 : end;
    }
}

void boot_menu_parse_grub(struct boot_menu *m, const char *text, size_t len)
{
    struct parser *ps = calloc(1, sizeof(*ps));
    struct var *vars = calloc(MAX_VARS, sizeof(*vars));
    if (!ps || !vars) {
        free(ps);
        free(vars);
        return;
    }
    ps->p = text;
    ps->end = text + len;
    ps->m = m;
    ps->vars = vars;
    var_set(ps, "saved_entry", m->saved);
    var_set(ps, "kernelopts", m->kernelopts);
    unsigned index = m->top;
    parse_block(ps, 0, "", &index, NULL);
    free(vars);
    free(ps);
}

/* One "key value" line of a BLS entry. */
static void bls_line(struct boot_menu_entry *e, const struct boot_menu *m, const char *key,
                     size_t klen, const char *val, size_t vlen)
{
#define KEY(k) (klen == sizeof(k) - 1 && !memcmp(key, k, klen))
    char v[BOOT_MENU_OPTIONS];
    snprintf(v, sizeof(v), "%.*s", (int)(vlen < sizeof(v) ? vlen : sizeof(v) - 1), val);
    if (KEY("title")) {
        copy(e->title, sizeof(e->title), v);
    } else if (KEY("version")) {
        copy(e->version, sizeof(e->version), v);
    } else if (KEY("sort-key")) {
        copy(e->sort_key, sizeof(e->sort_key), v);
    } else if (KEY("linux")) {
        copy(e->kernel, sizeof(e->kernel), v);
    } else if (KEY("initrd")) {
        /* One file a line, or several separated by blanks. */
        for (char *save = NULL, *t = strtok_r(v, " \t", &save);
             t && e->ninitrd < BOOT_MENU_MAX_INITRDS; t = strtok_r(NULL, " \t", &save))
            copy(e->initrd[e->ninitrd++], sizeof(e->initrd[0]), t);
    } else if (KEY("options")) {
        /* Several lines are joined; "$kernelopts" (older Fedora) is grubenv's. */
        const char *at = strstr(v, "$kernelopts");
        const char *parts[] = {e->options[0] ? " " : "", v, at ? m->kernelopts : "",
                               at ? at + 11 : ""};
        size_t lens[] = {strlen(parts[0]), at ? (size_t)(at - v) : strlen(v), strlen(parts[2]),
                         strlen(parts[3])};
        size_t have = strlen(e->options);
        for (size_t i = 0; i < 4; i++) {
            size_t n =
                lens[i] < sizeof(e->options) - 1 - have ? lens[i] : sizeof(e->options) - 1 - have;
            memcpy(e->options + have, parts[i], n);
            have += n;
        }
        e->options[have] = 0;
    }
#undef KEY
}

void boot_menu_parse_bls(struct boot_menu *m, const char *name, const char *text, size_t len)
{
    struct boot_menu_entry e;
    memset(&e, 0, sizeof(e));
    e.bls = true;
    snprintf(e.id, sizeof(e.id), "%s", name);
    size_t nl = strlen(e.id);
    if (nl > 5 && !strcmp(e.id + nl - 5, ".conf"))
        e.id[nl - 5] = 0;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        while (p < le && (*p == ' ' || *p == '\t'))
            p++;
        const char *k = p;
        while (p < le && *p != ' ' && *p != '\t')
            p++;
        size_t klen = (size_t)(p - k);
        while (p < le && (*p == ' ' || *p == '\t'))
            p++;
        const char *ve = le;
        while (ve > p && (ve[-1] == ' ' || ve[-1] == '\t' || ve[-1] == '\r'))
            ve--;
        if (klen && *k != '#')
            bls_line(&e, m, k, klen, p, (size_t)(ve - p));
        p = eol ? eol + 1 : end;
    }
    if (!e.kernel[0])
        return; /* an EFI program's entry ("efi"): not a Linux kernel to load */
    if (!e.title[0])
        copy(e.title, sizeof(e.title), e.id);
    struct boot_menu_entry *slot = new_entry(m);
    if (slot)
        *slot = e;
}

/* BLS order: entries with a sort-key first, by it; then by version, newest first; then by
 * file name, newest first (strverscmp: "6.10" after "6.9"). */
static int bls_cmp(const void *a, const void *b)
{
    const struct boot_menu_entry *x = a, *y = b;
    if (x->sort_key[0] != y->sort_key[0] && (!x->sort_key[0] || !y->sort_key[0]))
        return x->sort_key[0] ? -1 : 1;
    int c = strcmp(x->sort_key, y->sort_key);
    if (c)
        return c;
    c = strverscmp(y->version, x->version);
    if (c)
        return c;
    return strverscmp(y->id, x->id);
}

void boot_menu_sort_bls(struct boot_menu *m)
{
    /* The BLS entries come first in GRUB's menu (blscfg runs before the other entries of a
     * grub.cfg that uses it); the others move down by as many places. */
    struct boot_menu_entry *tmp = malloc(sizeof(m->e));
    if (!tmp)
        return;
    unsigned nb = 0, no = 0;
    for (unsigned i = 0; i < m->n; i++)
        if (m->e[i].bls)
            tmp[nb++] = m->e[i];
    qsort(tmp, nb, sizeof(tmp[0]), bls_cmp);
    for (unsigned i = 0; i < nb; i++)
        snprintf(tmp[i].path, sizeof(tmp[i].path), "%u", i);
    for (unsigned i = 0; i < m->n; i++) {
        if (m->e[i].bls)
            continue;
        struct boot_menu_entry *e = &tmp[nb + no++];
        *e = m->e[i];
        char *rest;
        unsigned long top = strtoul(e->path, &rest, 10);
        char path[sizeof(e->path)];
        snprintf(path, sizeof(path), "%lu%s", top + nb, rest);
        copy(e->path, sizeof(e->path), path);
    }
    memcpy(m->e, tmp, m->n * sizeof(tmp[0]));
    m->top += nb;
    free(tmp);
}

/* The item at `prefix` + one more level that `seg` names (a number, a title, an id). */
static int find_item(const struct boot_menu *m, const char *prefix, const char *seg, size_t slen)
{
    size_t plen = strlen(prefix);
    for (unsigned i = 0; i < m->n; i++) {
        const struct boot_menu_entry *e = &m->e[i];
        if (strncmp(e->path, prefix, plen) || strchr(e->path + plen, '>'))
            continue;
        const char *num = e->path + plen;
        if ((strlen(num) == slen && !memcmp(num, seg, slen)) ||
            (strlen(e->title) == slen && !memcmp(e->title, seg, slen)) ||
            (e->id[0] && strlen(e->id) == slen && !memcmp(e->id, seg, slen)))
            return (int)i;
    }
    return -1;
}

/* `want` as a GRUB menu position or name: "2", "1>0", "Advanced options>Debian ...". */
static int resolve(const struct boot_menu *m, const char *want)
{
    char prefix[64] = "";
    int item = -1;
    for (const char *seg = want; *seg;) {
        size_t slen = strcspn(seg, ">");
        item = find_item(m, prefix, seg, slen);
        if (item < 0 && !prefix[0]) {
            /* A title or id anywhere (GRUB takes an entry's id at any depth too). */
            for (unsigned i = 0; i < m->n && item < 0; i++)
                if ((strlen(m->e[i].title) == slen && !memcmp(m->e[i].title, seg, slen)) ||
                    (m->e[i].id[0] && strlen(m->e[i].id) == slen && !memcmp(m->e[i].id, seg, slen)))
                    item = (int)i;
        }
        if (item < 0)
            return -1;
        snprintf(prefix, sizeof(prefix), "%s>", m->e[item].path);
        seg += slen;
        if (*seg == '>')
            seg++;
    }
    if (item < 0)
        return -1;
    /* A submenu: its first entry (and so on down). */
    while (!m->e[item].kernel[0]) {
        snprintf(prefix, sizeof(prefix), "%s>0", m->e[item].path);
        int next = -1;
        for (unsigned i = 0; i < m->n && next < 0; i++)
            if (!strcmp(m->e[i].path, prefix))
                next = (int)i;
        if (next < 0)
            return item;
        item = next;
    }
    return item;
}

int boot_menu_choose(const struct boot_menu *m, const char *want, char *why, size_t len)
{
    if (!m->n) {
        snprintf(why, len, "no menu entry that loads a Linux kernel");
        return -1;
    }
    const char *pick = want ? want : m->deflt;
    if (!want && (!strcmp(pick, "saved") || (!pick[0] && m->saved[0])))
        pick = m->saved;
    int item = pick[0] ? resolve(m, pick) : -1;
    if (item < 0 && want) {
        snprintf(why, len, "no menu entry '%s'", want);
        return -1;
    }
    if (item < 0) /* GRUB too falls back to the first entry when its default names none */
        item = resolve(m, "0");
    if (item < 0 || !m->e[item].kernel[0]) {
        snprintf(why, len, "menu entry '%s' loads no Linux kernel (no linux command)",
                 item < 0 ? pick : m->e[item].title);
        return -1;
    }
    why[0] = 0;
    return item;
}
