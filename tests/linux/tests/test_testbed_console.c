/* The test bed's reading of a guest console (tests/linux/testbed.c, tb_each_line): the kernel
 * prints its messages straight to the UART between any two characters of what the guest's
 * programs write, and the programs' "HVTEST" lines must come out whole all the same. A unit test:
 * it needs no test bed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/linux/testbed.h"

struct lines {
    char v[16][256];
    unsigned n;
};

static void keep(const char *line, void *arg)
{
    struct lines *l = arg;
    assert_true(l->n < 16);
    snprintf(l->v[l->n++], sizeof(l->v[0]), "%s", line);
}

static void test_whole_lines_pass(void **state)
{
    (void)state;
    struct lines l = {0};
    tb_each_line("[    0.100000] Linux version 6.1\nHVTEST proc hv_busy pid=7 tid=7\nHVTEST done\n",
                 keep, &l);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.v[0], "[    0.100000] Linux version 6.1");
    assert_string_equal(l.v[1], "HVTEST proc hv_busy pid=7 tid=7");
    assert_string_equal(l.v[2], "HVTEST done");
}

/* What a clocksource watchdog's two lines do to a mapping line printed at that moment. */
static void test_kernel_message_inside_a_line(void **state)
{
    (void)state;
    struct lines l = {0};
    tb_each_line("HVTEST map 7 2000[   12.345678] clocksource: timekeeping watchdog on CPU0\n"
                 "[   12.345690] clocksource: 'tsc' is unstable\n"
                 "0000-20001000 /bin/hv_busy\n"
                 "HVTEST done\n",
                 keep, &l);
    assert_int_equal(l.n, 4);
    assert_string_equal(l.v[0], "[   12.345678] clocksource: timekeeping watchdog on CPU0");
    assert_string_equal(l.v[1], "[   12.345690] clocksource: 'tsc' is unstable");
    assert_string_equal(l.v[2], "HVTEST map 7 20000000-20001000 /bin/hv_busy");
    assert_string_equal(l.v[3], "HVTEST done");
}

/* A message just before a line's newline leaves an empty rest: the line is whole already. */
static void test_kernel_message_before_the_newline(void **state)
{
    (void)state;
    struct lines l = {0};
    tb_each_line("HVTEST done[    3.000000] reboot: Restarting system\n\n", keep, &l);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0], "[    3.000000] reboot: Restarting system");
    assert_string_equal(l.v[1], "HVTEST done");
}

/* A line that starts a new "HVTEST" is nobody's rest: the waiting part goes on its own. */
static void test_new_line_is_no_rest(void **state)
{
    (void)state;
    struct lines l = {0};
    tb_each_line("HVTEST proc a pid=1[    1.000000] x\nHVTEST done\n", keep, &l);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.v[1], "HVTEST proc a pid=1");
    assert_string_equal(l.v[2], "HVTEST done");
}

/* A bracket that is no time stamp ("[anon]", "[brd]") is part of the line. */
static void test_other_brackets_stay(void **state)
{
    (void)state;
    struct lines l = {0};
    tb_each_line(
        "HVTEST map 7 1000-2000 [anon]\nHVTEST kmodsym ffffffffc0453000 t brd_probe [brd]\n", keep,
        &l);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0], "HVTEST map 7 1000-2000 [anon]");
    assert_string_equal(l.v[1], "HVTEST kmodsym ffffffffc0453000 t brd_probe [brd]");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_lines_pass),
        cmocka_unit_test(test_kernel_message_inside_a_line),
        cmocka_unit_test(test_kernel_message_before_the_newline),
        cmocka_unit_test(test_new_line_is_no_rest),
        cmocka_unit_test(test_other_brackets_stay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
