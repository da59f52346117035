/* Demangling real symbols: OpenJDK's libjvm.so (C++), Rust's legacy and v0 forms (RFC 2603's
 * examples), C names left alone, and the short form the flame graph and tables print. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "symbolize/demangle.h"

static void expect(const char *mangled, const char *want)
{
    char *got = hv_demangle(mangled);
    if (!want) {
        if (got)
            fail_msg("%s demangled to '%s', expected it left alone", mangled, got);
        return;
    }
    if (!got || strcmp(got, want))
        fail_msg("%s: '%s', expected '%s'", mangled, got ? got : "(not demangled)", want);
    free(got);
}

static void test_demangle(void **state)
{
    (void)state;
    /* libjvm.so of OpenJDK 17 (Debian 12), as a profile of a JVM shows them mangled today. */
    expect(
        "_ZN9JavaCalls11call_helperEP9JavaValueRK12methodHandleP17JavaCallArgumentsP10JavaThread",
        "JavaCalls::call_helper(JavaValue*, methodHandle const&, JavaCallArguments*, "
        "JavaThread*)");
    expect("_ZL19thread_native_entryP6Thread", "thread_native_entry(Thread*)");
    expect("_ZNKSt8functionIFviEEclEi", "std::function<void (int)>::operator()(int) const");
    expect("_Z1fv.cold", "f() [clone .cold]");
    /* Rust: legacy (an Itanium name with a hash) and v0. */
    expect("_ZN3foo3bar17h05af221e174051e9E", "foo::bar");
    expect("_RNvCskwGfYPst2Cb_3foo16example_function", "foo::example_function");
    /* C names and garbage stay as they are. */
    expect("main", NULL);
    expect("_start", NULL);
    expect("_Zgarbage", NULL);
    expect("__libc_start_main", NULL);
}

static void expect_short(const char *name, const char *want)
{
    size_t n = hv_demangled_short_len(name);
    if (n != strlen(want) || strncmp(name, want, n))
        fail_msg("short form of '%s': '%.*s', expected '%s'", name, (int)n, name, want);
}

static void test_short(void **state)
{
    (void)state;
    expect_short("JavaCalls::call_helper(JavaValue*, methodHandle const&, JavaCallArguments*, "
                 "JavaThread*)",
                 "JavaCalls::call_helper");
    expect_short("std::function<void (int)>::operator()(int) const",
                 "std::function<void (int)>::operator()");
    expect_short("main::{lambda()#1}::operator()() const", "main::{lambda()#1}::operator()");
    expect_short("f() [clone .cold]", "f");
    expect_short("main", "main");
    expect_short("libc.so.6+0x1098ec", "libc.so.6+0x1098ec");
    expect_short("odd)", "odd)");
    expect_short("(x)", "(x)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demangle),
        cmocka_unit_test(test_short),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
