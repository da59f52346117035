/* What the JSON writers share (report_json.c, report_diff_json.c): the documents' version
 * (docs/json.md; a change that removes or renames a key raises it) and string escaping. */
#pragma once

#include <stddef.h>
#include <stdio.h>

#define REPORT_JSON_VERSION 1

/* A JSON string (RFC 8259 section 7): quotes and backslashes escaped, control characters as
 * \u00XX, bytes outside ASCII as '?' (names are not guaranteed UTF-8). */
void report_json_str(FILE *out, const char *s);
void report_json_strn(FILE *out, const char *s, size_t n);
