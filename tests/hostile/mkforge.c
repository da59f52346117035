/* mkforge: hostile guests for hvprof's resource bounds (docs/reliability.md, "Budgets";
 * tests/hostile/test_hostile_bounds.c). Each is a freestanding ELF64 kernel of the hvprof boot
 * ABI (docs/boot-elf.md) whose memory forges, at fixed guest-physical addresses, what one kind
 * of exhaustion needs, and a few bytes of CPL-0 code that keep the guest busy:
 *
 *   btf-bomb       a Linux self-description (VMCOREINFO, kallsyms) whose BTF task_struct is 64
 *                  anonymous members of its own type: a member search of 64^9 without a bound
 *   kmod-flood     1024 kernel modules sharing one table of 2^18 symbols with 255-byte names
 *   kallsyms-bomb  1 Mi kallsyms names of tokens that expand to 480 bytes each (~0.5 GiB)
 *   user-modules   4 address spaces x 8 aliases of an ELF image with 2^18 dynamic symbols of
 *                  255-byte names (for the generic OS layer)
 *   pt-bomb        1000 address spaces whose user halves are one page table repeated: every
 *                  walk reads the maximum number of entries
 *   virtio-flood   16 read requests of 64 x 64 MiB each to the first virtio disk, notified once
 *
 * The guest's code is hand-assembled (each instruction's encoding beside it, Intel SDM Vol. 2):
 * a pause loop, a loop over CR3 values, or a table of MMIO writes followed by a pause loop.
 * Addresses of Linux structures follow docs/linux-introspection.md (VMCOREINFO lines, kallsyms
 * tables, struct module and mod_kallsyms through BTF); the kernel image is at phys_base 0, so
 * kernel virtual address 0xffffffff80000000 + P is guest-physical P.
 *
 *   mkforge CASE OUT.elf */
#include <elf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB          (1ull << 20)
#define RAM_TOP     (128 * MB) /* what the image may fill; the tests give the guest 256 MiB */
#define CODE_PA     0x100000ull
#define KMAP        0xffffffff80000000ull /* __START_KERNEL_map; phys_base 0 */
#define TEXT_PA     (16 * MB)
#define VMCI_PA     (17 * MB)
#define KTAB_PA     (18 * MB) /* kallsyms tables, BTF, list head: a bump allocator */
#define KPGT_PA     (48 * MB) /* kernel page tables (kmod-flood) */
#define MOD_PA      (50 * MB) /* the module area, 2 MiB aligned */
#define MOD_VA      0xffffffffc0000000ull
#define USER_PA     (16 * MB)   /* roots and tables of forged address spaces */
#define SO_PA       (24 * MB)   /* the forged shared object */
#define VIRTIO_BASE 0xd0000000u /* the first disk's registers (vmm/disks.h) */
#define VQ_PA       0x200000ull
#define VBUF_PA     (64 * MB)
#define VBUF_BYTES  (64 * MB)
#define VIRTIO_SEGS 64
#define VIRTIO_REQS 16
#define NSYM_FLOOD  (1u << 18)
#define NAME_LEN    255
#define NMODS       1024
#define NALIASES    8
#define NUSER_AS    4
#define NBOMB_AS    1000

static uint8_t *mem;            /* guest-physical [0, RAM_TOP) */
static uint64_t lo = ~0ull, hi; /* the data written, for the segment */
static uint64_t kcur = KTAB_PA;

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "mkforge: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void *at(uint64_t pa, uint64_t len)
{
    if (pa < CODE_PA || pa + len > RAM_TOP)
        die("0x%llx+%llu outside the image", (unsigned long long)pa, (unsigned long long)len);
    if (pa != CODE_PA || len > 4096) {
        if (pa < lo)
            lo = pa;
        if (pa + len > hi)
            hi = pa + len;
    }
    return mem + pa;
}

static void put(uint64_t pa, const void *p, uint64_t len)
{
    memcpy(at(pa, len), p, len);
}

static void put64(uint64_t pa, uint64_t v)
{
    put(pa, &v, 8);
}

