/* boot_menu.c on menus as distributions write them: Debian 12's grub.cfg (grub-mkconfig's
 * 00_header and 10_linux output: functions, `if` blocks, $menuentry_id_option, a submenu),
 * Fedora's grub.cfg with blscfg and its BLS entries and grubenv, Ubuntu's saved default, and
 * hostile text (unterminated quotes and blocks, deep nesting, overlong words). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/files.h"
#include "diskfs/boot_menu.h"

static char *data_file(const char *name, size_t *len)
{
    char path[1024];
    const char *src = getenv("HVPROF_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s/diskfs/tests/data/%s", src ? src : ".", name);
    uint8_t *buf;
    struct hv_err err;
    if (hv_read_file(path, 1u << 20, &buf, len, &err) < 0)
        fail_msg("%s", err.msg);
    return (char *)buf;
}

static struct boot_menu *menu(void)
{
    struct boot_menu *m = malloc(sizeof(*m));
    assert_non_null(m);
    return m;
}

static const char *UUID = "0b9bb8a6-3f5e-4c1d-9a2e-7d1c5e8f4a21";

static void test_debian(void **state)
{
    (void)state;
    size_t len;
    char *cfg = data_file("debian12-grub.cfg", &len);
    struct boot_menu *m = menu();
    boot_menu_init(m, NULL, 0);
    boot_menu_parse_grub(m, cfg, len);
    /* The entry, the submenu with its two, the firmware entry (inside an `if`). */
    assert_int_equal(m->n, 5);
    assert_int_equal(m->top, 3);
    assert_string_equal(m->deflt, "0");
    const struct boot_menu_entry *e = &m->e[0];
    assert_string_equal(e->title, "Debian GNU/Linux");
    assert_string_equal(e->id, "gnulinux-simple-0b9bb8a6-3f5e-4c1d-9a2e-7d1c5e8f4a21");
    assert_string_equal(e->path, "0");
    assert_string_equal(e->kernel, "/boot/vmlinuz-6.1.0-28-cloud-amd64");
    assert_string_equal(e->options,
                        "root=PARTUUID=5c4d4a0e-5a5e-4b4e-9d2c-2f5f0f6e7d11 ro console=tty0 "
                        "console=ttyS0,115200 earlyprintk=ttyS0,115200 consoleblank=0");
    assert_int_equal(e->ninitrd, 1);
    assert_string_equal(e->initrd[0], "/boot/initrd.img-6.1.0-28-cloud-amd64");
    assert_string_equal(e->fs_uuid, UUID);
    assert_string_equal(m->e[1].title, "Advanced options for Debian GNU/Linux");
    assert_string_equal(m->e[1].path, "1");
    assert_string_equal(m->e[1].kernel, "");
    assert_string_equal(m->e[2].path, "1>0");
    assert_string_equal(m->e[3].path, "1>1");
    assert_string_equal(m->e[3].kernel, "/boot/vmlinuz-6.1.0-27-cloud-amd64");
    assert_string_equal(m->e[4].title, "UEFI Firmware Settings");
    assert_string_equal(m->e[4].path, "2");

    char why[256];
    assert_int_equal(boot_menu_choose(m, NULL, why, sizeof(why)), 0);
    /* Chosen as GRUB's `default` and --boot-entry take them: positions, titles, ids. */
    assert_int_equal(boot_menu_choose(m, "1>1", why, sizeof(why)), 3);
    assert_int_equal(boot_menu_choose(m, "1", why, sizeof(why)), 2); /* a submenu: its first */
    assert_int_equal(boot_menu_choose(m,
                                      "Advanced options for Debian GNU/Linux>"
                                      "Debian GNU/Linux, with Linux 6.1.0-27-cloud-amd64",
                                      why, sizeof(why)),
                     3);
    assert_int_equal(boot_menu_choose(m,
                                      "gnulinux-6.1.0-27-cloud-amd64-advanced-"
                                      "0b9bb8a6-3f5e-4c1d-9a2e-7d1c5e8f4a21",
                                      why, sizeof(why)),
                     3);
    assert_int_equal(boot_menu_choose(m, "2", why, sizeof(why)), -1);
    assert_string_equal(why, "menu entry 'UEFI Firmware Settings' loads no Linux kernel (no linux "
                             "command)");
    assert_int_equal(boot_menu_choose(m, "7", why, sizeof(why)), -1);
    assert_string_equal(why, "no menu entry '7'");

    /* A one-time next_entry from grubenv: `set default="${next_entry}"` then the else branch's
     * `set default="0"` (the `if` is not run): the later one wins, as documented. */
    const char env[] = "# GRUB Environment Block\nsaved_entry=1>1\n#########";
    boot_menu_init(m, env, sizeof(env) - 1);
    assert_string_equal(m->saved, "1>1");
    boot_menu_parse_grub(m, cfg, len);
    assert_int_equal(boot_menu_choose(m, NULL, why, sizeof(why)), 0);
    free(cfg);
    free(m);
}

