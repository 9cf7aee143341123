/*
 * ks_crd: CustomResourceDefinitions and the custom resources they serve,
 * and YAML bodies (server-side apply). Event loop only.
 */
#ifndef KS_CRD_H
#define KS_CRD_H

#include "ks_http.h"

/* Called after a CRD was created, updated or deleted (|deleted|): serves,
 * updates or stops serving its resources, and sets the CRD's status
 * (NamesAccepted, Established) with a follow-up write as the apiextensions
 * controllers do. |crd| is borrowed. */
void ks_crd_changed(struct ks_server *s, const cJSON *crd, bool deleted);

int ks_crd_validate(struct ks_server *s, cJSON *obj, const cJSON *old, struct ks_ferrs *fe,
                    char *err, size_t errlen);
/* Validates a custom resource against its CRD's openAPIV3Schema: prunes
 * unknown fields, applies defaults, checks types, required and enums. */
int ks_cr_validate(struct ks_server *s, struct ks_rtype *rt, cJSON *obj, const cJSON *old,
                   struct ks_ferrs *fe, char *err, size_t errlen);

/* Parses one YAML document into JSON (NULL on error). Caller frees. */
cJSON *ks_yaml_parse(const char *data, size_t len);

#endif
