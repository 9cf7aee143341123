/*
 * ks_state: --state FILE. The store is saved as JSON on SIGTERM and loaded
 * at start; the resourceVersion counter continues from the saved value, so
 * RVs keep increasing across a restart. Event loop only.
 */
#ifndef KS_STATE_H
#define KS_STATE_H

#include "ks.h"

/* Loads |s->cfg.state_file| if it exists. Returns 0 or -1. */
int ks_state_load(struct ks_server *s);
/* Writes the store to |s->cfg.state_file| (atomically). Returns 0 or -1. */
int ks_state_save(struct ks_server *s);

#endif
