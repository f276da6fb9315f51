/*
 * extstore.c -- cellard's side of the flash tier: memcached 1.6.18's
 * extstore settings, writer thread, command and page stats (extstore.h).
 *
 * The writer thread stands for memcached's storage_write_thread and its
 * compaction thread together, since engine_ext_step() does both: a slice
 * of moving cold values to flash, compacting and reclaiming pages.
 *
 *   loop:  n = engine_ext_step(engine, WRITE_BUDGET)
 *          n == budget: more is waiting, go again at once
 *          n > 0:       rest halves (not below WRITE_SLEEP_MIN)
 *          n == 0:      rest grows by an eighth (up to ext_max_sleep)
 *          wait for the rest, or for extstore_stop()'s signal
 *
 * memcached's writer starts at 500 us, halves its rest for each item it
 * moves and adds 1 us per idle round, capped at ext_max_sleep; adding 1 us
 * takes an idle server over an hour to reach a rest of 100 ms, waking
 * hundreds of times a second meanwhile, so cellard's grows by an eighth,
 * reaching ext_max_sleep (1 s) after some eight seconds of idling.
 * ext_max_sleep is read each round, so `extstore max_sleep` takes effect
 * at the next rest.  Stopping never waits out a rest: the wait is on a
 * condition variable that extstore_stop() signals.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protocol/mc_num.h"
#include "server/conn.h"
#include "server/ctx.h"
#include "server/extstore.h"
#include "server/server.h"
#include "server/stats.h"
#include "server/tune.h"

#define WRITE_SLEEP_MIN 500u            /* microseconds: the shortest rest (memcached's) */
#define WRITE_BUDGET 256u               /* values moved per slice */
#define MAX_SLAB_CLASSES 64             /* memcached's MAX_NUMBER_OF_SLAB_CLASSES */

struct extstore_writer {
    struct engine *engine;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;                /* extstore_stop() signals it */
    bool stop;                          /* under lock */
};

void extstore_config(const struct settings *cfg, struct engine_ext_config *out) {
    _Static_assert(SETTINGS_EXT_MAX_FILES <= FLASH_MAX_FILES, "ext_path files the store takes");
    for (unsigned i = 0; i < cfg->ext_nfiles; i++)
        out->store.files[i] = (struct flash_file){cfg->ext_path[i], cfg->ext_size[i]};
    out->store.nfiles = cfg->ext_nfiles;
    out->store.page_size = cfg->ext_page_size;
    out->store.wbuf_size = cfg->ext_wbuf_size;
    out->item_size = cfg->ext_item_size;
    out->item_age = cfg->ext_item_age;
    out->low_ttl = cfg->ext_low_ttl;
    out->recache_rate = cfg->ext_recache_rate;
    out->compact_under = cfg->ext_compact_under;
    out->drop_under = cfg->ext_drop_under;
    out->max_frag = cfg->ext_max_frag;
    out->drop_unread = cfg->ext_drop_unread;
    out->max_sleep_us = cfg->ext_max_sleep;
    out->threads = cfg->ext_threads;
    out->io_depth = cfg->ext_io_depth;
}

/* ---- the writer thread ---- */

/* The next rest after a slice that did done units of work (see the top of the file). */
static uint32_t next_rest(uint32_t rest, unsigned done, uint32_t max_sleep) {
    if (done > 0)
        rest = rest / 2 > WRITE_SLEEP_MIN ? rest / 2 : WRITE_SLEEP_MIN;
    else
        rest = rest > UINT32_MAX - rest / 8 - 1 ? UINT32_MAX : rest + rest / 8 + 1;
    return rest < max_sleep ? rest : max_sleep;
}

static void *writer_main(void *arg) {
    struct extstore_writer *w = arg;
    uint32_t rest = WRITE_SLEEP_MIN;
    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        pthread_mutex_unlock(&w->lock);
        unsigned done = engine_ext_step(w->engine, WRITE_BUDGET);
        struct engine_ext_config c;
        engine_ext_get(w->engine, &c);
        rest = next_rest(rest, done, c.max_sleep_us);
        if (rest == 0 && done < WRITE_BUDGET)
            rest = WRITE_SLEEP_MIN;         /* `extstore max_sleep 0`: no spinning */
        pthread_mutex_lock(&w->lock);
        if (done >= WRITE_BUDGET || rest == 0)
            continue;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += rest / 1000000;
        until.tv_nsec += (long)(rest % 1000000) * 1000;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!w->stop && pthread_cond_timedwait(&w->wake, &w->lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int extstore_start(struct server *s) {
    if (engine_flash(s->engine) == NULL)
        return 0;
    struct extstore_writer *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return -1;
    w->engine = s->engine;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->lock, NULL);
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return -1;
    }
    s->extw = w;
    return 0;
}

void extstore_stop(struct server *s) {
    struct extstore_writer *w = s->extw;
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
    s->extw = NULL;
}

/* ---- `extstore` ---- */

