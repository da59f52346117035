/* `hvprof --version`: the version and the commit it was built from, the build's type and
 * options, and the versions of the libraries it runs with (each asked at run time: what a bug
 * report needs when a distribution's library differs from the one built against). */
#include "cli/version.h"

#include <capstone/capstone.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <json-c/json_c_version.h>
#include <libqcow.h>
#include <protobuf-c/protobuf-c.h>
#include <seccomp.h>
#include <slirp/libslirp-version.h>
#include <slirp/libslirp.h>
#include <zlib.h>

#include "build_info.h"

void cli_print_version(FILE *out)
{
    fprintf(out, "hvprof %s\n", HVPROF_VERSION_STRING);
    fprintf(out, "  build: %s, %s\n", HVPROF_BUILD_TYPE, HVPROF_BUILD_OPTIONS);
    int cmaj = 0, cmin = 0;
    cs_version(&cmaj, &cmin);
    const struct scmp_version *sv = seccomp_version();
    fprintf(out,
            "  libraries: elfutils %s, capstone %d.%d, protobuf-c %s, zlib %s, json-c %s, "
            "libqcow %s, libslirp %s, libseccomp %u.%u.%u\n",
            dwfl_version(NULL), cmaj, cmin, protobuf_c_version(), zlibVersion(), json_c_version(),
            libqcow_get_version(), slirp_version_string(), sv ? sv->major : 0, sv ? sv->minor : 0,
            sv ? sv->micro : 0);
}
