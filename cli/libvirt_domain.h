/* A libvirt domain's definition, fetched through the libvirt API (virConnectOpenReadOnly,
 * virDomainLookupByName, virDomainGetXMLDesc): any URI libvirt knows, qemu:///system on a VM
 * host or test:///FILE (libvirt's test driver, which defines domains from a file without a
 * daemon). Built only when libvirt was found at configure time (HVPROF_HAVE_LIBVIRT); otherwise
 * it says so. */
#pragma once

#include <stdbool.h>

#include "common/err.h"

/* The domain named (or with the UUID) `domain` on `uri` (NULL: libvirt's default connection),
 * as malloc'd XML text; NULL with a message. *active: whether libvirt reports it running (a VM
 * that writes its disks at this moment; virDomainIsActive), if not NULL. */
char *libvirt_domain_xml(const char *domain, const char *uri, bool *active, struct hv_err *err);
