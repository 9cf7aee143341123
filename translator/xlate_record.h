/*
 * xlate_record: an object in the form the translator reads — decoded once,
 * when it arrives, from its JSON into the typed per-kind record of
 * xlate_api_types.h (struct xl_object), with its change digest and its
 * "namespace/name" key. Every string and array of the record lives in one
 * arena owned by the record (the record's header too), so the JSON can be
 * freed right after the decode: about 0.8 KB per object of the benchmark
 * world (bench/bench_translator.c) where its cJSON tree takes about 5 KB.
 *
 * Immutable once built and refcounted (atomic): a store and the
 * translator's context can hold references to the same record, on
 * different threads, without copies or locks. The functions are declared in
 * xlate.h and defined in xlate_entry.c.
 */
#ifndef XLATE_RECORD_H
#define XLATE_RECORD_H

#include "xlate_api_types.h"
#include "xlate_util.h"

#include <stdatomic.h>

struct xl_chunk;

/* Laid out tight (48 bytes before obj): one per input object. */
struct xlate_record {
    atomic_int refs;
    enum xlate_kind kind;
    enum xlate_state parse_state; /* from obj.errors */
    uint32_t keylen;
    uint64_t digest;         /* never 0 */
    long regex_program_size; /* the budget it was decoded under (xlate_limits) */
    /* the arena's chunks: they hold this record and everything obj points
     * at (the arena's bookkeeping is not kept past the decode) */
    struct xl_chunk *chunks;
    uint32_t bytes; /* allocated for it, all chunks */
    uint32_t live;  /* of which used */
    struct xl_object obj;
    char key[]; /* "namespace/name" ("default" when the namespace is empty) */
};

#endif
