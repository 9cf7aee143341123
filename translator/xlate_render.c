#include "xlate_render.h"

#include "cx_json.h"
#include "xlate_pbjson.h"
#include "xlate_snapshot.h"

#include <string.h>

const char *const xlate_render_type_keys[XDS_TYPE_COUNT] = {"listeners", "routes", "clusters",
                                                            "endpoints", "secrets"};

int xlate_render_indent(struct cx_buf *b, int depth)
{
    int rc = cx_buf_puts(b, "\n");
    for (int i = 0; i < depth && rc == 0; i++)
        rc = cx_buf_puts(b, "  ");
    return rc;
}

int xlate_render_kv_str(struct cx_buf *b, int depth, const char *k, const char *v, int last)
{
    int rc = xlate_render_indent(b, depth);
    rc |= cx_json_escape(b, k);
    rc |= cx_buf_puts(b, ": ");
    rc |= cx_json_escape(b, v ? v : "");
    if (!last)
        rc |= cx_buf_puts(b, ",");
    return rc ? -1 : 0;
}

int xlate_render_groups(const struct xlate_snapshot *s, int depth, struct cx_buf *out)
{
    return xlate_render_groups_flags(s, depth, 0, out);
}

int xlate_render_groups_flags(const struct xlate_snapshot *s, int depth, unsigned flags,
                              struct cx_buf *out)
{
    int rc = cx_buf_puts(out, "{");
    rc |= xlate_render_kv_str(out, depth + 1, "version", s->version, 0);
    rc |= xlate_render_indent(out, depth + 1);
    rc |= cx_buf_puts(out, "\"groups\": [");
    for (size_t g = 0; g < s->ngroups && rc == 0; g++) {
        const struct xlate_group *grp = &s->groups[g];
        rc |= cx_buf_puts(out, g ? "," : "");
        rc |= xlate_render_indent(out, depth + 2);
        rc |= cx_buf_puts(out, "{");
        rc |= xlate_render_kv_str(out, depth + 3, "name", grp->name, 0);
        rc |= xlate_render_kv_str(out, depth + 3, "mode",
                                  grp->mode == XLATE_MODE_PROXYLESS ? "proxyless" : "envoy", 0);
        for (int t = 0; t < XDS_TYPE_COUNT && rc == 0; t++) {
            const struct xds_resource_set *set = &grp->types[t];
            if (!xlate_group_type_shown(grp, t))
                continue;
            rc |= xlate_render_indent(out, depth + 3);
            rc |= cx_json_escape(out, xlate_render_type_keys[t]);
            rc |= cx_buf_puts(out, ": {");
            rc |= xlate_render_kv_str(out, depth + 4, "version", set->version, 0);
            rc |= xlate_render_indent(out, depth + 4);
            rc |= cx_buf_puts(out, "\"resources\": [");
            for (size_t i = 0; i < set->n && rc == 0; i++) {
                rc |= cx_buf_puts(out, i ? "," : "");
                rc |= xlate_render_indent(out, depth + 5);
                if (rc)
                    break;
                int r = xlate_pbjson_render_any(
                    xlate_type_url((enum xds_type)t), set->items[i]->bytes, set->items[i]->len,
                    flags | XLATE_PBJSON_PRETTY | XLATE_PBJSON_INDENT(depth + 5), out);
                if (r == XLATE_PBJSON_EDECODE)
                    return -2;
                rc |= r;
            }
            if (set->n)
                rc |= xlate_render_indent(out, depth + 4);
            rc |= cx_buf_puts(out, "]");
            rc |= xlate_render_indent(out, depth + 3);
            rc |= cx_buf_puts(out, t < xlate_group_last_type(grp) ? "}," : "}");
        }
        rc |= xlate_render_indent(out, depth + 2);
        rc |= cx_buf_puts(out, "}");
    }
    if (s->ngroups)
        rc |= xlate_render_indent(out, depth + 1);
    rc |= cx_buf_puts(out, "]");
    rc |= xlate_render_indent(out, depth);
    rc |= cx_buf_puts(out, "}");
    return rc ? -1 : 0;
}

int xlate_render_reports(const struct xlate_snapshot *s, int depth, struct cx_buf *out)
{
    int rc = cx_buf_puts(out, "[");
    for (size_t i = 0; i < s->nreports && rc == 0; i++) {
        const struct xlate_report *r = &s->reports[i];
        rc |= cx_buf_puts(out, i ? "," : "");
        rc |= xlate_render_indent(out, depth + 1);
        rc |= cx_buf_puts(out, "{");
        rc |= xlate_render_kv_str(out, depth + 2, "kind", r->kind, 0);
        rc |= xlate_render_kv_str(out, depth + 2, "namespace", r->namespace, 0);
        rc |= xlate_render_kv_str(out, depth + 2, "name", r->name, 0);
        rc |= xlate_render_kv_str(out, depth + 2, "state", xlate_state_name(r->state), 0);
        rc |= xlate_render_kv_str(out, depth + 2, "reason", r->reason, 0);
        rc |= xlate_render_kv_str(out, depth + 2, "message", r->message, 1);
        rc |= xlate_render_indent(out, depth + 1);
        rc |= cx_buf_puts(out, "}");
    }
    if (s->nreports)
        rc |= xlate_render_indent(out, depth);
    rc |= cx_buf_puts(out, "]");
    return rc ? -1 : 0;
}

void xlate_report_counts(const struct xlate_snapshot *s, size_t *accepted, size_t *warning,
                         size_t *rejected)
{
    *accepted = *warning = *rejected = 0;
    for (size_t i = 0; i < s->nreports; i++) {
        if (s->reports[i].state == XLATE_REJECTED)
            (*rejected)++;
        else if (s->reports[i].state == XLATE_WARNING)
            (*warning)++;
        else
            (*accepted)++;
    }
}
