#include "symbolize/elf_symbols.h"
#include "symbolize/minidebuginfo.h"

#include <elf.h>
#include <inttypes.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/files.h"

#define MAX_PHDRS    4096 /* more than any linker emits; bounds a hostile e_phnum */
#define MAX_SECTIONS 65536

static void find_build_id_in_data(Elf_Data *d, struct elf_symbols *es)
{
    if (es->build_id_len || !d || !d->d_buf)
        return;
    es->build_id_len = elf_notes_find_build_id(d->d_buf, d->d_size, es->build_id);
}

static int read_phdrs(Elf *e, struct elf_symbols *es, bool notes_only)
{
    size_t n;
    if (elf_getphdrnum(e, &n) != 0)
        return 0; /* no program headers: a relocatable or a bare debug file */
    if (n > MAX_PHDRS)
        n = MAX_PHDRS;
    uint64_t base = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph))
            continue;
        if (ph.p_type == PT_LOAD && ph.p_memsz && ph.p_vaddr <= UINT64_MAX - ph.p_memsz) {
            if (!es->load_hi || ph.p_vaddr < es->load_lo)
                es->load_lo = ph.p_vaddr;
            if (ph.p_vaddr + ph.p_memsz > es->load_hi)
                es->load_hi = ph.p_vaddr + ph.p_memsz;
        }
        if (ph.p_type == PT_LOAD && ph.p_vaddr >= ph.p_offset) {
            uint64_t b = (ph.p_vaddr - ph.p_offset) & ~0xfffull;
            if (b < base)
                base = b;
        } else if (ph.p_type == PT_NOTE && ph.p_filesz > 0 && ph.p_filesz < (1u << 20)) {
            find_build_id_in_data(
                elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE), es);
        }
    }
    if (!notes_only)
        es->link_base = base == UINT64_MAX ? 0 : base;
    return 0;
}

static int read_symbols(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct elf_symbols *es,
                        struct hv_err *err)
{
    Elf_Data *d = elf_getdata(scn, NULL);
    if (!d || !d->d_buf || sh->sh_entsize == 0)
        return 0;
    size_t count = d->d_size / sizeof(Elf64_Sym);
    if (gelf_getclass(e) == ELFCLASS32)
        count = d->d_size / sizeof(Elf32_Sym);
    for (size_t i = 1; i < count; i++) {
        GElf_Sym s;
        if (!gelf_getsym(d, (int)i, &s))
            break;
        int type = GELF_ST_TYPE(s.st_info), bind = GELF_ST_BIND(s.st_info);
        if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE || s.st_value == 0)
            continue;
        /* Untyped labels in code sections are assembly entry points (trap and syscall stubs of
         * a kernel): keep them, weakest of all aliases. */
        bool code_label = false;
        if (type == STT_NOTYPE) {
            GElf_Shdr tsh;
            Elf_Scn *ts = elf_getscn(e, s.st_shndx);
            /* A label at the very end of its section (_end, _etext, __stop_*) marks a
             * boundary, not code. */
            code_label = ts && gelf_getshdr(ts, &tsh) && (tsh.sh_flags & SHF_EXECINSTR) &&
                         s.st_value >= tsh.sh_addr && s.st_value - tsh.sh_addr < tsh.sh_size;
        }
        if (type != STT_FUNC && type != STT_GNU_IFUNC && !code_label)
            continue;
        const char *name = elf_strptr(e, sh->sh_link, s.st_name);
        if (!name || !*name)
            continue;
        uint8_t strength = code_label ? 0 : bind == STB_GLOBAL ? 3 : bind == STB_WEAK ? 2 : 1;
        if (symtab_add(&es->syms, s.st_value, s.st_size, name, strnlen(name, SYMTAB_MAX_NAME_LEN),
                       strength, err) < 0)
            return -1;
    }
    return 0;
}

/* The symbols of a MiniDebugInfo section (symbolize/minidebuginfo.h): its unpacked ELF's
 * .symtab, added to the outer file's table. A section that does not unpack leaves the file
 * with the symbols it has (the caller's warning says a stripped file is stripped). */
static int read_minidebuginfo(Elf_Scn *scn, struct elf_symbols *es, struct hv_err *err)
{
    Elf_Data *d = elf_getdata(scn, NULL);
    void *img = NULL;
    size_t len = 0;
    if (!d || !d->d_buf || !d->d_size ||
        minidebuginfo_unpack(d->d_buf, d->d_size, &img, &len, NULL) < 0)
        return 0;
    int rc = 0;
    Elf *inner = elf_memory(img, len);
    Elf_Scn *s = NULL;
    size_t seen = 0;
    while (inner && elf_kind(inner) == ELF_K_ELF && (s = elf_nextscn(inner, s)) != NULL &&
           seen++ < MAX_SECTIONS) {
        GElf_Shdr sh;
        if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_SYMTAB)
            continue;
        /* Its data must lie inside the unpacked image (libelf trusts the header). */
        if (sh.sh_offset > len || sh.sh_size > len - sh.sh_offset)
            break;
        if ((rc = read_symbols(inner, s, &sh, es, err)) < 0)
            break;
        es->has_symtab = es->from_minidebuginfo = true;
    }
    if (inner)
        elf_end(inner);
    free(img);
    return rc;
}

