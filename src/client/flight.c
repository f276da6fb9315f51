/*
 * flight.c -- single-flight: one read per key at a time, shared by threads.
 *
 * A group maps the keys being read to a flight.  The first thread to read
 * a key is its leader: it makes the request through its own handle, then
 * posts the answer, takes the flight out of the map (a later reader
 * starts a new flight) and wakes the followers, who copy the answer.  The
 * last one out frees the flight.
 *
 *   leader:    lock, no flight -> add one, unlock -> cellar_get() ->
 *              lock, post answer, unlink, broadcast, unlock
 *   follower:  lock, flight found -> waiters++, wait until done ->
 *              copy the answer, waiters--, unlock
 *
 * One mutex guards the map and every flight's fields; the wait is on the
 * flight's own condition variable, so a posted answer wakes only its
 * followers.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client/config_int.h"
#include "core/hash.h"

#define FLIGHT_BUCKETS 256

struct flight {
    struct flight *next;
    pthread_cond_t cv;
    unsigned waiters;           /* followers not yet gone */
    bool done;
    bool leader_gone;
    struct cellar_item answer;  /* the leader's, valid once done */
    size_t nkey;
    char key[];
};

struct cellar_flight {
    pthread_mutex_t mu;
    struct flight *buckets[FLIGHT_BUCKETS];
};

int cellar_flight_create(struct cellar_flight **out) {
    struct cellar_flight *g = calloc(1, sizeof(*g));
    if (g == NULL || pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g);
        *out = NULL;
        return CELLAR_ENOMEM;
    }
    *out = g;
    return CELLAR_OK;
}

void cellar_flight_destroy(struct cellar_flight **gp) {
    struct cellar_flight *g = *gp;
    if (g == NULL)
        return;
    pthread_mutex_destroy(&g->mu);
    free(g);
    *gp = NULL;
}

static struct flight **slot(struct cellar_flight *g, const char *key, size_t nkey) {
    struct flight **p = &g->buckets[hash_murmur3_32(key, nkey, 0) % FLIGHT_BUCKETS];
    while (*p && ((*p)->nkey != nkey || memcmp((*p)->key, key, nkey) != 0))
        p = &(*p)->next;
    return p;
}

static void flight_free(struct flight *f) {
    cellar_item_clear(&f->answer);
    pthread_cond_destroy(&f->cv);
    free(f);
}

/* A copy of the leader's answer for a follower. */
static int copy_answer(const struct cellar_item *a, struct cellar_item *it) {
    *it = *a;
    it->value = NULL;
    if (a->value) {
        it->value = malloc(a->nvalue + 1);
        if (it->value == NULL) {
            it->status = CELLAR_ENOMEM;
            return CELLAR_ENOMEM;
        }
        memcpy(it->value, a->value, a->nvalue + 1);
    }
    return it->status;
}

static int follow(struct cellar_flight *g, struct flight *f, struct cellar_item *it) {
    f->waiters++;
    while (!f->done)
        pthread_cond_wait(&f->cv, &g->mu);
    int status = copy_answer(&f->answer, it);
    bool last = --f->waiters == 0 && f->leader_gone;
    pthread_mutex_unlock(&g->mu);
    if (last)
        flight_free(f);
    return status;
}

int cellar_get_flight(struct cellar *h, struct cellar_flight *g, const char *key, size_t nkey,
                      struct cellar_item *it) {
    if (!msg_key_ok((struct mc_span){key, nkey})) {
        *it = (struct cellar_item){.status = CELLAR_EINVAL};
        return CELLAR_EINVAL;
    }
    pthread_mutex_lock(&g->mu);
    struct flight **p = slot(g, key, nkey);
    if (*p)
        return follow(g, *p, it);
    struct flight *f = calloc(1, sizeof(*f) + nkey);
    if (f == NULL || pthread_cond_init(&f->cv, NULL) != 0) {
        pthread_mutex_unlock(&g->mu);
        free(f);
        *it = (struct cellar_item){.status = CELLAR_ENOMEM};
        return CELLAR_ENOMEM;
    }
    memcpy(f->key, key, nkey);
    f->nkey = nkey;
    *p = f;
    pthread_mutex_unlock(&g->mu);

    int status = cellar_get(h, key, nkey, it);

    pthread_mutex_lock(&g->mu);
    copy_answer(it, &f->answer);
    f->done = true;
    f->leader_gone = true;
    *slot(g, key, nkey) = f->next;
    pthread_cond_broadcast(&f->cv);
    bool last = f->waiters == 0;
    pthread_mutex_unlock(&g->mu);
    if (last)
        flight_free(f);
    return status;
}
