/* Tests that boot a guest need /dev/kvm. Without it they must not pass quietly: hv_need_kvm()
 * fails the calling test with the reason, unless HVPROF_ALLOW_NO_KVM=1 says this machine has no
 * KVM on purpose; then the whole test binary exits 77, which ctest reports as "Skipped"
 * (SKIP_RETURN_CODE, cmake/hvprof.cmake). hv_skip_binary() is that exit for other legitimate
 * reasons (e.g. no permission to mount a tmpfs), with the reason printed. */
#pragma once

#include <stdbool.h>

/* True if /dev/kvm opens read-write. */
bool hv_kvm_available(void);

/* Returns only if KVM is available; otherwise prints why and exits 1 (fail) or 77 (skip). */
void hv_need_kvm(const char *test);

/* Print "SKIPPED: <test>: <why>" and exit 77. */
_Noreturn void hv_skip_binary(const char *test, const char *why);
