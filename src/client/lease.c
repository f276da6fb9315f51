/*
 * lease.c -- leases on the meta protocol: get-or-lease and the fill.
 *
 *   mg <key> v f c t N<ttl>
 *     VA ... (no W Z X)   HIT
 *     VA ... W            WIN: a miss made an empty placeholder (or the value
 *                         is stale, X): this caller fills, token = c
 *     VA ... Z X          STALE: an invalidated value, another client fills
 *     VA 0 ... Z          another client fills: wait, then read again
 *
 * The fill is `ms <key> ... C<token>`: it stores only while the token is
 * still the item's CAS, so a delete or invalidation since the lease was
 * won makes it fail, as the paper requires.  Waiting backs off from
 * lease_retry_ms, doubling up to 100 ms (or lease_retry_ms if that is
 * more), for lease_wait_ms in all (a last
 * read at the deadline); the handle's connections keep running meanwhile.
 */
#include "client/handle_int.h"

#define RETRY_MAX_MS 100

static int lease_read(struct cellar *h, const char *key, size_t nkey, int lease_ttl,
                      struct cellar_item *it, struct cellar_lease *lease);

int cellar_lease_get(struct cellar *h, const char *key, size_t nkey, int lease_ttl,
                     struct cellar_item *it, struct cellar_lease *lease) {
    struct cellar_item mine;
    int status = lease_read(h, key, nkey, lease_ttl, it ? it : &mine, lease);
    if (it == NULL)
        cellar_item_clear(&mine);
    return status;
}

/* cellar_lease_get() into an item of the caller's or of its own. */
static int lease_read(struct cellar *h, const char *key, size_t nkey, int lease_ttl,
                      struct cellar_item *it, struct cellar_lease *lease) {
    *lease = (struct cellar_lease){0};
    if (lease_ttl <= 0) {
        *it = (struct cellar_item){.status = CELLAR_EINVAL};
        return CELLAR_EINVAL;
    }
    struct msg m = {.op = MSG_LEASE_GET, .key = {key, nkey}, .exptime = lease_ttl};
    uint64_t deadline = clock_mono_ns() + (uint64_t)h->cfg->lease_wait_ms * 1000000u;
    int backoff = h->cfg->lease_retry_ms;
    for (;;) {
        struct cl_answer ans;
        int status = cl_call_one(h, &m, it, &ans);
        if (status != CELLAR_OK)
            return status;
        lease->stale = ans.stale;
        if (ans.won) {
            lease->state = CELLAR_LEASE_WIN;
            lease->token = it->cas;
            return CELLAR_OK;
        }
        if (ans.stale) {
            lease->state = CELLAR_LEASE_STALE;
            return CELLAR_OK;
        }
        if (!ans.token_sent) {
            lease->state = CELLAR_LEASE_HIT;
            return CELLAR_OK;
        }
        uint64_t now = clock_mono_ns();
        if (now >= deadline) {
            lease->state = CELLAR_LEASE_WAIT;
            return CELLAR_OK;
        }
        uint64_t left_ms = (deadline - now + 999999) / 1000000u;
        cellar_item_clear(it);
        cl_pause(h, left_ms < (uint64_t)backoff ? (int)left_ms : backoff);
        int64_t next = (int64_t)backoff * 2, cap = backoff > RETRY_MAX_MS ? backoff : RETRY_MAX_MS;
        backoff = (int)(next > cap ? cap : next);
    }
}

int cellar_lease_set(struct cellar *h, const char *key, size_t nkey, const void *value,
                     size_t nvalue, uint32_t flags, int64_t exptime, uint64_t token) {
    struct msg m = {.op = MSG_LEASE_SET, .key = {key, nkey}, .value = {value, nvalue},
                    .flags = flags, .exptime = exptime, .cas = token};
    return cl_call_one(h, &m, NULL, NULL);
}