/* Ubuntu with GRUB_DEFAULT=saved: default is ${saved_entry}, grubenv holds it. */
static void test_saved_default(void **state)
{
    (void)state;
    static const char cfg[] =
        "if [ \"${next_entry}\" ] ; then\n   set default=\"${next_entry}\"\nelse\n"
        "   set default=\"${saved_entry}\"\nfi\n"
        "menuentry 'Ubuntu' --id ubuntu {\n  linux /boot/vmlinuz root=LABEL=cloudimg-rootfs ro\n"
        "  initrd /boot/initrd.img\n}\n"
        "menuentry \"Ubuntu (old)\" --id 'ubuntu-old' {\n  linux (hd0,gpt1)/boot/vmlinuz.old "
        "root=LABEL=cloudimg-rootfs ro\n  initrd /boot/microcode.cpio /boot/initrd.img.old\n}\n";
    static const char env[] = "# GRUB Environment Block\nsaved_entry=ubuntu-old\n";
    struct boot_menu *m = menu();
    boot_menu_init(m, env, sizeof(env) - 1);
    boot_menu_parse_grub(m, cfg, sizeof(cfg) - 1);
    assert_int_equal(m->n, 2);
    assert_string_equal(m->deflt, "ubuntu-old");
    char why[256];
    int i = boot_menu_choose(m, NULL, why, sizeof(why));
    assert_int_equal(i, 1);
    assert_string_equal(m->e[1].kernel, "/boot/vmlinuz.old"); /* device prefix dropped */
    assert_int_equal(m->e[1].ninitrd, 2);
    assert_string_equal(m->e[1].initrd[0], "/boot/microcode.cpio");
    assert_string_equal(m->e[1].initrd[1], "/boot/initrd.img.old");
    /* The saved entry gone: GRUB's fallback, the first. */
    boot_menu_init(m, "saved_entry=removed\n", 20);
    boot_menu_parse_grub(m, cfg, sizeof(cfg) - 1);
    assert_int_equal(boot_menu_choose(m, NULL, why, sizeof(why)), 0);
    free(m);
}

/* Fedora: grub.cfg runs blscfg; the entries are BLS files on /boot; grubenv's saved_entry
 * names one by file name; older entries take their options from grubenv's kernelopts. */
static void test_fedora_bls(void **state)
{
    (void)state;
    static const char cfg[] =
        "set pager=1\nif [ -f ${config_directory}/grubenv ]; then\n  load_env -f "
        "${config_directory}/grubenv\nelif [ -s $prefix/grubenv ]; then\n  load_env\nfi\n"
        "if [ \"${next_entry}\" ] ; then\n   set default=\"${next_entry}\"\n   set next_entry=\n"
        "   save_env next_entry\n   set boot_once=true\nelse\n   set "
        "default=\"${saved_entry}\"\nfi\n"
        "insmod blscfg\nblscfg\n"
        "menuentry 'UEFI Firmware Settings' $menuentry_id_option 'uefi-firmware' {\n"
        "\tfwsetup\n}\n";
    static const char new_e[] =
        "title Fedora Linux (6.11.4-301.fc41.x86_64) 41 (Cloud Edition)\n"
        "version 6.11.4-301.fc41.x86_64\nlinux /vmlinuz-6.11.4-301.fc41.x86_64\n"
        "initrd /initramfs-6.11.4-301.fc41.x86_64.img\n"
        "options root=UUID=3d1f rootflags=subvol=root ro no_timer_check console=ttyS0,115200n8\n"
        "grub_users $grub_users\ngrub_arg --unrestricted\ngrub_class fedora\n";
    static const char old_e[] =
        "title Fedora Linux (6.9.7-200.fc40.x86_64) 40\nversion 6.9.7-200.fc40.x86_64\n"
        "linux /vmlinuz-6.9.7-200.fc40.x86_64\ninitrd /initramfs-6.9.7-200.fc40.x86_64.img\n"
        "options $kernelopts systemd.unified_cgroup_hierarchy=1\n";
    static const char efi_e[] = "title An EFI program\nefi /EFI/tool.efi\n";
    static const char env[] = "# GRUB Environment Block\nkernelopts=root=UUID=3d1f ro quiet\n"
                              "saved_entry=\n";
    struct boot_menu *m = menu();
    boot_menu_init(m, env, sizeof(env) - 1);
    boot_menu_parse_grub(m, cfg, sizeof(cfg) - 1);
    assert_true(m->blscfg);
    boot_menu_parse_bls(m, "0f3a-6.9.7-200.fc40.x86_64.conf", old_e, sizeof(old_e) - 1);
    boot_menu_parse_bls(m, "0f3a-6.11.4-301.fc41.x86_64.conf", new_e, sizeof(new_e) - 1);
    boot_menu_parse_bls(m, "tool.conf", efi_e, sizeof(efi_e) - 1);
    boot_menu_sort_bls(m);
    assert_int_equal(m->n, 3); /* the EFI program's entry is no Linux kernel */
    /* Newest version first (6.11 after 6.9 by version, not by bytes); then GRUB's own. */
    assert_string_equal(m->e[0].id, "0f3a-6.11.4-301.fc41.x86_64");
    assert_string_equal(m->e[0].path, "0");
    assert_string_equal(m->e[1].id, "0f3a-6.9.7-200.fc40.x86_64");
    assert_string_equal(m->e[1].options,
                        "root=UUID=3d1f ro quiet systemd.unified_cgroup_hierarchy=1");
    assert_string_equal(m->e[2].title, "UEFI Firmware Settings");
    assert_string_equal(m->e[2].path, "2");
    char why[256];
    assert_int_equal(boot_menu_choose(m, NULL, why, sizeof(why)), 0);
    assert_int_equal(boot_menu_choose(m, "0f3a-6.9.7-200.fc40.x86_64", why, sizeof(why)), 1);
    /* saved_entry names the older one. */
    static const char env2[] = "saved_entry=0f3a-6.9.7-200.fc40.x86_64\n";
    boot_menu_init(m, env2, sizeof(env2) - 1);
    boot_menu_parse_grub(m, cfg, sizeof(cfg) - 1);
    boot_menu_parse_bls(m, "0f3a-6.11.4-301.fc41.x86_64.conf", new_e, sizeof(new_e) - 1);
    boot_menu_parse_bls(m, "0f3a-6.9.7-200.fc40.x86_64.conf", old_e, sizeof(old_e) - 1);
    boot_menu_sort_bls(m);
    assert_int_equal(boot_menu_choose(m, NULL, why, sizeof(why)), 1);
    free(m);
}