static void put32(uint64_t pa, uint32_t v)
{
    put(pa, &v, 4);
}

/* Kernel image data: its physical address; kva() gives the virtual one. */
static uint64_t kput(const void *p, uint64_t len)
{
    uint64_t pa = kcur;
    if (p)
        put(pa, p, len);
    else
        (void)at(pa, len);
    kcur = (pa + len + 15) & ~15ull;
    return pa;
}

static uint64_t kva(uint64_t pa)
{
    return KMAP + pa;
}

/* ---- code ---------------------------------------------------------------------------------- */

static uint8_t code[4096];
static size_t ncode;

static void emit(const void *p, size_t n)
{
    memcpy(code + ncode, p, n);
    ncode += n;
}

static void emit_imm64(uint8_t op2, uint64_t v) /* 48 b8+r imm64: mov r64, imm64 */
{
    uint8_t b[10] = {0x48, op2};
    memcpy(b + 2, &v, 8);
    emit(b, 10);
}

static void code_spin(void)
{
    static const uint8_t spin[] = {0xf3, 0x90, 0xeb, 0xfc}; /* pause; jmp -4 */
    emit(spin, sizeof(spin));
}

/* for (;;) for (rax = roots, rcx = n; rcx; rcx--, rax += 4096) mov cr3, rax */
static void code_cr3_loop(uint64_t roots, uint64_t n)
{
    emit_imm64(0xb8, roots); /* mov rax, roots */
    emit_imm64(0xb9, n);     /* mov rcx, n */
    static const uint8_t loop[] = {
        0x0f, 0x22, 0xd8,                   /* mov cr3, rax */
        0x48, 0x05, 0x00, 0x10, 0x00, 0x00, /* add rax, 0x1000 */
        0x48, 0xff, 0xc9,                   /* dec rcx */
        0x75, 0xf2,                         /* jnz -14: the mov cr3 */
        0xeb, 0xdc,                         /* jmp -36: the mov rax */
    };
    emit(loop, sizeof(loop));
}

/* Writes each (address, value) pair of `table` (32-bit each, ended by address 0), then spins. */
static void code_mmio_writes(uint64_t table)
{
    emit_imm64(0xbe, table); /* mov rsi, table */
    static const uint8_t loop[] = {
        0x8b, 0x06,             /* mov eax, [rsi] */
        0x85, 0xc0,             /* test eax, eax */
        0x74, 0x0b,             /* jz +11: the spin */
        0x8b, 0x56, 0x04,       /* mov edx, [rsi+4] */
        0x89, 0x10,             /* mov [rax], edx */
        0x48, 0x83, 0xc6, 0x08, /* add rsi, 8 */
        0xeb, 0xef,             /* jmp -17: the mov eax */
    };
    emit(loop, sizeof(loop));
    code_spin();
}

/* ---- Linux: VMCOREINFO, kallsyms, BTF ---------------------------------------------------- */

static char vmci[4096];
static size_t vmci_len;

__attribute__((format(printf, 1, 2))) static void vline(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmci_len += (size_t)vsnprintf(vmci + vmci_len, sizeof(vmci) - vmci_len, fmt, ap);
    va_end(ap);
}

struct ksym {
    const char *name; /* with its nm type letter */
    uint64_t addr;
};

/* kallsyms tables (scripts/kallsyms.c's format, base-relative offsets) with one token per
 * printable character, and the VMCOREINFO lines that locate them. */
