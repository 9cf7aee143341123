/*
 * ks_fault: fault injection rules, partitions and bearer tokens.
 * Event loop only.
 */
#ifndef KS_FAULT_H
#define KS_FAULT_H

#include "ks_http.h"

struct ks_fault_state;

struct ks_fault_state *ks_fault_new(void);
void ks_fault_free(struct ks_fault_state *f);

/* Is |user| partitioned away? */
bool ks_fault_partitioned(struct ks_server *s, const char *user);

/* Applies partitions and fault rules to a routed request. Returns 0 to go
 * on, -1 when answered or parked. */
int ks_fault_intercept(struct ks_server *s, struct ks_req *r);

/* /_sim/ endpoints of this module (path after "/_sim"). Returns 0 if it
 * answered, -1 if the path is not its. */
int ks_fault_admin(struct ks_req *r, const char *path);

/* Frees the park data of a request parked by a fault. */
void ks_fault_park_data_free(struct ks_req *r);

/* Parking (ks_admin.c). */
int ks_park(struct ks_server *s, struct ks_req *r, int64_t ms, void (*cont)(struct ks_req *),
            void *data);
void ks_unpark_now(struct ks_req *r);
/* Wakes parked requests whose continuation is |cont| and whose user is no
 * longer partitioned. */
void ks_admin_wake(struct ks_server *s, void (*cont)(struct ks_req *));
struct ks_fault_state *ks_admin_faults(struct ks_server *s);
/* Watches of healed users get the events they missed (ks_watch.c). */
void ks_watch_heal(struct ks_server *s);

#endif