static int read_sections(Elf *e, struct elf_symbols *es, bool notes_only, struct hv_err *err)
{
    Elf_Scn *scn = NULL, *debugdata = NULL;
    size_t seen = 0, shstrndx = 0;
    if (elf_getshdrstrndx(e, &shstrndx) != 0)
        shstrndx = 0;
    while ((scn = elf_nextscn(e, scn)) != NULL && seen++ < MAX_SECTIONS) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        if (sh.sh_type == SHT_NOTE && !es->build_id_len)
            find_build_id_in_data(elf_getdata(scn, NULL), es);
        if (notes_only)
            continue;
        /* An end marker per code section bounds the last unsized label in it (symtab.h). */
        if ((sh.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) == (SHF_ALLOC | SHF_EXECINSTR) &&
            sh.sh_size && sh.sh_addr <= UINT64_MAX - sh.sh_size &&
            symtab_add(&es->syms, sh.sh_addr + sh.sh_size, 0, "", 0, 0, err) < 0)
            return -1;
        if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
            if (sh.sh_type == SHT_SYMTAB)
                es->has_symtab = true;
            if (read_symbols(e, scn, &sh, es, err) < 0)
                return -1;
        }
        const char *name = shstrndx ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
        if (sh.sh_type == SHT_PROGBITS && name && !strcmp(name, ".gnu_debugdata"))
            debugdata = scn;
    }
    /* A stripped binary's local functions, from its MiniDebugInfo (Fedora, RHEL). */
    if (!notes_only && !es->has_symtab && debugdata)
        return read_minidebuginfo(debugdata, es, err);
    return 0;
}

/* Headers and sections must lie inside the file's `size` bytes: a file cut short (a partial
 * copy or download) would otherwise load as one with fewer or no symbols, silently. */
static int check_extent(Elf *e, const GElf_Ehdr *eh, uint64_t size, struct hv_err *err)
{
    if (eh->e_phoff &&
        (eh->e_phoff > size || (uint64_t)eh->e_phnum * eh->e_phentsize > size - eh->e_phoff))
        return hv_errk(err, HV_ERR_CORRUPT,
                       "truncated: its program headers end past the file's %" PRIu64 " bytes",
                       size);
    if (eh->e_shoff &&
        (eh->e_shoff > size || (uint64_t)eh->e_shnum * eh->e_shentsize > size - eh->e_shoff))
        return hv_errk(err, HV_ERR_CORRUPT,
                       "truncated: its section headers end past the file's %" PRIu64 " bytes",
                       size);
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
            continue;
        if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
            return hv_errk(err, HV_ERR_CORRUPT,
                           "truncated: a section ends past the file's %" PRIu64 " bytes", size);
    }
    return 0;
}

static int load_elf(Elf *e, uint64_t size, struct elf_symbols *es, bool notes_only,
                    struct hv_err *err)
{
    if (elf_kind(e) != ELF_K_ELF)
        return hv_errk(err, HV_ERR_CORRUPT, "not an ELF file");
    GElf_Ehdr eh;
    if (!gelf_getehdr(e, &eh))
        return hv_errk(err, HV_ERR_CORRUPT, "bad ELF header: %s", elf_errmsg(-1));
    if (check_extent(e, &eh, size, err) < 0)
        return -1;
    es->e_type = eh.e_type;
    es->e_entry = eh.e_entry;
    if (read_phdrs(e, es, notes_only) < 0 || read_sections(e, es, notes_only, err) < 0)
        return -1;
    if (!notes_only)
        symtab_finish(&es->syms);
    return 0;
}

static void es_init(struct elf_symbols *es)
{
    memset(es, 0, sizeof(*es));
    symtab_init(&es->syms);
}

void elf_symbols_free(struct elf_symbols *es)
{
    symtab_free(&es->syms);
    memset(es, 0, sizeof(*es));
}

static int load_path(struct elf_symbols *es, const char *path, bool notes_only, struct hv_err *err)
{
    es_init(es);
    if (elf_version(EV_CURRENT) == EV_NONE)
        return hv_errf(err, "libelf: %s", elf_errmsg(-1));
    int fd = hv_open_input(path, err);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > ELF_MAX_FILE_SIZE) {
        close(fd);
        return hv_errf(err, "%s: not a regular file of at most 2 GiB", path);
    }
    /* Read, not mapped: a file that shrinks while it is read gives an error, not SIGBUS. */
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    int rc = e ? load_elf(e, (uint64_t)st.st_size, es, notes_only, err)
               : hv_errf(err, "%s", elf_errmsg(-1));
    if (e)
        elf_end(e);
    close(fd);
    if (rc < 0) {
        hv_err_prefix(err, "%s", path);
        elf_symbols_free(es);
    }
    return rc;
}

int elf_symbols_load_file(struct elf_symbols *es, const char *path, struct hv_err *err)
{
    return load_path(es, path, false, err);
}

int elf_read_build_id_file(const char *path, uint8_t out[ELF_BUILD_ID_MAX], struct hv_err *err)
{
    struct elf_symbols es;
    if (load_path(&es, path, true, err) < 0)
        return -1;
    int n = (int)es.build_id_len;
    memcpy(out, es.build_id, es.build_id_len);
    elf_symbols_free(&es);
    return n;
}

int elf_symbols_load_mem(struct elf_symbols *es, const void *buf, size_t len, struct hv_err *err)
{
    es_init(es);
    if (elf_version(EV_CURRENT) == EV_NONE)
        return hv_errf(err, "libelf: %s", elf_errmsg(-1));
    if (len == 0 || len > ELF_MAX_FILE_SIZE)
        return hv_errf(err, "ELF image of %zu bytes", len);
    /* libelf may convert data in place; give it a private copy. */
    char *copy = malloc(len);
    if (!copy)
        return hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
    memcpy(copy, buf, len);
    Elf *e = elf_memory(copy, len);
    int rc = e ? load_elf(e, len, es, false, err) : hv_errf(err, "%s", elf_errmsg(-1));
    if (e)
        elf_end(e);
    free(copy);
    if (rc < 0)
        elf_symbols_free(es);
    return rc;
}
