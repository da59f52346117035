/* mkarchive: writes the test guest's boot archive, a cpio "newc" archive (the format Linux's
 * initramfs uses: magic "070701", 13 eight-digit hex fields, NUL-terminated name padded to 4
 * bytes, data padded to 4 bytes, ending with an entry named "TRAILER!!!").
 *
 * usage: mkarchive OUT.cpio NAME=PATH [NAME=PATH ...] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_entry(FILE *out, unsigned ino, const char *name, unsigned mode, const void *data,
                       size_t size)
{
    size_t namesize = strlen(name) + 1;
    if (size > 0xffffffffu || namesize > 4096) {
        errno = EFBIG; /* newc sizes are 8 hex digits */
        return -1;
    }
    char hdr[128];
    snprintf(hdr, sizeof(hdr), "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", ino,
             mode, 0u, 0u, 1u, 0u, (unsigned)size, 0u, 0u, 0u, 0u, (unsigned)namesize, 0u);
    static const char zeros[4];
    size_t head = 110 + namesize;
    if (fwrite(hdr, 1, 110, out) != 110 || fwrite(name, 1, namesize, out) != namesize ||
        fwrite(zeros, 1, (4 - head % 4) % 4, out) != (4 - head % 4) % 4 ||
        (size && fwrite(data, 1, size, out) != size) ||
        fwrite(zeros, 1, (4 - size % 4) % 4, out) != (4 - size % 4) % 4)
        return -1;
    return 0;
}

static void *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    *size = len;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: mkarchive OUT.cpio NAME=PATH [NAME=PATH ...]\n");
        return 2;
    }
    FILE *out = fopen(argv[1], "wb");
    if (!out) {
        fprintf(stderr, "mkarchive: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    for (int i = 2; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq || eq == argv[i]) {
            fprintf(stderr, "mkarchive: '%s' is not NAME=PATH\n", argv[i]);
            fclose(out);
            return 2;
        }
        *eq = '\0';
        size_t size;
        void *data = read_file(eq + 1, &size);
        if (!data) {
            fprintf(stderr, "mkarchive: %s: %s\n", eq + 1, strerror(errno));
            fclose(out);
            return 1;
        }
        int rc = write_entry(out, (unsigned)i, argv[i], 0100755, data, size);
        free(data);
        if (rc) {
            fprintf(stderr, "mkarchive: write %s: %s\n", argv[1], strerror(errno));
            fclose(out);
            return 1;
        }
    }
    if (write_entry(out, 0, "TRAILER!!!", 0, NULL, 0) || fclose(out)) {
        fprintf(stderr, "mkarchive: write %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    return 0;
}
