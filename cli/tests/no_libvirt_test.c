/* An hvprof built without libvirt says so when --libvirt is given (docs/libvirt.md): the
 * connection module compiled as such a build compiles it, whatever this build has. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "cli/libvirt_domain.h"

static void test_says_built_without(void **state)
{
    (void)state;
    struct hv_err err = {0};
    assert_null(libvirt_domain_xml("demo", "test:///default", NULL, &err));
    assert_string_equal(err.msg, "--libvirt: this hvprof was built without libvirt (install "
                                 "libvirt-dev and libxml2-dev, then configure and build again; "
                                 "docs/libvirt.md)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_says_built_without)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
