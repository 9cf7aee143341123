/*
 * ks_proto: the Kubernetes protobuf encoding of a few kinds (Namespace,
 * ConfigMap, Secret, ServiceAccount, Role, ClusterRole, RoleBinding,
 * ClusterRoleBinding, PriorityClass, DeleteOptions) decoded to JSON, for
 * kubectl's typed generators and client-go's typed DELETE bodies.
 * Pure; any thread.
 */
#ifndef KS_PROTO_H
#define KS_PROTO_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Decodes a "k8s\0"-prefixed body. Returns the object (kind and apiVersion
 * set; caller frees) or NULL with a message in |err|. */
cJSON *ks_proto_decode(const void *body, size_t len, char *err, size_t errlen);

#endif
