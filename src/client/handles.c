/*
 * handles.c -- a set of handles that threads borrow and give back
 * (cellar.h, "Handles for threads that come and go").
 *
 * A mutex guards the list of idle handles and the count of handles made;
 * a borrower that finds none idle and the set full waits on a condition
 * variable for the next give.  Handles are made outside the mutex (making
 * one allocates and may not block the others); the count is raised first
 * so that no two borrowers overshoot max.
 */
#include "cellar.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "client/conn_int.h"

struct cellar_handles {
    pthread_mutex_t lock;
    pthread_cond_t given;
    struct cellar_config *cfg;
    unsigned max, made;                 /* made: handles made or being made */
    struct cellar **all;                /* every handle made, [0, nall) */
    unsigned nall;
    struct cellar **idle;               /* the idle ones, a stack */
    unsigned nidle;
};

int cellar_handles_create(struct cellar_handles **out, struct cellar_config *cfg, unsigned max) {
    *out = NULL;
    if (max == 0 || cfg == NULL)
        return CELLAR_EINVAL;
    struct cellar_handles *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return CELLAR_ENOMEM;
    p->all = calloc(max, sizeof(*p->all));
    p->idle = calloc(max, sizeof(*p->idle));
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    bool cond_ok = pthread_cond_init(&p->given, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (p->all == NULL || p->idle == NULL || !cond_ok) {
        if (cond_ok)
            pthread_cond_destroy(&p->given);
        free(p->all);
        free(p->idle);
        free(p);
        return CELLAR_ENOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    p->cfg = cl_config_ref(cfg);
    p->max = max;
    *out = p;
    return CELLAR_OK;
}

int cellar_handles_take(struct cellar_handles *p, int wait_ms, struct cellar **h) {
    *h = NULL;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    if (wait_ms > 0) {
        until.tv_sec += wait_ms / 1000;
        until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (p->nidle > 0) {
            *h = p->idle[--p->nidle];
            pthread_mutex_unlock(&p->lock);
            return CELLAR_OK;
        }
        if (p->made < p->max) {
            p->made++;                      /* counted now: nobody else makes this one */
            pthread_mutex_unlock(&p->lock);
            struct cellar *n;
            int rc = cellar_create(&n, p->cfg);
            pthread_mutex_lock(&p->lock);
            if (rc != CELLAR_OK) {
                p->made--;                  /* another borrower may try */
                pthread_cond_signal(&p->given);
            } else {
                p->all[p->nall++] = n;
                *h = n;
            }
            pthread_mutex_unlock(&p->lock);
            return rc;
        }
        if (wait_ms == 0)
            break;
        int rc = wait_ms < 0 ? pthread_cond_wait(&p->given, &p->lock)
                             : pthread_cond_timedwait(&p->given, &p->lock, &until);
        if (rc == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&p->lock);
    return CELLAR_ETIMEDOUT;
}

int cellar_handles_give(struct cellar_handles *p, struct cellar **h) {
    if (*h == NULL)
        return CELLAR_EINVAL;
    pthread_mutex_lock(&p->lock);
    bool ours = false;
    for (unsigned i = 0; i < p->nall && !ours; i++)
        ours = p->all[i] == *h;
    for (unsigned i = 0; i < p->nidle && ours; i++)
        ours = p->idle[i] != *h;        /* given twice: refused */
    if (ours) {
        p->idle[p->nidle++] = *h;
        pthread_cond_signal(&p->given);
        *h = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    return ours ? CELLAR_OK : CELLAR_EINVAL;
}

void cellar_handles_destroy(struct cellar_handles **pp) {
    struct cellar_handles *p = *pp;
    if (p == NULL)
        return;
    for (unsigned i = 0; i < p->nall; i++)
        cellar_destroy(&p->all[i]);
    cellar_config_release(&p->cfg);
    pthread_cond_destroy(&p->given);
    pthread_mutex_destroy(&p->lock);
    free(p->all);
    free(p->idle);
    free(p);
    *pp = NULL;
}
