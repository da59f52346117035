#include "symbolize/dwarf_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/files.h"

struct dwarf_lines {
    int fd;
    Dwarf *dw;
};

int dwarf_lines_open(struct dwarf_lines **out, const char *path, struct hv_err *err)
{
    *out = NULL;
    int fd = hv_open_input(path, err);
    if (fd < 0)
        return -1;
    /* No DWARF, or DWARF libdw cannot read: the symbols stay, without lines. */
    Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
    if (!dw) {
        close(fd);
        return 0;
    }
    struct dwarf_lines *d = malloc(sizeof(*d));
    if (!d) {
        dwarf_end(dw);
        close(fd);
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    }
    *d = (struct dwarf_lines){fd, dw};
    *out = d;
    return 0;
}

/* An inlined call's site (DW_AT_call_file, DW_AT_call_line: DWARF 5 section 3.3.8.2), which is
 * in the function it was inlined into. */
static void call_site(Dwarf_Die *cu, Dwarf_Die *inl, Dwarf_Files **files, size_t *nfiles,
                      struct src_line *out)
{
    Dwarf_Attribute a;
    Dwarf_Word file, line;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &a), &file) != 0 ||
        dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &a), &line) != 0 || line == 0 ||
        line > UINT32_MAX)
        return;
    if (!*files && dwarf_getsrcfiles(cu, files, nfiles) != 0)
        return;
    const char *name = file < *nfiles ? dwarf_filesrc(*files, file, NULL, NULL) : NULL;
    if (name) {
        out->file = name;
        out->line = (uint32_t)line;
    }
}

/* The inlined function an inlined_subroutine DIE is an instance of, at the line the address
 * has reached so far (in it), before the line moves out to its call site. A chain deeper than
 * SRC_INLINE_MAX drops its innermost frames: the outer ones connect to the function. */
static void inlined_frame(Dwarf_Die *inl, struct src_line *out)
{
    Dwarf_Attribute a;
    const char *name = dwarf_formstring(dwarf_attr_integrate(inl, DW_AT_linkage_name, &a));
    if (!name)
        name = dwarf_formstring(dwarf_attr_integrate(inl, DW_AT_MIPS_linkage_name, &a));
    if (!name)
        name = dwarf_diename(inl);
    if (!name)
        return;
    if (out->ninl == SRC_INLINE_MAX) {
        memmove(&out->inl[0], &out->inl[1], sizeof(out->inl[0]) * (SRC_INLINE_MAX - 1));
        out->ninl--;
    }
    struct src_inline *f = &out->inl[out->ninl++];
    int decl = 0;
    *f = (struct src_inline){.name = name, .file = out->file, .line = out->line};
    f->decl_file = dwarf_decl_file(inl);
    if (dwarf_decl_line(inl, &decl) == 0 && decl > 0)
        f->decl_line = (uint32_t)decl;
}

bool dwarf_lines_lookup(struct dwarf_lines *d, uint64_t addr, struct src_line *out)
{
    Dwarf_Die cu;
    if (!d || !dwarf_addrdie(d->dw, addr, &cu))
        return false;
    Dwarf_Line *ln = dwarf_getsrc_die(&cu, addr);
    int line;
    const char *file = ln ? dwarf_linesrc(ln, NULL, NULL) : NULL;
    if (!file || dwarf_lineno(ln, &line) != 0 || line <= 0)
        return false;
    *out = (struct src_line){.file = file, .line = (uint32_t)line};
    /* The innermost scope that contains addr, then the DIEs that contain it (for an inlined
     * instance dwarf_getscopes goes on with its abstract origin's scopes instead: libdw.h):
     * each inlined call moves the line out to its call site, up to the function the code was
     * inlined into. */
    Dwarf_Die *scopes = NULL, inner;
    int n = dwarf_getscopes(&cu, addr, &scopes);
    if (n > 0) {
        inner = scopes[0];
        free(scopes);
        scopes = NULL;
        n = dwarf_getscopes_die(&inner, &scopes);
    }
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    for (int i = 0; i < n; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag == DW_TAG_inlined_subroutine) {
            inlined_frame(&scopes[i], out);
            call_site(&cu, &scopes[i], &files, &nfiles, out);
        } else if (tag == DW_TAG_subprogram) {
            int decl = 0;
            out->func_file = dwarf_decl_file(&scopes[i]);
            if (dwarf_decl_line(&scopes[i], &decl) == 0 && decl > 0)
                out->func_line = (uint32_t)decl;
            break;
        }
    }
    free(scopes);
    return true;
}

void dwarf_lines_close(struct dwarf_lines *d)
{
    if (!d)
        return;
    dwarf_end(d->dw);
    close(d->fd);
    free(d);
}
