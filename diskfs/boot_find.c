/* A disk's boot entry, found and read (boot.h). Where boot loaders keep their menus on the file
 * system they read it from: GRUB's grub.cfg (Debian and Ubuntu: /boot/grub/grub.cfg on the
 * root file system, or /grub/grub.cfg on a separate /boot; Fedora: grub2), with its grubenv
 * beside it, and BLS entries (loader/entries on the partition that holds them: /boot's). */
#include "diskfs/boot.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const grub_dirs[] = {"/boot/grub", "/grub", "/boot/grub2", "/grub2"};
static const char *const bls_dirs[] = {"/loader/entries", "/boot/loader/entries"};

#define MAX_BLS 64

static void uuid_text(const uint8_t u[16], char out[37])
{
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

static struct diskfs_volume *volume_by_uuid(struct diskfs *d, const char *text)
{
    for (size_t i = 0; i < d->vols.n; i++) {
        struct diskfs_volume *v = &d->vols.v[i];
        char t[37];
        if (!v->fs || !v->has_uuid)
            continue;
        uuid_text(v->uuid, t);
        if (!strcasecmp(t, text))
            return v;
    }
    return NULL;
}

/* BLS entries in `dir` of v into m; how many were read. */
static unsigned add_bls(struct diskfs_volume *v, const char *dir, struct boot_menu *m)
{
    char *names[MAX_BLS];
    unsigned n = 0, added = 0;
    struct hv_err err;
    if (diskfs_list_dir(v, dir, names, MAX_BLS, &n, &err) < 0 && !n)
        return 0;
    for (unsigned i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (len > 5 && !strcmp(names[i] + len - 5, ".conf")) {
            char path[BOOT_MENU_PATH + 64];
            snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
            uint8_t *text;
            size_t tlen;
            if (diskfs_read_path(v, path, DISKFS_BOOT_MAX_ENTRY, &text, &tlen, &err) == 0) {
                unsigned before = m->n;
                boot_menu_parse_bls(m, names[i], (const char *)text, tlen);
                added += m->n - before;
                free(text);
            }
        }
        free(names[i]);
    }
    return added;
}

/* The menu on volume v, if it has one: into m, with where it was into `from`, and which BLS
 * directory gave entries into *bls_dir. */
static bool menu_on(struct diskfs_volume *v, struct boot_menu *m, char *from, size_t len,
                    const char **bls_dir)
{
    struct hv_err err;
    *bls_dir = NULL;
    for (size_t g = 0; g < sizeof(grub_dirs) / sizeof(grub_dirs[0]); g++) {
        char path[64];
        uint8_t *cfg, *env = NULL;
        size_t clen, elen = 0;
        snprintf(path, sizeof(path), "%s/grub.cfg", grub_dirs[g]);
        if (diskfs_read_path(v, path, DISKFS_BOOT_MAX_CONFIG, &cfg, &clen, &err) < 0)
            continue;
        snprintf(path, sizeof(path), "%s/grubenv", grub_dirs[g]);
        if (diskfs_read_path(v, path, DISKFS_BOOT_MAX_ENTRY, &env, &elen, &err) < 0)
            env = NULL;
        boot_menu_init(m, (const char *)env, elen);
        boot_menu_parse_grub(m, (const char *)cfg, clen);
        free(cfg);
        free(env);
        if (m->blscfg)
            for (size_t b = 0; b < sizeof(bls_dirs) / sizeof(bls_dirs[0]) && !*bls_dir; b++)
                if (add_bls(v, bls_dirs[b], m))
                    *bls_dir = bls_dirs[b];
        if (*bls_dir)
            boot_menu_sort_bls(m);
        if (m->n) {
            snprintf(from, len, "%s/grub.cfg on %s", grub_dirs[g], v->where);
            return true;
        }
    }
    for (size_t b = 0; b < sizeof(bls_dirs) / sizeof(bls_dirs[0]); b++) {
        boot_menu_init(m, NULL, 0);
        if (add_bls(v, bls_dirs[b], m)) {
            boot_menu_sort_bls(m);
            *bls_dir = bls_dirs[b];
            snprintf(from, len, "%s on %s", bls_dirs[b], v->where);
            return true;
        }
    }
    return false;
}

static void list_entries(const struct boot_menu *m, char *out, size_t len)
{
    size_t at = 0;
    out[0] = 0;
    for (unsigned i = 0; i < m->n && at + 1 < len; i++) {
        const struct boot_menu_entry *e = &m->e[i];
        int w = snprintf(out + at, len - at, "\n  %-5s %s%s", e->path, e->title,
                         e->kernel[0] ? "" : " (submenu, or no Linux kernel)");
        if (w < 0)
            break;
        at += (size_t)w < len - at ? (size_t)w : len - at - 1;
    }
}

/* A file of the entry: on v as written, else (an entry of /boot/loader/entries on the root
 * file system) under /boot. */
static int read_entry_file(struct diskfs_volume *v, const char *path, bool under_boot, size_t max,
                           uint8_t **buf, size_t *len, struct hv_err *err)
{
    uint64_t ino;
    int rc = diskfs_lookup(v, path, &ino, err);
    if (rc < 0)
        return -1;
    if (rc == 1 && under_boot) {
        char alt[BOOT_MENU_PATH + 8];
        snprintf(alt, sizeof(alt), "/boot%s%s", path[0] == '/' ? "" : "/", path);
        if (diskfs_lookup(v, alt, &ino, err) == 0)
            return diskfs_read_path(v, alt, max, buf, len, err);
    }
    return diskfs_read_path(v, path, max, buf, len, err);
}

static int read_initrds(struct diskfs_volume *v, const struct boot_menu_entry *e, bool under_boot,
                        struct diskfs_boot *out, struct hv_err *err)
{
    for (unsigned i = 0; i < e->ninitrd; i++) {
        uint8_t *b;
        size_t n;
        size_t room = DISKFS_BOOT_MAX_INITRD - out->initrd_size;
        if (read_entry_file(v, e->initrd[i], under_boot, room, &b, &n, err) < 0)
            return hv_err_prefix(err, "initrd");
        size_t padded = (n + 3) & ~(size_t)3;
        if (padded > room) {
            free(b);
            return hv_errk(err, HV_ERR_LIMIT, "the entry's initrds are more than %u bytes",
                           DISKFS_BOOT_MAX_INITRD);
        }
        uint8_t *all = realloc(out->initrd, out->initrd_size + padded);
        if (!all) {
            free(b);
            return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory for the initrds");
        }
        memcpy(all + out->initrd_size, b, n);
        memset(all + out->initrd_size + n, 0, padded - n);
        out->initrd = all;
        out->initrd_size += padded;
        out->ninitrd++;
        free(b);
    }
    return 0;
}

int diskfs_boot_find(struct diskfs *d, const char *want, struct diskfs_boot *out,
                     struct hv_err *err)
{
    memset(out, 0, sizeof(*out));
    struct boot_menu *m = malloc(sizeof(*m));
    if (!m)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    struct diskfs_volume *mv = NULL;
    const char *bls_dir = NULL;
    for (size_t i = 0; i < d->vols.n && !mv; i++)
        if (d->vols.v[i].fs && menu_on(&d->vols.v[i], m, out->menu, sizeof(out->menu), &bls_dir))
            mv = &d->vols.v[i];
    if (!mv) {
        char vols[1024];
        diskfs_describe(d, vols, sizeof(vols));
        free(m);
        return hv_errk(err, HV_ERR_UNSUPPORTED,
                       "no boot menu on the disk: no grub.cfg in /boot/grub, /grub, /boot/grub2 or "
                       "/grub2 and no loader/entries/*.conf on an ext2/3/4 file system; what the "
                       "disk holds:\n%s",
                       vols[0] ? vols : "(no partitions or file systems found)\n");
    }
    list_entries(m, out->entries, sizeof(out->entries));
    char why[256];
    int pick = boot_menu_choose(m, want, why, sizeof(why));
    if (pick < 0) {
        int rc = hv_errk(err, HV_ERR_USAGE, "%s in %s; the menu:%s", why, out->menu, out->entries);
        free(m);
        return rc;
    }
    const struct boot_menu_entry *e = &m->e[pick];
    snprintf(out->title, sizeof(out->title), "%s", e->title);
    snprintf(out->kernel_path, sizeof(out->kernel_path), "%s", e->kernel);
    /* GRUB reads the entry's files from the file system its `search` chose, else from its
     * own; BLS paths are relative to the partition of the entries. */
    struct diskfs_volume *fv = mv;
    if (e->fs_uuid[0] && !e->bls) {
        fv = volume_by_uuid(d, e->fs_uuid);
        if (!fv) {
            int rc = hv_errk(err, HV_ERR_UNSUPPORTED,
                             "menu entry '%s' (%s) reads its kernel from the file system with "
                             "UUID %s, which is on none of the disks (or not ext2/3/4)",
                             e->title, out->menu, e->fs_uuid);
            free(m);
            return rc;
        }
    }
    snprintf(out->where, sizeof(out->where), "%s", fv->where);
    bool under_boot = bls_dir && !strcmp(bls_dir, "/boot/loader/entries");
    int rc = read_entry_file(fv, e->kernel, under_boot, DISKFS_BOOT_MAX_KERNEL, &out->kernel,
                             &out->kernel_size, err);
    if (rc < 0)
        hv_err_prefix(err, "kernel");
    else
        rc = read_initrds(fv, e, under_boot, out, err);
    if (rc == 0)
        /* GRUB's linux command puts the kernel's name first (BOOT_IMAGE=, grub-core/loader/
         * i386/linux.c); the rest is the entry's own. */
        snprintf(out->cmdline, sizeof(out->cmdline), "BOOT_IMAGE=%s%s%s", e->kernel,
                 e->options[0] ? " " : "", e->options);
    if (rc < 0) {
        char msg[HV_ERR_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        hv_errk(err, err->kind, "menu entry '%s' (%s): %s", e->title, out->menu, msg);
        diskfs_boot_free(out);
    }
    free(m);
    return rc;
}

void diskfs_boot_free(struct diskfs_boot *b)
{
    free(b->kernel);
    free(b->initrd);
    b->kernel = b->initrd = NULL;
    b->kernel_size = b->initrd_size = 0;
}
