/*
 * Helpers of the translator's unit tests:
 *   render()     a snapshot as the daemon's debug endpoint prints it (its
 *                groups, a newline, its reports); NULL on failure, else
 *                the caller frees
 *   load_yaml()  the documents of a YAML file under tests/data, as a cJSON
 *                array; NULL if unreadable
 */
#ifndef XLATE_TEST_H
#define XLATE_TEST_H

#include "cx_buf.h"
#include "cx_yaml.h"
#include "cxtest.h"
#include "xlate.h"
#include "xlate_render.h"

#include <stdlib.h>

static inline char *render(const struct xlate_snapshot *s)
{
    struct cx_buf b;
    cx_buf_init(&b, 0);
    int rc = xlate_render_groups(s, 0, &b);
    rc |= cx_buf_puts(&b, "\n");
    rc |= xlate_render_reports(s, 0, &b);
    if (rc != 0) {
        cx_buf_free(&b);
        return NULL;
    }
    return cx_buf_steal(&b, NULL);
}

static inline cJSON *load_yaml(const char *rel)
{
    size_t len;
    char *data = cxt_read_file(cxt_data_path(rel), &len);
    if (!data)
        return NULL;
    char err[200];
    cJSON *docs = cx_yaml_parse(data, len, err, sizeof(err));
    free(data);
    return docs;
}

#endif
