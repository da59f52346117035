#include "symbolize/symbol_path.h"
#include "symbolize/debuginfod.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "symbolize/elf_symbols.h"

void symbol_path_init(struct symbol_path *sp)
{
    memset(sp, 0, sizeof(*sp));
}

void symbol_path_free(struct symbol_path *sp)
{
    for (size_t i = 0; i < sp->dirs.n; i++)
        free(sp->dirs.v[i]);
    vec_free(&sp->dirs);
    for (size_t i = 0; i < sp->roots.n; i++) {
        free(sp->roots.v[i].container);
        free(sp->roots.v[i].dir);
    }
    vec_free(&sp->roots);
    for (size_t i = 0; i < sp->scanned.n; i++)
        free(sp->scanned.v[i].path);
    vec_free(&sp->scanned);
    memset(sp, 0, sizeof(*sp));
}

int symbol_path_add_dir(struct symbol_path *sp, const char *dir, struct hv_err *err)
{
    struct stat st;
    if (stat(dir, &st) < 0)
        return hv_errf_errno(err, "--symbols %s", dir);
    if (!S_ISDIR(st.st_mode))
        return hv_errf(err, "--symbols %s: not a directory", dir);
    char *copy = strdup(dir);
    if (!copy || !vec_append(&sp->dirs, copy)) {
        free(copy);
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    }
    sp->scanned_done = 0;
    return 0;
}

int symbol_path_add_root(struct symbol_path *sp, const char *container, const char *dir,
                         struct hv_err *err)
{
    struct stat st;
    if (!*container)
        return hv_errk(err, HV_ERR_USAGE, "--symbols =%s: no container before '='", dir);
    if (stat(dir, &st) < 0)
        return hv_errf_errno(err, "--symbols %s=%s", container, dir);
    if (!S_ISDIR(st.st_mode))
        return hv_errf(err, "--symbols %s=%s: not a directory", container, dir);
    struct symbol_root r = {strdup(container), strdup(dir)};
    if (!r.container || !r.dir || !vec_append(&sp->roots, r)) {
        free(r.container);
        free(r.dir);
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    }
    return 0;
}

static bool is_regular(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool build_id_matches(const char *path, const uint8_t *id, uint32_t len)
{
    uint8_t got[ELF_BUILD_ID_MAX];
    int n = elf_read_build_id_file(path, got, NULL);
    return n > 0 && (uint32_t)n == len && !memcmp(got, id, len);
}

static void scan_dirs(struct symbol_path *sp)
{
    for (size_t i = 0; i < sp->scanned.n; i++)
        free(sp->scanned.v[i].path);
    sp->scanned.n = 0;
    for (size_t d = 0; d < sp->dirs.n; d++) {
        DIR *dir = opendir(sp->dirs.v[d]);
        if (!dir)
            continue;
        struct dirent *de;
        size_t seen = 0;
        while ((de = readdir(dir)) != NULL && seen++ < SYMBOL_PATH_MAX_SCAN) {
            if (de->d_name[0] == '.')
                continue;
            char path[4096];
            if (snprintf(path, sizeof(path), "%s/%s", sp->dirs.v[d], de->d_name) >=
                (int)sizeof(path))
                continue;
            if (!is_regular(path))
                continue;
            struct symbol_path_entry e = {0};
            int n = elf_read_build_id_file(path, e.build_id, NULL);
            if (n <= 0)
                continue;
            e.build_id_len = (uint32_t)n;
            if (!(e.path = strdup(path)))
                break;
            if (!vec_append(&sp->scanned, e)) {
                free(e.path);
                break;
            }
        }
        closedir(dir);
    }
    sp->scanned_done = 1;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

char *symbol_path_find(struct symbol_path *sp, const uint8_t *build_id, uint32_t build_id_len,
                       const char *name)
{
    return symbol_path_find_in(sp, build_id, build_id_len, name, NULL);
}

/* The recorded path under each container root that may hold it. */
static char *find_in_roots(struct symbol_path *sp, const uint8_t *build_id, uint32_t build_id_len,
                           const char *name, const char *container)
{
    if (!name || name[0] != '/')
        return NULL;
    char path[4096];
    for (size_t r = 0; r < sp->roots.n; r++) {
        const struct symbol_root *root = &sp->roots.v[r];
        bool ours = container && !strncmp(container, root->container, strlen(root->container));
        if (!ours && !build_id_len)
            continue; /* without a build-id only its own container's files are its */
        if (snprintf(path, sizeof(path), "%s%s", root->dir, name) >= (int)sizeof(path) ||
            !is_regular(path))
            continue;
        if (build_id_len ? build_id_matches(path, build_id, build_id_len) : ours)
            return strdup(path);
    }
    return NULL;
}

char *symbol_path_find_in(struct symbol_path *sp, const uint8_t *build_id, uint32_t build_id_len,
                          const char *name, const char *container)
{
    char path[4096];
    if (build_id && build_id_len >= 2 && build_id_len <= ELF_BUILD_ID_MAX) {
        char hex[2 * ELF_BUILD_ID_MAX + 1];
        elf_build_id_hex(build_id, build_id_len, hex);
        /* .build-id/<first byte>/<rest>[.debug] (GDB "Separate Debug Files"). */
        static const char *const suffixes[] = {".debug", ""};
        for (size_t d = 0; d < sp->dirs.n; d++) {
            for (size_t k = 0; k < 2; k++) {
                snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s%s", sp->dirs.v[d], hex, hex + 2,
                         suffixes[k]);
                if (is_regular(path) && build_id_matches(path, build_id, build_id_len))
                    return strdup(path);
            }
        }
        char *in_root = find_in_roots(sp, build_id, build_id_len, name, container);
        if (in_root)
            return in_root;
        if (!sp->scanned_done)
            scan_dirs(sp);
        for (size_t i = 0; i < sp->scanned.n; i++) {
            const struct symbol_path_entry *e = &sp->scanned.v[i];
            if (e->build_id_len == build_id_len && !memcmp(e->build_id, build_id, build_id_len))
                return strdup(e->path);
        }
    }
    if (!build_id_len) {
        char *in_root = find_in_roots(sp, NULL, 0, name, container);
        if (in_root)
            return in_root;
    }
    if (name && *name && name[0] != '[') {
        /* Without a build-id match, a file of the same name; with a build-id it must agree. */
        for (size_t d = 0; d < sp->dirs.n; d++) {
            snprintf(path, sizeof(path), "%s/%s", sp->dirs.v[d], base_name(name));
            if (!is_regular(path))
                continue;
            if (!build_id_len || build_id_matches(path, build_id, build_id_len))
                return strdup(path);
        }
        if (is_regular(name) && (!build_id_len || build_id_matches(name, build_id, build_id_len)))
            return strdup(name);
    }
    if (sp->debuginfod && build_id && build_id_len >= 2)
        return hv_debuginfod_find(sp->debuginfod, build_id, build_id_len, name);
    return NULL;
}
