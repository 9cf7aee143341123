/* Fuzz target: arbitrary bytes as a lock object (Lease and ConfigMap) and as
 * the ConfigMap annotation text. Decoding never overruns its caps, and what
 * we decode survives our own encode -> decode round trip, the holder's peer
 * endpoint (annotation coxswain.dev/peer) included; that endpoint, and the
 * raw bytes, go through the endpoint parser a standby uses. */
#include "cx_json.h"
#include "election_peer.h"
#include "election_record.h"

#include <sys/socket.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(enum election_lock_kind kind, const struct election_record *r)
{
    cJSON *o = election_record_new_object(kind, "ns", "name", r);
    if (!o)
        return;
    struct election_observation back;
    election_record_decode(kind, o, &back);
    if (!r->holder_overflow && strcmp(back.rec.holder, r->holder) != 0)
        abort();
    if (back.rec.lease_duration_s != r->lease_duration_s || back.rec.transitions != r->transitions)
        abort();
    if (!r->holder_overflow && strcmp(back.rec.peer, r->peer) != 0)
        abort();
    cJSON_Delete(o);
}

static void check(const struct election_observation *ob)
{
    if (strnlen(ob->rv, sizeof(ob->rv)) >= sizeof(ob->rv) ||
        strnlen(ob->rec.holder, sizeof(ob->rec.holder)) >= sizeof(ob->rec.holder) ||
        strnlen(ob->rec.preferred_holder, sizeof(ob->rec.preferred_holder)) >=
            sizeof(ob->rec.preferred_holder) ||
        strnlen(ob->rec.strategy, sizeof(ob->rec.strategy)) >= sizeof(ob->rec.strategy) ||
        strnlen(ob->rec.peer, sizeof(ob->rec.peer)) >= sizeof(ob->rec.peer))
        abort();
    struct sockaddr_storage ss;
    unsigned len = 0;
    if (election_peer_parse(ob->rec.peer, &ss, &len) == 0 && len > sizeof(ss))
        abort();
    if (ob->rec.lease_duration_s < 0 || ob->rec.transitions < 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char hp[ELECTION_PEER_MAX];
    if (size < sizeof(hp)) {
        struct sockaddr_storage ss;
        unsigned len = 0;
        memcpy(hp, data, size);
        hp[size] = '\0';
        if (election_peer_parse(hp, &ss, &len) == 0 &&
            (len > sizeof(ss) || (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)))
            abort();
    }
    struct election_record r;
    if (election_record_parse_annotation((const char *)data, size, &r) == 0)
        round_trip(ELECTION_LOCK_CONFIGMAPS, &r);
    cJSON *o = cx_json_parse((const char *)data, size);
    if (!o)
        return 0;
    struct election_observation ob;
    election_record_decode(ELECTION_LOCK_LEASES, o, &ob);
    check(&ob);
    round_trip(ELECTION_LOCK_LEASES, &ob.rec);
    election_record_decode(ELECTION_LOCK_CONFIGMAPS, o, &ob);
    check(&ob);
    round_trip(ELECTION_LOCK_CONFIGMAPS, &ob.rec);
    cJSON *put = election_record_update_object(ELECTION_LOCK_LEASES, o, "ns", "n", "1", &ob.rec);
    cJSON_Delete(put);
    put = election_record_update_object(ELECTION_LOCK_CONFIGMAPS, o, "ns", "n", "1", &ob.rec);
    cJSON_Delete(put);
    cJSON_Delete(o);
    return 0;
}