static void kallsyms(const struct ksym *s, unsigned n)
{
    char table[4096];
    uint16_t index[256];
    size_t tl = 0;
    for (unsigned i = 0; i < 256; i++) {
        index[i] = (uint16_t)tl;
        tl += (size_t)snprintf(table + tl, sizeof(table) - tl,
                               i > 0x20 && i < 0x7f ? "%c" : "~%02x", i) +
              1;
    }
    uint8_t *names = calloc(1, 1 << 16);
    size_t nl = 0;
    int32_t *offs = calloc(n, 4);
    for (unsigned i = 0; i < n; i++) {
        size_t len = strlen(s[i].name);
        names[nl++] = (uint8_t)len; /* names under 128 characters */
        memcpy(names + nl, s[i].name, len);
        nl += len;
        offs[i] = (int32_t)(uint32_t)(s[i].addr - s[0].addr);
    }
    uint64_t base = s[0].addr;
    uint32_t num = n;
    vline("SYMBOL(kallsyms_num_syms)=%llx\n", (unsigned long long)kva(kput(&num, 4)));
    vline("SYMBOL(kallsyms_names)=%llx\n", (unsigned long long)kva(kput(names, nl)));
    vline("SYMBOL(kallsyms_token_table)=%llx\n", (unsigned long long)kva(kput(table, tl)));
    vline("SYMBOL(kallsyms_token_index)=%llx\n", (unsigned long long)kva(kput(index, 512)));
    vline("SYMBOL(kallsyms_offsets)=%llx\n", (unsigned long long)kva(kput(offs, 4ull * n)));
    vline("SYMBOL(kallsyms_relative_base)=%llx\n", (unsigned long long)kva(kput(&base, 8)));
    free(names);
    free(offs);
}

static void vmcoreinfo_head(void)
{
    vline("OSRELEASE=6.1.0-hostile\n");
    vline("PAGESIZE=4096\n");
    vline("SYMBOL(_stext)=%llx\n", (unsigned long long)kva(TEXT_PA));
    vline("NUMBER(phys_base)=0\n");
    vline("KERNELOFFSET=0\n");
}

static void vmcoreinfo_write(void)
{
    put(VMCI_PA, vmci, vmci_len);
}

/* BTF (Documentation/bpf/btf.rst): types and strings, then the 24-byte header. */
struct btf {
    uint8_t types[1 << 16];
    size_t tl;
    char strs[4096];
    size_t sl;
};

static uint32_t bstr(struct btf *b, const char *s)
{
    if (!*s)
        return 0;
    uint32_t off = (uint32_t)b->sl;
    memcpy(b->strs + b->sl, s, strlen(s) + 1);
    b->sl += strlen(s) + 1;
    return off;
}

static void b32(struct btf *b, uint32_t v)
{
    memcpy(b->types + b->tl, &v, 4);
    b->tl += 4;
}

static void btype(struct btf *b, const char *name, unsigned kind, unsigned vlen, uint32_t sz)
{
    b32(b, bstr(b, name));
    b32(b, (kind << 24) | vlen);
    b32(b, sz);
}

static void bmember(struct btf *b, const char *name, uint32_t type, uint32_t bit_off)
{
    b32(b, bstr(b, name));
    b32(b, type);
    b32(b, bit_off);
}

/* The blob into the kernel image, located by __start_BTF/__stop_BTF. */
static uint64_t btf_place(struct btf *b, uint64_t *end)
{
    uint8_t *blob = malloc(24 + b->tl + b->sl);
    uint32_t v[5] = {24, 0, (uint32_t)b->tl, (uint32_t)b->tl, (uint32_t)b->sl};
    memcpy(blob, (const uint8_t[4]){0x9f, 0xeb, 1, 0}, 4);
    memcpy(blob + 4, v, sizeof(v));
    memcpy(blob + 24, b->types, b->tl);
    memcpy(blob + 24 + b->tl, b->strs, b->sl);
    uint64_t pa = kput(blob, 24 + b->tl + b->sl);
    free(blob);
    *end = pa + 24 + b->tl + b->sl;
    return pa;
}

static struct btf *btf_new(void)
{
    struct btf *b = calloc(1, sizeof(*b));
    b->sl = 1;
    return b;
}

