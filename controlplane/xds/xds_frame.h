/*
 * xds_frame: gRPC length-prefixed message framing, I/O-free.
 *
 * A gRPC message on the wire is 1 flag byte (0 = identity, 1 = compressed),
 * a 4-byte big-endian length and the bytes. HTTP/2 DATA frames do not align
 * with messages, so the deframer reassembles across chunks; a message above
 * the cap is refused before any of its body is buffered. Single-threaded:
 * one deframer per stream.
 */
#ifndef XDS_FRAME_H
#define XDS_FRAME_H

#include "xds_types.h"

/* Called once per complete message; |msg| is valid during the call only.
 * A non-zero return stops xds_deframer_feed(), which returns that value. */
typedef int (*xds_deframe_cb)(void *user, const uint8_t *msg, size_t len);

/* Initialises |d| for messages of at most |max| bytes. */
void xds_deframer_init(struct xds_deframer *d, size_t max);

/* Feeds |len| bytes. Calls |cb| for each complete message (without copying
 * when a message lies whole in |data|). Returns 0, a negative
 * enum xds_deframe_err (the deframer then refuses all further input), or the
 * first non-zero value |cb| returned. */
__attribute__((warn_unused_result)) int xds_deframer_feed(struct xds_deframer *d,
                                                          const uint8_t *data, size_t len,
                                                          xds_deframe_cb cb, void *user);

/* True if a message is partly received (a half-closed stream ending here
 * was cut short). */
int xds_deframer_partial(const struct xds_deframer *d);

/* Charges the bodies |d| buffers (their declared length, from the first
 * byte held until delivery) to |global| and |conn| (either may be NULL);
 * a body that does not fit ends the stream with XDS_DEFRAME_BUDGET. */
void xds_deframer_set_budget(struct xds_deframer *d, struct xds_budget *global,
                             struct xds_budget *conn);

/* Frees the partial body (and gives back its charge). */
void xds_deframer_free(struct xds_deframer *d);

/* Writes the 5-byte prefix of an uncompressed message of |len| bytes. */
void xds_frame_prefix(uint8_t out[5], uint32_t len);

#endif