/* Text no boot loader wrote: nothing read past its end, nothing unbounded kept. */
static void test_hostile(void **state)
{
    (void)state;
    struct boot_menu *m = menu();
    char why[256];
    static const char *const texts[] = {
        "menuentry 'x {\n linux /a\n",    /* an unterminated quote */
        "menuentry x {\n linux /a b c\n", /* an unterminated block */
        "} }\nmenuentry y { linux /k }",  /* stray closes, a one-line block */
        "set default=\"${",               /* a cut variable */
        "menuentry $ { linux \\",         /* a lone '$', a trailing backslash */
        "submenu a { submenu b { submenu c { submenu d { submenu e { menuentry f { linux /x } } } "
        "} } }",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        boot_menu_init(m, NULL, 0);
        boot_menu_parse_grub(m, texts[i], strlen(texts[i]));
        assert_true(m->n <= BOOT_MENU_MAX);
        (void)boot_menu_choose(m, NULL, why, sizeof(why));
    }
    boot_menu_init(m, NULL, 0);
    boot_menu_parse_grub(m, texts[2], strlen(texts[2]));
    assert_int_equal(m->n, 1);
    assert_string_equal(m->e[0].kernel, "/k");
    /* Deeper than BOOT_MENU_MAX_DEPTH: the innermost are skipped, not followed. */
    boot_menu_init(m, NULL, 0);
    boot_menu_parse_grub(m, texts[5], strlen(texts[5]));
    assert_int_equal(m->n, 4);
    assert_int_equal(boot_menu_choose(m, NULL, why, sizeof(why)), -1);
    /* More entries than BOOT_MENU_MAX, a word longer than a command's buffer. */
    size_t cap = 200 * 40 + 20000;
    char *big = malloc(cap);
    size_t at = 0;
    for (int i = 0; i < 200; i++)
        at += (size_t)snprintf(big + at, cap - at, "menuentry e%d { linux /k%d }\n", i, i);
    at += (size_t)snprintf(big + at, cap - at, "menuentry long { linux /");
    memset(big + at, 'a', 12000);
    at += 12000;
    boot_menu_init(m, NULL, 0);
    boot_menu_parse_grub(m, big, at);
    assert_int_equal(m->n, BOOT_MENU_MAX);
    assert_string_equal(m->e[63].kernel, "/k63");
    free(big);
    /* No entries at all. */
    boot_menu_init(m, NULL, 0);
    boot_menu_parse_grub(m, "set timeout=5\n", 14);
    assert_int_equal(boot_menu_choose(m, NULL, why, sizeof(why)), -1);
    assert_string_equal(why, "no menu entry that loads a Linux kernel");
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_debian),
        cmocka_unit_test(test_saved_default),
        cmocka_unit_test(test_fedora_bls),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
