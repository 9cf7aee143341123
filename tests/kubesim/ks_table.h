/*
 * ks_table: `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, what
 * kubectl get asks for. Custom resources print their CRD version's
 * additionalPrinterColumns (apiextensions-apiserver's
 * registry/customresource/tableconvertor), or Age when it has none
 * (crdHandler's serveDefaultColumnsIfEmpty); CRDs use the generic
 * Name/Created At convertor (apiserver/pkg/registry/rest/table.go);
 * Endpoints print Name, Endpoints, Age as printEndpoints does.
 * Other built-in kinds are not negotiated (clients then get plain lists). Rows
 * carry the object as includeObject says. Event loop only.
 */
#ifndef KS_TABLE_H
#define KS_TABLE_H

#include "ks_form.h"

/* One row's object: |v| may be NULL (an object not in the store). */
struct ks_table_row {
    struct ks_ver *v;
    const cJSON *obj;
};

/* Does kubesim print |rt| as a Table? */
bool ks_table_supported(const struct ks_rtype *rt);

/* Replies with a Table of |rows| (|lm| the list metadata when |list|). */
void ks_table_reply(struct ks_req *r, int code, const struct ks_listmeta *lm,
                    const struct ks_table_row *rows, size_t n, bool list);

/* The object of one watch event as a Table (columns on the first event of
 * the watch only). New reference, NULL when memory ran out. */
struct ks_blob *ks_table_event_object(struct ks_req *r, struct ks_ver *v);

#endif