static void case_btf_bomb(void)
{
    vmcoreinfo_head();
    struct btf *b = btf_new();
    btype(b, "task_struct", 4, 64, 64); /* type 1: 64 anonymous members of type 1 */
    for (unsigned i = 0; i < 64; i++)
        bmember(b, "", 1, 0);
    uint64_t end, start = btf_place(b, &end);
    const struct ksym s[] = {
        {"T_stext", kva(TEXT_PA)},          {"Tforged_fn", kva(TEXT_PA) + 0x100},
        {"T_etext", kva(TEXT_PA) + 0x1000}, {"D__start_BTF", kva(start)},
        {"D__stop_BTF", kva(end)},
    };
    kallsyms(s, sizeof(s) / sizeof(s[0]));
    vmcoreinfo_write();
    free(b);
    code_spin();
}

/* Kernel page tables: the image's first GiB and the module area, 2 MiB pages. */
static uint64_t kernel_page_tables(void)
{
    uint64_t pml4 = KPGT_PA, pdpt = pml4 + 4096, pd_img = pdpt + 4096, pd_mod = pd_img + 4096;
    put64(pml4 + 511 * 8, pdpt | 3);
    put64(pdpt + 510 * 8, pd_img | 3);
    put64(pdpt + 511 * 8, pd_mod | 3);
    for (uint64_t i = 0; i < 512; i++)
        put64(pd_img + i * 8, (i << 21) | 0x83); /* P, RW, PS */
    for (uint64_t i = 0; i < 8; i++)
        put64(pd_mod + i * 8, (MOD_PA + (i << 21)) | 0x83);
    return pml4;
}

static uint64_t mod_pa(uint64_t va)
{
    return MOD_PA + (va - MOD_VA);
}

static void case_kmod_flood(void)
{
    vmcoreinfo_head();
    uint64_t pml4 = kernel_page_tables();
    vline("SYMBOL(init_top_pgt)=%llx\n", (unsigned long long)kva(pml4));
    /* struct module (as 6.1 lays out what hvprof reads): list@0, state@16, name[56]@24,
     * core_layout {base@80, size@88, text_size@92}, kallsyms@96; size 104.
     * struct mod_kallsyms: symtab@0, num_symtab@8, strtab@16. */
    struct btf *b = btf_new();
    btype(b, "int", 1, 0, 4); /* 1 */
    b32(b, (1u << 24) | 32);
    btype(b, "char", 1, 0, 1); /* 2 */
    b32(b, 8);
    btype(b, "", 3, 0, 0); /* 3: char[56] */
    b32(b, 2);
    b32(b, 1);
    b32(b, 56);
    btype(b, "", 2, 0, 0);           /* 4: void * */
    btype(b, "list_head", 4, 2, 16); /* 5 */
    bmember(b, "next", 4, 0);
    bmember(b, "prev", 4, 64);
    btype(b, "module_layout", 4, 3, 16); /* 6 */
    bmember(b, "base", 4, 0);
    bmember(b, "size", 1, 64);
    bmember(b, "text_size", 1, 96);
    btype(b, "module", 4, 5, 104); /* 7 */
    bmember(b, "list", 5, 0);
    bmember(b, "state", 1, 16 * 8);
    bmember(b, "name", 3, 24 * 8);
    bmember(b, "core_layout", 6, 80 * 8);
    bmember(b, "kallsyms", 4, 96 * 8);
    btype(b, "mod_kallsyms", 4, 3, 24); /* 8 */
    bmember(b, "symtab", 4, 0);
    bmember(b, "num_symtab", 1, 64);
    bmember(b, "strtab", 4, 128);
    uint64_t end, start = btf_place(b, &end);
    free(b);

    /* The module area: the modules, one mod_kallsyms, its symbols and their one name. */
    uint64_t text = MOD_VA + 0x600000, text_size = (uint64_t)NSYM_FLOOD * 16;
    uint64_t ks = MOD_VA + NMODS * 128, strtab = ks + 64, symtab = strtab + 4096;
    put64(mod_pa(ks), symtab);
    put32(mod_pa(ks) + 8, NSYM_FLOOD);
    put64(mod_pa(ks) + 16, strtab);
    char name[NAME_LEN + 2] = {0};
    memset(name + 1, 'k', NAME_LEN);
    put(mod_pa(strtab), name, sizeof(name));
    for (uint64_t i = 0; i < NSYM_FLOOD; i++) {
        Elf64_Sym sym = {.st_name = 1,
                         .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
                         .st_shndx = 1,
                         .st_value = text + i * 16,
                         .st_size = 16};
        put(mod_pa(symtab) + i * sizeof(sym), &sym, sizeof(sym));
    }
    if (mod_pa(symtab) + NSYM_FLOOD * sizeof(Elf64_Sym) > MOD_PA + 8 * (2 * MB))
        die("the symbols run past the module area's mapping");
    uint64_t head = kput(NULL, 16); /* the `modules` list head, in the kernel image */
    uint64_t prev = kva(head);
    for (uint64_t m = 0; m < NMODS; m++) {
        uint64_t va = MOD_VA + m * 128;
        put64(prev == kva(head) ? head : mod_pa(prev), va); /* prev->next = this */
        put64(mod_pa(va) + 8, prev);
        put32(mod_pa(va) + 16, 0); /* MODULE_STATE_LIVE */
        char mname[56];
        snprintf(mname, sizeof(mname), "forged%04u", (unsigned)m);
        put(mod_pa(va) + 24, mname, strlen(mname) + 1);
        put64(mod_pa(va) + 80, text);
        put32(mod_pa(va) + 92, (uint32_t)text_size);
        put64(mod_pa(va) + 96, ks);
        prev = va;
    }
    put64(mod_pa(prev), kva(head)); /* last->next = head */
    put64(head + 8, prev);
    const struct ksym s[] = {
        {"T_stext", kva(TEXT_PA)},          {"Tforged_fn", kva(TEXT_PA) + 0x100},
        {"T_etext", kva(TEXT_PA) + 0x1000}, {"D__start_BTF", kva(start)},
        {"D__stop_BTF", kva(end)},          {"Dmodules", kva(head)},
    };
    kallsyms(s, sizeof(s) / sizeof(s[0]));
    vmcoreinfo_write();
    code_spin();
}

