/* Which container a process is in, from its cgroup v2 path as the guest kernel names it
 * (docs/containers.md): container engines give each container a cgroup of a name they choose,
 * and that name carries the container's id. The path alone is enough, so the recorder keeps
 * only the path and the report derives the rest.
 *
 *   engine (cgroup driver)        the container's cgroup, innermost component
 *   docker (systemd)              docker-<64 hex>.scope          (moby, cgroup driver systemd)
 *   docker (cgroupfs)             /docker/<64 hex>
 *   podman (systemd)              libpod-<64 hex>.scope          (conmon: libpod-conmon-<id>.scope)
 *   podman (cgroupfs)             /libpod_parent/libpod-<64 hex>
 *   CRI-O                         crio-<64 hex>.scope            (conmon: crio-conmon-<id>.scope)
 *   containerd's CRI (systemd)    cri-containerd-<64 hex>.scope
 *   Kubernetes, cgroupfs driver   /kubepods/<qos>/pod<uid>/<64 hex>
 *   systemd-nspawn                systemd-nspawn@<machine>.service, machine-<machine>.scope
 *   LXC 4 and later               lxc.payload.<name>             (earlier: /lxc/<name>)
 *
 * and a Kubernetes pod's cgroup, kubepods-<qos>-pod<uid>.slice (systemd: the uid's dashes as
 * underscores, since a dash in a slice name means nesting) or pod<uid> (cgroupfs), gives its pod.
 * The innermost container wins (a container inside a container is the inner one). A conmon
 * monitor's cgroup is the engine's, not the container's: it gives no container. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum container_engine {
    CT_NONE = 0,
    CT_DOCKER,
    CT_PODMAN,
    CT_CRIO,
    CT_CONTAINERD,
    CT_KUBERNETES, /* a pod's container under the cgroupfs driver: the engine does not say */
    CT_NSPAWN,
    CT_LXC,
};

#define CONTAINER_ID_MAX  64 /* a 64-hex id, or a machine name (machined: at most 64) */
#define CONTAINER_POD_MAX 36 /* a UID, 8-4-4-4-12 */

struct container_id {
    enum container_engine engine;
    char id[CONTAINER_ID_MAX + 1];       /* the full id, or the container's name; "" if none */
    char pod_uid[CONTAINER_POD_MAX + 1]; /* the Kubernetes pod's UID with dashes; "" if none */
};

/* Parse `path` (len bytes, need not be NUL-terminated; any bytes). True when it names a
 * container or a pod; *out cleared either way. */
bool container_from_cgroup(const char *path, size_t len, struct container_id *out);

/* "docker", "podman", "cri-o", "containerd", "kubernetes", "systemd-nspawn", "lxc"; "" for
 * CT_NONE. */
const char *container_engine_name(enum container_engine e);

/* The id as engines show it in their lists: the first 12 hex digits of a 64-hex id (docker
 * ps, podman ps, crictl ps), a name whole. Writes into buf (at least 13 bytes for an id);
 * returns buf. */
const char *container_short_id(const struct container_id *c, char *buf, size_t len);
