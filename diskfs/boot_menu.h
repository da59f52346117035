/* A disk's boot menu, read as its boot loader would (docs/disk-boot.md): GRUB's grub.cfg (the
 * commands that make a menu: menuentry, submenu, linux, initrd, search --fs-uuid, set, and the
 * variables they use) and Boot Loader Specification Type #1 entries (uapi-group.org's
 * boot-loader-specification: the .conf files of loader/entries, keys title, version, sort-key,
 * linux, initrd, options). Text only: no file system here, so the parser is fuzzed on its own
 * (fuzz_diskfs_boot_menu). Everything is bounded: at most BOOT_MENU_MAX entries, fields
 * truncated at their sizes, submenus BOOT_MENU_MAX_DEPTH deep. GRUB's script language is not
 * run: `if` conditions are not evaluated (docs/disk-boot.md says what follows from that). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define BOOT_MENU_MAX         64
#define BOOT_MENU_MAX_INITRDS 4
#define BOOT_MENU_MAX_DEPTH   4
#define BOOT_MENU_PATH        256
#define BOOT_MENU_OPTIONS     2048

struct boot_menu_entry {
    char title[128];
    char id[128];  /* GRUB's --id, a BLS entry's file name without ".conf" */
    char path[32]; /* GRUB's menu position: "0", "2>1" (a submenu's second entry) */
    char kernel[BOOT_MENU_PATH];
    char initrd[BOOT_MENU_MAX_INITRDS][BOOT_MENU_PATH];
    unsigned ninitrd;
    char options[BOOT_MENU_OPTIONS];
    char fs_uuid[64]; /* GRUB's `search --fs-uuid --set=root`: where the paths are; "" if none */
    char version[64], sort_key[64]; /* BLS */
    bool bls;
};

struct boot_menu {
    struct boot_menu_entry e[BOOT_MENU_MAX];
    unsigned n;
    unsigned top;                       /* GRUB: items at the menu's top level (a submenu is one) */
    char deflt[128];                    /* GRUB's `default`, expanded; "" if never set */
    bool blscfg;                        /* grub.cfg runs `blscfg`: its menu is the BLS entries */
    char saved[128];                    /* grubenv's saved_entry */
    char kernelopts[BOOT_MENU_OPTIONS]; /* grubenv's kernelopts (older Fedora's BLS options) */
};

/* Start a menu; `grubenv` (GRUB's environment block, may be NULL) gives variables such as
 * saved_entry and kernelopts. */
void boot_menu_init(struct boot_menu *m, const char *grubenv, size_t len);

/* Add grub.cfg's entries. */
void boot_menu_parse_grub(struct boot_menu *m, const char *text, size_t len);

/* Add one BLS entry (`name`: its file name). Entries without `linux` (EFI programs) are not
 * added. Call boot_menu_sort_bls after the last. */
void boot_menu_parse_bls(struct boot_menu *m, const char *name, const char *text, size_t len);
/* Order the BLS entries as the specification does: by sort-key, then version (newest first),
 * then file name (newest first). */
void boot_menu_sort_bls(struct boot_menu *m);

/* The entry to boot: `want` (--boot-entry: a position such as "0" or "1>2", a title or an id)
 * if given, else the menu's default (GRUB's `default`, or a BLS menu's saved_entry, else its
 * first entry). -1 when there is none or `want` names none; *why says which. */
int boot_menu_choose(const struct boot_menu *m, const char *want, char *why, size_t len);