/* 1 Mi code symbols after _stext, each "T" and 7 tokens of 60 characters: 421 bytes a name
 * from 9 bytes of table (tokens 0x21-0x7e are themselves, 0x80-0xff the long ones). */
static void case_kallsyms_bomb(void)
{
    vmcoreinfo_head();
    const uint32_t n = 1u << 20;
    char *table = calloc(1, 256 * 61);
    uint16_t index[256];
    size_t tl = 0;
    for (unsigned i = 0; i < 256; i++) {
        index[i] = (uint16_t)tl;
        if (i >= 0x80)
            memset(table + tl, 'a' + i % 26, 60);
        else
            snprintf(table + tl, 8, i > 0x20 && i < 0x7f ? "%c" : "~%02x", i);
        tl += strlen(table + tl) + 1;
    }
    uint8_t *names = malloc((size_t)n * 9);
    memcpy(names, "\x07T_stext", 8); /* symbol 0: _stext at the relative base */
    size_t nl = 8;
    for (uint32_t i = 1; i < n; i++) {
        names[nl++] = 8;
        names[nl++] = 'T';
        for (unsigned t = 1; t < 8; t++)
            names[nl++] = (uint8_t)(0x80 | ((i + t) & 0x7f));
    }
    int32_t *offs = calloc(n, 4);
    for (uint32_t i = 0; i < n; i++)
        offs[i] = (int32_t)(i * 16);
    uint64_t base = kva(TEXT_PA);
    vline("SYMBOL(kallsyms_num_syms)=%llx\n", (unsigned long long)kva(kput(&n, 4)));
    vline("SYMBOL(kallsyms_names)=%llx\n", (unsigned long long)kva(kput(names, nl)));
    vline("SYMBOL(kallsyms_token_table)=%llx\n", (unsigned long long)kva(kput(table, tl)));
    vline("SYMBOL(kallsyms_token_index)=%llx\n", (unsigned long long)kva(kput(index, 512)));
    vline("SYMBOL(kallsyms_offsets)=%llx\n", (unsigned long long)kva(kput(offs, 4ull * n)));
    vline("SYMBOL(kallsyms_relative_base)=%llx\n", (unsigned long long)kva(kput(&base, 8)));
    vmcoreinfo_write();
    free(table);
    free(names);
    free(offs);
    code_spin();
}

