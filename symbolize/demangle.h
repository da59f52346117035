/* C++ and Rust symbol names as people read them: `_ZN9JavaCalls11call_helperEP9JavaValue...`
 * becomes `JavaCalls::call_helper(JavaValue*, ...)`, Rust's legacy and v0 names their paths,
 * through binutils' libiberty (the demangler gdb, perf and c++filt use; Debian libiberty-dev).
 * And the short form flame graphs and tables print: the name without its parameter list. */
#pragma once

#include <stddef.h>

/* The demangled name, malloc'd (the caller frees), or NULL when `name` is not a mangled C++
 * (_Z...) or Rust (_R..., legacy _ZN...17h<hash>E) symbol or does not demangle. */
char *hv_demangle(const char *name);

/* The length of `name` without a demangled parameter list and its qualifiers:
 * "ns::f(int) const" -> 5 ("ns::f"), "S::operator()(int)" -> "S::operator()"; a clone suffix
 * (" [clone .cold]") is dropped too. The whole length for any other name. */
size_t hv_demangled_short_len(const char *name);
