/*
 * xlate_pbjson: proto3 JSON for protobuf-c messages, driven by descriptors.
 *
 * Renders any message the way the proto3 JSON mapping says
 * (https://protobuf.dev/programming-guides/proto3/#json): lowerCamelCase
 * field names (or the original snake_case names on request), enums as their
 * names, 64-bit integers as strings, bytes as base64, and the well-known types
 * in their special forms (Any with "@type", Duration "1.5s", Timestamp
 * RFC 3339, wrappers as bare values, Struct/Value/ListValue as JSON, Empty as
 * {}). Any payloads are decoded by looking their type URL up in the table of
 * every message coxswain compiles (api/proto and the well-known types).
 *
 * Secrets stay secret: fields Envoy marks (udpa.annotations.sensitive) — a
 * TlsCertificate's private_key and password — are rendered with every string
 * and bytes value inside replaced by "[redacted]" (as Envoy's own config dump
 * does), unless XLATE_PBJSON_SHOW_SECRETS is given. Every JSON surface (REST
 * xDS, /debug/snapshot, ProxySnapshots, `coxswain translate`) goes through
 * here, so none of them shows a private key by default.
 *
 * Output is deterministic: fields in field-number order, map entries sorted by
 * key, floating point in its shortest round-trip form. Fields holding their
 * proto3 default are left out, except oneof members, which are always shown
 * when set (an empty route prefix is meaningful).
 *
 * Used by the xDS server (REST-JSON responses), by `coxswain translate` and by
 * the translator's golden tests. Thread-safe: no state.
 */
#ifndef XLATE_PBJSON_H
#define XLATE_PBJSON_H

#include "cx_buf.h"

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

enum xlate_pbjson_flags {
    XLATE_PBJSON_PRETTY = 1 << 0,       /* newlines and two-space indents */
    XLATE_PBJSON_PROTO_NAMES = 1 << 1,  /* snake_case field names as in the .proto */
    XLATE_PBJSON_SHOW_SECRETS = 1 << 2, /* do not redact sensitive fields (private keys) */
};

/* What a redacted string or bytes value reads as. */
#define XLATE_PBJSON_REDACTED "[redacted]"

/* 1 if field |field| of message |msg_full_name| holds secrets (rendered
 * redacted unless XLATE_PBJSON_SHOW_SECRETS). */
int xlate_pbjson_sensitive(const char *msg_full_name, const char *field);

/* With XLATE_PBJSON_PRETTY: indent as if the message sat |n| levels deep in an
 * enclosing document (OR it into the flags). */
#define XLATE_PBJSON_INDENT(n) ((unsigned)(n) << 8)

/* Errors (negative returns). */
#define XLATE_PBJSON_ENOMEM  (-1) /* out of memory or |out|'s cap reached */
#define XLATE_PBJSON_EDECODE (-2) /* an Any holds an unknown type or bytes that do not parse */
#define XLATE_PBJSON_EDEPTH  (-3) /* nesting deeper than XLATE_PBJSON_MAX_DEPTH */

/* Nesting cap: a hostile Any chain or Struct cannot recurse without bound. */
#define XLATE_PBJSON_MAX_DEPTH 64

/* Appends the JSON of |msg| (flags: enum xlate_pbjson_flags). Returns 0 or one
 * of XLATE_PBJSON_E*; on error |out| may hold a partial document. */
__attribute__((warn_unused_result)) int xlate_pbjson_render(const ProtobufCMessage *msg,
                                                            unsigned flags, struct cx_buf *out);

/* Decodes |len| bytes as a |desc| message and appends its JSON. Returns 0 or
 * one of XLATE_PBJSON_E*. */
__attribute__((warn_unused_result)) int
xlate_pbjson_render_bytes(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                          unsigned flags, struct cx_buf *out);

/* Appends the JSON of a google.protobuf.Any made of |type_url| and |len|
 * bytes ({"@type": type_url, ...fields}). Returns 0 or one of XLATE_PBJSON_E*. */
__attribute__((warn_unused_result)) int xlate_pbjson_render_any(const char *type_url,
                                                                const uint8_t *data, size_t len,
                                                                unsigned flags, struct cx_buf *out);

/* Finds a message descriptor by type URL ("type.googleapis.com/x.y.Z") or
 * full name ("x.y.Z"); NULL if coxswain does not compile that message. */
const ProtobufCMessageDescriptor *xlate_pbjson_find_type(const char *type_url);

/* The lowerCamelCase JSON name of a proto field name ("route_config_name" ->
 * "routeConfigName"), written into |out| (|outlen| bytes, truncated). */
void xlate_pbjson_json_name(const char *proto_name, char *out, size_t outlen);

#endif