/* An x86-64 ELF64 header with `phnum` program headers right after it (gABI, "ELF Header"). */
static Elf64_Ehdr elf_header(uint16_t type, uint64_t entry, uint16_t phnum)
{
    Elf64_Ehdr eh = {.e_type = type,
                     .e_machine = EM_X86_64,
                     .e_version = EV_CURRENT,
                     .e_entry = entry,
                     .e_phoff = sizeof(Elf64_Ehdr),
                     .e_ehsize = sizeof(Elf64_Ehdr),
                     .e_phentsize = sizeof(Elf64_Phdr),
                     .e_phnum = phnum};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    return eh;
}

/* ---- generic OS layer: forged address spaces --------------------------------------------- */

#define PTE_U 7ull /* present, writable, user */

/* An ET_DYN image at SO_PA (its own offset 0 = virtual 0): one PT_LOAD over it all, a dynamic
 * section with DT_HASH (nchain = the symbol count), DT_SYMTAB, DT_STRTAB, DT_STRSZ, DT_SYMENT,
 * and 2^18 defined functions all named by the same 255 characters. Returns its size. */
static uint64_t forged_so(void)
{
    const uint64_t dyn = 0x1000, str = 0x2000, hash = 0x3000;
    const uint64_t sym = (hash + 8 + 4ull * NSYM_FLOOD + 4 + 0xfff) & ~0xfffull;
    const uint64_t size = (sym + (uint64_t)NSYM_FLOOD * sizeof(Elf64_Sym) + 0xfff) & ~0xfffull;
    Elf64_Ehdr eh = elf_header(ET_DYN, 0, 2);
    Elf64_Phdr ph[2] = {
        {.p_type = PT_LOAD,
         .p_flags = PF_R | PF_X,
         .p_filesz = size,
         .p_memsz = size,
         .p_align = 4096},
        {.p_type = PT_DYNAMIC,
         .p_flags = PF_R,
         .p_offset = dyn,
         .p_vaddr = dyn,
         .p_filesz = 7 * 16,
         .p_memsz = 7 * 16,
         .p_align = 8},
    };
    put(SO_PA, &eh, sizeof(eh));
    put(SO_PA + sizeof(eh), ph, sizeof(ph));
    const Elf64_Dyn d[] = {
        {DT_HASH, {hash}},
        {DT_STRTAB, {str}},
        {DT_SYMTAB, {sym}},
        {DT_STRSZ, {NAME_LEN + 2}},
        {DT_SYMENT, {sizeof(Elf64_Sym)}},
        {DT_NULL, {0}},
    };
    put(SO_PA + dyn, d, sizeof(d));
    char name[NAME_LEN + 2] = {0};
    memset(name + 1, 'u', NAME_LEN);
    put(SO_PA + str, name, sizeof(name));
    put32(SO_PA + hash, 1);              /* nbucket */
    put32(SO_PA + hash + 4, NSYM_FLOOD); /* nchain: the symbol count */
    for (uint64_t i = 1; i < NSYM_FLOOD; i++) {
        Elf64_Sym s = {.st_name = 1,
                       .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
                       .st_shndx = 1,
                       .st_value = 0x1000 + i * 16,
                       .st_size = 16};
        put(SO_PA + sym + i * sizeof(s), &s, sizeof(s));
    }
    return size;
}