/* memcached's safe_strtoul(): a whole unsigned number, kept (as memcached keeps it) in 32 bits. */
static bool tok_u32(const struct mc_req *req, int i, uint32_t *out) {
    uint64_t v;
    if (!mc_num_u64(req->tok[i].p, req->tok[i].len, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* The knobs that take a 32-bit number: where each lives in the settings and in the engine's. */
static const struct knob {
    const char *name;
    size_t cfg;                         /* unsigned, in struct settings */
    size_t eng;                         /* uint32_t, in struct engine_ext_config */
} knobs[] = {
    {"item_size", offsetof(struct settings, ext_item_size),
     offsetof(struct engine_ext_config, item_size)},
    {"item_age", offsetof(struct settings, ext_item_age),
     offsetof(struct engine_ext_config, item_age)},
    {"low_ttl", offsetof(struct settings, ext_low_ttl),
     offsetof(struct engine_ext_config, low_ttl)},
    {"recache_rate", offsetof(struct settings, ext_recache_rate),
     offsetof(struct engine_ext_config, recache_rate)},
    {"compact_under", offsetof(struct settings, ext_compact_under),
     offsetof(struct engine_ext_config, compact_under)},
    {"drop_under", offsetof(struct settings, ext_drop_under),
     offsetof(struct engine_ext_config, drop_under)},
    {"max_sleep", offsetof(struct settings, ext_max_sleep),
     offsetof(struct engine_ext_config, max_sleep_us)},
};

/*
 * One knob set in both places, under tune_lock.  false when the knob is
 * unknown or its value not a number.  memcached stores 0 when the value
 * does not parse (its readers zero their output first); cellard keeps
 * the setting it had.
 */
static bool knob_set(struct server *s, const struct mc_req *req) {
    struct settings *cfg = s->cfg;
    struct engine_ext_config ec;
    bool ok = false;
    uint32_t v;
    double d;
    engine_ext_get(s->engine, &ec);
    for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
        if (mc_req_word_is(req, 1, knobs[i].name) && (ok = tok_u32(req, 2, &v))) {
            *(unsigned *)((char *)cfg + knobs[i].cfg) = v;
            *(uint32_t *)((char *)&ec + knobs[i].eng) = v;
        }
    }
    if (mc_req_word_is(req, 1, "max_frag") && (ok = tune_tok_f64(req, 2, &d))) {
        cfg->ext_max_frag = d;
        ec.max_frag = d;
    } else if (mc_req_word_is(req, 1, "drop_unread") && (ok = tok_u32(req, 2, &v))) {
        cfg->ext_drop_unread = v != 0;
        ec.drop_unread = v != 0;
    }
    if (ok)
        engine_ext_tune(s->engine, &ec);    /* nothing without a flash tier */
    return ok;
}

/*
 * As memcached 1.6.18's process_extstore_command(): fewer than three
 * words is ERROR; free_memchunks <class> <limit> is accepted and ignored
 * (deprecated there) for a class below 64; the knobs answer OK once set.
 * Without a flash tier memcached still takes the knobs (its build has
 * extstore), and `stats settings` shows them: so does cellard.
 */
void extstore_command(struct conn *c, const struct mc_req *req) {
    struct server *s = c->ctx->srv;
    bool ok;
    uint32_t cls, limit;
    if (req->ntokens < 3) {
        ok = false;
    } else if (mc_req_word_is(req, 1, "free_memchunks") && req->ntokens > 3) {
        ok = tok_u32(req, 2, &cls) && tok_u32(req, 3, &limit) && cls < MAX_SLAB_CLASSES;
    } else {
        pthread_mutex_lock(&s->tune_lock);
        ok = knob_set(s, req);
        pthread_mutex_unlock(&s->tune_lock);
    }
    if (!req->noreply)
        out_copy(&c->net.out, ok ? "OK\r\n" : "ERROR\r\n", ok ? 4 : 7);
}

/* ---- `stats extstore` ---- */

void extstore_stats_pages(struct server *s, struct stat_sink *k) {
    struct flash *f = engine_flash(s->engine);
    if (f == NULL)
        return;                         /* memcached built with extstore, run without: no lines */
    unsigned n = flash_pages(f);
    struct flash_page_info *info = calloc(n > 0 ? n : 1, sizeof(*info));
    if (info == NULL)
        return;                         /* FIXME: says nothing of the memory it lacked */
    flash_page_infos(f, info);
    char name[32], val[24];
    for (unsigned i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "%u:version", i);
        snprintf(val, sizeof(val), "%llu", (unsigned long long)info[i].version);
        k->emit(k, name, val);
        snprintf(name, sizeof(name), "%u:bytes", i);
        snprintf(val, sizeof(val), "%llu", (unsigned long long)info[i].bytes_used);
        k->emit(k, name, val);
        snprintf(name, sizeof(name), "%u:bucket", i);
        snprintf(val, sizeof(val), "%u", info[i].bucket);
        k->emit(k, name, val);
        /* the bucket a freed page goes back to: 1.6.18 takes only the default, 0 */
        snprintf(name, sizeof(name), "%u:free_bucket", i);
        k->emit(k, name, "0");
    }
    free(info);
}
