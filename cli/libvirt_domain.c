#include "cli/libvirt_domain.h"

#include <stdlib.h>
#include <string.h>

#ifdef HVPROF_HAVE_LIBVIRT
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <libxml/uri.h>
#include <libxml/xmlerror.h>
#include <unistd.h>

/* libvirt prints every error to stderr unless told otherwise; hvprof says it once, itself. */
static void quiet(void *data, virErrorPtr e)
{
    (void)data;
    (void)e;
}

/* libxml2, which libvirt's test driver reads its file with, prints its own warnings too. */
static void quiet_xml(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

static const char *last_error(void)
{
    const char *m = virGetLastErrorMessage();
    return m && *m ? m : "unknown libvirt error";
}

/* The host a libvirt URI names ("" for this one: qemu:///system, test:///...). */
static void uri_host(const char *u, char *out, size_t len)
{
    out[0] = 0;
    xmlURIPtr x = u ? xmlParseURI(u) : NULL;
    if (x && x->server)
        snprintf(out, len, "%s", x->server);
    if (x)
        xmlFreeURI(x);
}

static bool this_host(const char *h)
{
    char self[256] = "";
    gethostname(self, sizeof(self) - 1);
    return !h[0] || !strcmp(h, "localhost") || !strcmp(h, "127.0.0.1") || !strcmp(h, "::1") ||
           !strcmp(h, self);
}

char *libvirt_domain_xml(const char *domain, const char *uri, bool *active, struct hv_err *err)
{
    if (active)
        *active = false;
    virSetErrorFunc(NULL, quiet);
    xmlSetGenericErrorFunc(NULL, quiet_xml);
    /* A remote libvirt's disk paths are files on that host: opened here they would be this
     * host's files of the same names (docs/security.md, "libvirt"). Judged on the URI given
     * (nothing is connected to), then on the one libvirt resolved (LIBVIRT_DEFAULT_URI,
     * aliases). */
    char host[256];
    uri_host(uri, host, sizeof(host));
    virConnectPtr conn = this_host(host) ? virConnectOpenReadOnly(uri) : NULL;
    if (conn && !host[0]) {
        char *canon = virConnectGetURI(conn);
        uri_host(canon, host, sizeof(host));
        free(canon);
        if (!this_host(host)) {
            virConnectClose(conn);
            conn = NULL;
        }
    }
    if (!this_host(host)) {
        hv_errk(err, HV_ERR_USAGE,
                "--connect %s: a libvirt on another host (%s): its domains' disks are files "
                "there, not here; run hvprof on %s, or copy the disks here and give --disk",
                uri ? uri : "(libvirt's default)", host, host);
        return NULL;
    }
    if (!conn) {
        hv_errf(err, "--connect %s: %s", uri ? uri : "(libvirt's default)", last_error());
        return NULL;
    }
    virDomainPtr dom = virDomainLookupByName(conn, domain);
    if (!dom)
        dom = virDomainLookupByUUIDString(conn, domain);
    char *xml = NULL;
    if (!dom) {
        hv_errf(err, "--libvirt: no domain '%.128s' on %s", domain,
                uri ? uri : "libvirt's default connection");
    } else {
        /* The definition as it stands: a running domain's live XML, else its persistent one. */
        char *x = virDomainGetXMLDesc(dom, 0);
        if (!x)
            hv_errf(err, "--libvirt %.128s: %s", domain, last_error());
        else if (!(xml = strdup(x)))
            hv_errk(err, HV_ERR_NO_MEMORY, "out of memory");
        free(x); /* libvirt's own allocation */
        /* -1 (cannot tell) counts as running: a disk is never shared by accident. */
        if (active)
            *active = virDomainIsActive(dom) != 0;
        virDomainFree(dom);
    }
    virConnectClose(conn);
    return xml;
}
#else
char *libvirt_domain_xml(const char *domain, const char *uri, bool *active, struct hv_err *err)
{
    (void)domain;
    (void)uri;
    (void)active;
    hv_errf(err, "--libvirt: this hvprof was built without libvirt (install libvirt-dev and "
                 "libxml2-dev, then configure and build again; docs/libvirt.md)");
    return NULL;
}
#endif