static void case_user_modules(void)
{
    uint64_t size = forged_so();
    /* Root j maps the image NALIASES times through PML4 entry 1 + j: the user half's
     * PDPT entry k holds alias k, all through one PD and its page tables. */
    uint64_t roots = USER_PA, pdpt = roots + NUSER_AS * 4096, pd = pdpt + 4096, pt = pd + 4096;
    uint64_t npages = size / 4096, npt = (npages + 511) / 512;
    for (uint64_t j = 0; j < NUSER_AS; j++) {
        put64(roots + j * 4096, 0x2000 | 3); /* the boot tables' low 4 GiB, supervisor */
        put64(roots + j * 4096 + (1 + j) * 8, pdpt | PTE_U);
    }
    for (uint64_t k = 0; k < NALIASES; k++)
        put64(pdpt + k * 8, pd | PTE_U);
    for (uint64_t t = 0; t < npt; t++)
        put64(pd + t * 8, (pt + t * 4096) | PTE_U);
    for (uint64_t p = 0; p < npages; p++)
        put64(pt + p * 8, (SO_PA + p * 4096) | PTE_U);
    if (pt + npt * 4096 > SO_PA)
        die("the page tables run into the image");
    code_cr3_loop(roots, NUSER_AS);
}

static void case_pt_bomb(void)
{
    uint64_t roots = USER_PA, pdpt = roots + NBOMB_AS * 4096, pd = pdpt + 4096, pt = pd + 4096,
             page = pt + 4096;
    for (uint64_t j = 0; j < NBOMB_AS; j++) {
        put64(roots + j * 4096, 0x2000 | 3);
        for (uint64_t e = 1; e < 256; e++)
            put64(roots + j * 4096 + e * 8, pdpt | PTE_U);
    }
    for (uint64_t e = 0; e < 512; e++) {
        put64(pdpt + e * 8, pd | PTE_U);
        put64(pd + e * 8, pt | PTE_U);
        put64(pt + e * 8, page | PTE_U);
    }
    put64(page, 0x9090909090909090ull); /* something, not an ELF header */
    code_cr3_loop(roots, NBOMB_AS);
}

/* ---- virtio -------------------------------------------------------------------------------- */

static void case_virtio_flood(void)
{
    /* One indirect table shared by every request: header (IN, sector 0), 64 writable segments
     * of 64 MiB over one guest buffer, the status byte (VIRTIO 1.2 2.7.5.3, 5.2.6). */
    const uint64_t desc = VQ_PA, avail = VQ_PA + 0x1000, used = VQ_PA + 0x2000,
                   ind = VQ_PA + 0x3000, hdr = VQ_PA + 0x5000, status = VQ_PA + 0x6000;
    struct vdesc {
        uint64_t addr;
        uint32_t len;
        uint16_t flags, next;
    } t[VIRTIO_SEGS + 2];
    t[0] = (struct vdesc){hdr, 16, 1, 1};
    for (unsigned i = 0; i < VIRTIO_SEGS; i++)
        t[1 + i] = (struct vdesc){VBUF_PA, (uint32_t)VBUF_BYTES, 1 | 2, (uint16_t)(2 + i)};
    t[VIRTIO_SEGS + 1] = (struct vdesc){status, 1, 2, 0};
    put(ind, t, sizeof(t));
    (void)at(hdr, 16); /* type 0 (IN), sector 0 */
    (void)at(status, 1);
    (void)at(used, 4096);
    for (unsigned r = 0; r < VIRTIO_REQS; r++) {
        struct vdesc d = {ind, (uint32_t)sizeof(t), 4, 0}; /* VIRTQ_DESC_F_INDIRECT */
        put(desc + r * 16, &d, 16);
        uint16_t head = (uint16_t)r;
        put(avail + 4 + r * 2, &head, 2);
    }
    uint16_t flags = 0, idx = VIRTIO_REQS;
    put(avail, &flags, 2);
    put(avail + 2, &idx, 2);
    /* The driver's side of 3.1.1 and 4.2.3, register by register (4.2.2 offsets). */
    const uint32_t w[][2] = {
        {0x070, 0},
        {0x070, 1},
        {0x070, 3}, /* reset, ACK, DRIVER */
        {0x024, 1},
        {0x020, 1},
        {0x024, 0},
        {0x020, 0}, /* VERSION_1 only */
        {0x070, 11},
        {0x030, 0},
        {0x038, 16}, /* FEATURES_OK; queue 0 */
        {0x080, (uint32_t)desc},
        {0x084, 0},
        {0x090, (uint32_t)avail},
        {0x094, 0},
        {0x0a0, (uint32_t)used},
        {0x0a4, 0},
        {0x044, 1}, /* ready */
        {0x070, 15},
        {0x050, 0}, /* DRIVER_OK; notify */
    };
    uint32_t table[64];
    unsigned n = 0;
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
        table[n++] = VIRTIO_BASE + w[i][0];
        table[n++] = w[i][1];
    }
    table[n++] = 0;
    table[n++] = 0;
    uint64_t tpa = CODE_PA + 2048;
    code_mmio_writes(tpa);
    memcpy(code + 2048, table, n * 4);
    ncode = 2048 + n * 4;
}

/* ---- the ELF file -------------------------------------------------------------------------- */

static void write_elf(const char *path, uint64_t bss_lo, uint64_t bss_hi)
{
    memcpy(mem + CODE_PA, code, ncode);
    struct seg {
        uint64_t pa, filesz, memsz;
    } seg[3];
    unsigned nseg = 0;
    seg[nseg++] = (struct seg){CODE_PA, 4096, 4096};
    if (hi > lo) {
        lo &= ~0xfffull;
        hi = (hi + 0xfff) & ~0xfffull;
        seg[nseg++] = (struct seg){lo, hi - lo, hi - lo};
    }
    if (bss_hi > bss_lo)
        seg[nseg++] = (struct seg){bss_lo, 0, bss_hi - bss_lo};
    Elf64_Ehdr eh = elf_header(ET_EXEC, CODE_PA, (uint16_t)nseg);
    FILE *f = fopen(path, "wb");
    if (!f)
        die("%s: cannot create", path);
    fwrite(&eh, sizeof(eh), 1, f);
    uint64_t off = 4096;
    for (unsigned i = 0; i < nseg; i++) {
        Elf64_Phdr ph = {.p_type = PT_LOAD,
                         .p_flags = PF_R | PF_W | PF_X,
                         .p_offset = seg[i].filesz ? off : 0,
                         .p_vaddr = seg[i].pa,
                         .p_paddr = seg[i].pa,
                         .p_filesz = seg[i].filesz,
                         .p_memsz = seg[i].memsz,
                         .p_align = 4096};
        fwrite(&ph, sizeof(ph), 1, f);
        off += seg[i].filesz;
    }
    for (unsigned i = 0; i < nseg; i++) {
        if (!seg[i].filesz)
            continue;
        if (fseek(f, 4096 + (i ? (long)seg[0].filesz : 0), SEEK_SET) != 0 && i)
            die("%s: seek", path);
        if (fwrite(mem + seg[i].pa, 1, seg[i].filesz, f) != seg[i].filesz)
            die("%s: write", path);
    }
    if (fclose(f) != 0)
        die("%s: write", path);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: mkforge btf-bomb|kmod-flood|kallsyms-bomb|user-modules|"
                        "pt-bomb|virtio-flood OUT.elf\n");
        return 2;
    }
    mem = calloc(1, RAM_TOP);
    if (!mem)
        die("out of memory");
    const char *c = argv[1];
    uint64_t bss_lo = 0, bss_hi = 0;
    if (!strcmp(c, "btf-bomb"))
        case_btf_bomb();
    else if (!strcmp(c, "kmod-flood"))
        case_kmod_flood();
    else if (!strcmp(c, "kallsyms-bomb"))
        case_kallsyms_bomb();
    else if (!strcmp(c, "user-modules"))
        case_user_modules();
    else if (!strcmp(c, "pt-bomb"))
        case_pt_bomb();
    else if (!strcmp(c, "virtio-flood")) {
        case_virtio_flood();
        bss_lo = VBUF_PA;
        bss_hi = VBUF_PA + VBUF_BYTES;
    } else
        die("unknown case %s", c);
    write_elf(argv[2], bss_lo, bss_hi);
    return 0;
}
