/*
 * sasl.c -- memcached's binary-protocol SASL authentication (sasl.h) on
 * Cyrus SASL: the library's setup and callbacks, and the three SASL
 * requests of a connection.
 *
 *   worker.c: parse --> sasl_bin() --+-- not SASL's business: dispatch_bin()
 *                                    +-- refused before authentication: 20, close
 *                                    +-- LIST_MECHS: sasl_listmech() --> answer
 *                                    +-- AUTH/STEP: value read into an item
 *                                           (CONN_NREAD, conn.c) --> sasl_nread_done():
 *                                           sasl_server_start()/_step() --> answer
 *
 * The callbacks get the struct sasl as their context, so the setup keeps
 * no state of its own outside it; Cyrus SASL's own state is global to the
 * process, which is why there is one struct sasl.
 */
#include "server/sasl.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sasl/sasl.h>

#include "server/conn.h"
#include "server/ctx.h"
#include "server/server.h"
#include "server/stats.h"

#define SASL_APP "memcached"        /* memcached's name: its config file is memcached.conf */
#define SASL_MECH_MAX 32            /* memcached's longest mechanism name */
#define PWDB_LINE_MAX 256           /* memcached's longest MEMCACHED_SASL_PWDB line */

struct sasl {
    sasl_callback_t cb[4];          /* what sasl_server_init() was given: it keeps them */
    char *pwdb;                     /* MEMCACHED_SASL_PWDB at start; NULL: none */
    const _Atomic int *verbose;
    char hostname[1025];            /* the realm a connection's users default to ("": none) */
};

/* A connection's exchange (conn.sasl). */
struct sasl_session {
    sasl_conn_t *conn;              /* NULL when the library would not make one */
    bool started;                   /* a SASL_AUTH began an exchange a SASL_STEP may go on with */
};

static int verbosity(const struct sasl *s) {
    return atomic_load_explicit(s->verbose, memory_order_relaxed);
}

/* ---------------------------------------------------------------------- */
/* The library's callbacks                                                 */
/* ---------------------------------------------------------------------- */

/* Cyrus's log lines, by memcached's -v levels: warnings at -v, notes and below at -vv. */
static int cb_log(void *ctx, int level, const char *message) {
    int v = verbosity(ctx);
    bool show;
    switch (level) {
    case SASL_LOG_NONE:
        show = false;
        break;
    case SASL_LOG_PASS:
    case SASL_LOG_TRACE:
    case SASL_LOG_DEBUG:
    case SASL_LOG_NOTE:
        show = v >= 2;
        break;
    case SASL_LOG_WARN:
    case SASL_LOG_FAIL:
        show = v >= 1;
        break;
    default:                        /* errors, always */
        show = true;
        break;
    }
    if (show)
        fprintf(stderr, "SASL (severity %d): %s\n", level, message);
    return SASL_OK;
}

/*
 * Where memcached.conf is: the folder SASL_CONF_PATH names, else the first
 * of memcached's places that exists.  There /etc/sasl/memcached.conf (and
 * /etc/sasl2/...) may be the file itself, which gives its folder, or a
 * folder holding a memcached.conf, which is then the folder.  With none,
 * the library's start fails, and with it the server's.
 */
static int cb_conf_path(void *ctx, char **path) {
    static const char *const place[] = {"/etc/sasl/memcached.conf", "/etc/sasl2/memcached.conf"};
    static const char *const file_in[] = {"/etc/sasl/memcached.conf/memcached.conf",
                                          "/etc/sasl2/memcached.conf/memcached.conf"};
    static const char *const folder[] = {"/etc/sasl", "/etc/sasl2"};
    const char *p = getenv("SASL_CONF_PATH");
    for (size_t i = 0; p == NULL && i < sizeof(place) / sizeof(place[0]); i++) {
        if (access(file_in[i], F_OK) == 0)
            p = place[i];
        else if (access(place[i], F_OK) == 0)
            p = folder[i];
    }
    if (verbosity(ctx) > 0) {
        if (p != NULL)
            fprintf(stderr, "Reading configuration from: <%s>\n", p);
        else
            fprintf(stderr, "Failed to locate a config path\n");
    }
    *path = (char *)p;              /* the library reads it and never frees it */
    return p != NULL ? SASL_OK : SASL_FAIL;
}

/*
 * MEMCACHED_SASL_PWDB: a plain file of `user:password` lines (more `:`
 * fields may follow the password), asked before SASL's own store.  The
 * first line of the user decides; lines are read in pieces of at most 255
 * bytes, as memcached reads them.  user comes as SASL made it
 * (user@realm where a realm applies).
 */
static int cb_pwdb(sasl_conn_t *conn, void *ctx, const char *user, const char *pass,
                   unsigned passlen, struct propctx *propctx) {
    (void)conn;
    (void)propctx;
    struct sasl *s = ctx;
    size_t nuser = strlen(user);
    if (passlen + nuser > PWDB_LINE_MAX - 4) {
        fprintf(stderr, "WARNING: Failed to authenticate <%s> due to too long password (%u)\n",
                user, passlen);
        return SASL_NOAUTHZ;
    }
    FILE *f = fopen(s->pwdb, "r");
    if (f == NULL) {
        if (verbosity(s) > 0)
            fprintf(stderr, "WARNING: Failed to open sasl database <%s>: %s\n", s->pwdb,
                    strerror(errno));
        return SASL_NOAUTHZ;
    }
    char line[PWDB_LINE_MAX];
    bool ok = false;
    while (fgets(line, sizeof(line), f) != NULL) {
        size_t n = strlen(line);
        if (n <= nuser || memcmp(line, user, nuser) != 0 || line[nuser] != ':')
            continue;
        const char *p = line + nuser + 1;
        size_t left = n - nuser - 1;
        ok = left >= passlen && memcmp(p, pass, passlen) == 0 &&
             (left == passlen || p[passlen] == ':' || p[passlen] == '\n' || p[passlen] == '\r');
        break;
    }
    fclose(f);
    if (ok)
        return SASL_OK;
    if (verbosity(s) > 0)
        fprintf(stderr, "INFO: User <%s> failed to authenticate\n", user);
    return SASL_NOAUTHZ;
}

/* Cyrus's own locks, as pthread mutexes (its default ones lock nothing). */
static void *mutex_alloc(void) {
    pthread_mutex_t *m = malloc(sizeof(*m));
    if (m != NULL)
        pthread_mutex_init(m, NULL);
    return m;
}

static int mutex_lock(void *m) {
    return pthread_mutex_lock(m) == 0 ? SASL_OK : SASL_FAIL;
}

static int mutex_unlock(void *m) {
    return pthread_mutex_unlock(m) == 0 ? SASL_OK : SASL_FAIL;
}

static void mutex_free(void *m) {
    if (m == NULL)
        return;
    pthread_mutex_destroy(m);
    free(m);
}

/* A callback as the library's table holds it (void (*)(void) casts to and from any). */
#define CB(fn) ((int (*)(void))(void (*)(void))(fn))

struct sasl *sasl_open(const _Atomic int *verbose, char *err, size_t cap) {
    struct sasl *s = calloc(1, sizeof(*s));
    const char *pwdb = getenv("MEMCACHED_SASL_PWDB");
    if (s == NULL || (pwdb != NULL && (s->pwdb = strdup(pwdb)) == NULL)) {
        free(s);
        snprintf(err, cap, "Error initializing sasl.");
        return NULL;
    }
    s->verbose = verbose;
    size_t n = 0;
    if (s->pwdb != NULL)
        s->cb[n++] = (sasl_callback_t){SASL_CB_SERVER_USERDB_CHECKPASS, CB(cb_pwdb), s};
    s->cb[n++] = (sasl_callback_t){SASL_CB_LOG, CB(cb_log), s};
    s->cb[n++] = (sasl_callback_t){SASL_CB_GETCONFPATH, CB(cb_conf_path), s};
    s->cb[n] = (sasl_callback_t){SASL_CB_LIST_END, NULL, NULL};
    if (gethostname(s->hostname, sizeof(s->hostname) - 1) != 0) {
        if (verbosity(s) > 0)
            fprintf(stderr, "Error discovering hostname for SASL\n");
        s->hostname[0] = '\0';
    }
    sasl_set_mutex(mutex_alloc, mutex_lock, mutex_unlock, mutex_free);
    if (sasl_server_init(s->cb, SASL_APP) != SASL_OK) {
        snprintf(err, cap, "Error initializing sasl.");
        free(s->pwdb);
        free(s);
        return NULL;
    }
    if (verbosity(s) > 0)
        fprintf(stderr, "Initialized SASL.\n");
    return s;
}

void sasl_close(struct sasl **sp) {
    struct sasl *s = *sp;
    if (s == NULL)
        return;
    sasl_server_done();
    free(s->pwdb);
    free(s);
    *sp = NULL;
}

/* ---------------------------------------------------------------------- */
/* A connection's requests                                                  */
/* ---------------------------------------------------------------------- */

/* An answer of ours: the header (cas 0), then n bytes of body. */
static void answer(struct conn *c, uint16_t status, const char *body, size_t n) {
    char *p = out_reserve(&c->net.out, MC_BIN_HDR_LEN + n);
    if (p == NULL)
        return;
    size_t h = mc_bin_fmt_header(p, c->bop, 0, 0, status, (uint32_t)n, c->bopaque, 0);
    if (n > 0)
        memcpy(p + h, body, n);
    out_commit(&c->net.out, p, h + n);
}

/* An error with memcached's text for it, written at once as memcached writes errors. */
static void answer_error(struct conn *c, uint16_t status) {
    c->mc_flush = true;
    char *p = out_reserve(&c->net.out, MC_BIN_ERROR_MAX);
    if (p != NULL)
        out_commit(&c->net.out, p, mc_bin_fmt_error(p, c->bop, status, c->bopaque));
}

/*
 * What memcached does before each SASL request's work: the connection is
 * no longer authenticated, and gets its SASL connection if it has none.
 * Returns c's exchange, NULL when there is no memory for one.
 */
static struct sasl_session *session(struct conn *c) {
    struct sasl *s = c->ctx->srv->sasl;
    c->authed = false;
    if (c->sasl == NULL && (c->sasl = calloc(1, sizeof(*c->sasl))) == NULL)
        return NULL;
    if (c->sasl->conn == NULL &&
        sasl_server_new(SASL_APP, NULL, s->hostname[0] ? s->hostname : NULL, NULL, NULL, NULL,
                        0, &c->sasl->conn) != SASL_OK) {
        if (verbosity(s) > 0)
            fprintf(stderr, "Failed to initialize SASL conn.\n");
        c->sasl->conn = NULL;
    }
    return c->sasl;
}

static void list_mechs(struct conn *c) {
    struct sasl_session *ss = session(c);
    const char *list = NULL;
    unsigned n = 0;
    if (ss == NULL || ss->conn == NULL ||
        sasl_listmech(ss->conn, NULL, "", " ", "", &list, &n, NULL) != SASL_OK) {
        if (verbosity(c->ctx->srv->sasl) > 0)
            fprintf(stderr, "Failed to list SASL mechanisms.\n");
        answer_error(c, MC_BIN_ST_AUTH_ERROR);
        return;
    }
    answer(c, MC_BIN_ST_OK, list, n);
}

/*
 * SASL_AUTH or SASL_STEP: the key is the mechanism, the value (all of the
 * body past the key) the client's response, read into an item as a set's
 * value is.  An item that cannot be had, or a chained one (memcached
 * wants the response in one piece), is out of memory.
 */
static void auth_begin(struct conn *c, const struct mc_bin_req *r) {
    struct engine *e = c->ctx->engine;
    if (r->keylen > SASL_MECH_MAX) {
        answer_error(c, MC_BIN_ST_EINVAL);
        conn_swallow(c, r->vlen);
        return;
    }
    enum engine_alloc_err err = ENGINE_ALLOC_OK;
    struct item *it = engine_item_alloc(e, r->key.p, r->key.len, 0, 0, r->vlen, &err);
    if (it != NULL && engine_item_iov(it, c->ctx->iov, c->ctx->iov_max) > 1) {
        engine_item_unref(e, it);
        it = NULL;
    }
    if (it == NULL) {
        answer_error(c, MC_BIN_ST_ENOMEM);
        conn_swallow(c, r->vlen);
        return;
    }
    conn_nread_begin(c, it, r->vlen, false);
}

bool sasl_bin(struct conn *c, struct mc_bin_req *r, enum mc_parse res) {
    /* memcached finds a body too short for extras and key before it asks who is asking */
    if ((uint32_t)r->extlen + r->keylen > r->bodylen)
        return false;
    bool ours = r->opcode == MC_BIN_OP_SASL_LIST_MECHS || r->opcode == MC_BIN_OP_SASL_AUTH ||
                r->opcode == MC_BIN_OP_SASL_STEP;
    c->bop = r->opcode;
    c->bcmd = r->cmd;
    c->bopaque = r->opaque;
    if (!ours) {
        if (c->authed || r->opcode == MC_BIN_OP_VERSION)
            return false;
        answer_error(c, MC_BIN_ST_AUTH_ERROR);
        c->net.close_after_write = true;
        return true;
    }
    /* The codec answers a SASL request of the right shape as a server without SASL
       does (Unknown command, value skipped); a wrong shape or a key over 250 bytes is
       refused the same with SASL or without (Invalid arguments, close). */
    if (res == MC_PARSE_ERROR && (r->status != MC_BIN_ST_UNKNOWN_COMMAND || r->close))
        return false;
    if (r->opcode == MC_BIN_OP_SASL_LIST_MECHS)
        list_mechs(c);
    else
        auth_begin(c, r);
    return true;
}

bool sasl_reading(const struct conn *c) {
    return c->bcmd == MC_BIN_OP_SASL_AUTH || c->bcmd == MC_BIN_OP_SASL_STEP;
}

/* Runs the exchange's next step on the response in [in, in + n); Cyrus's result. */
static int auth_step(struct conn *c, struct sasl_session *ss, const char *mech, const char *in,
                     unsigned n, const char **out, unsigned *outlen) {
    if (c->bcmd == MC_BIN_OP_SASL_AUTH) {
        int rc = ss != NULL && ss->conn != NULL
                     ? sasl_server_start(ss->conn, mech, in, n, out, outlen)
                     : SASL_BADPARAM;
        if (ss != NULL)
            ss->started = rc == SASL_OK || rc == SASL_CONTINUE;
        return rc;
    }
    if (ss == NULL || !ss->started) {
        if (verbosity(c->ctx->srv->sasl) > 0)
            fprintf(stderr, "%d: SASL_STEP called but sasl_server_start not called for this "
                            "connection!\n", c->net.fd);
        return SASL_FAIL;
    }
    return sasl_server_step(ss->conn, in, n, out, outlen);
}

/*
 * The response is in: memcached's answers to Cyrus's result.  OK lets the
 * connection in; CONTINUE sends the challenge (status 21, written at once);
 * anything else is 20.  The response goes to the library NUL-terminated
 * (as its API asks) and NULL when empty (as memcached passes it).
 */
void sasl_nread_done(struct conn *c) {
    struct engine *e = c->ctx->engine;
    const struct sasl *s = c->ctx->srv->sasl;
    struct item *it = c->nitem;
    uint32_t n = (uint32_t)c->nlen;
    c->nitem = NULL;
    conn_set_state(c, CONN_PARSE);
    struct sasl_session *ss = session(c);
    char mech[SASL_MECH_MAX + 1];
    size_t nmech = item_nkey(it);
    memcpy(mech, item_key(it), nmech);
    mech[nmech] = '\0';
    char *in = NULL;
    if (n > 0) {
        struct iovec *iov = c->ctx->iov;
        engine_item_iov(it, iov, c->ctx->iov_max);
        if ((in = malloc((size_t)n + 1)) != NULL) {
            memcpy(in, iov[0].iov_base, n);
            in[n] = '\0';
        }
    }
    engine_item_unref(e, it);
    if (n > 0 && in == NULL) {
        answer_error(c, MC_BIN_ST_ENOMEM);
        return;
    }
    if (verbosity(s) > 0)
        fprintf(stderr, "mech:  ``%s'' with %u bytes of data\n", mech, n);
    const char *out = NULL;
    unsigned outlen = 0;
    int rc = auth_step(c, ss, mech, in, n, &out, &outlen);
    free(in);
    if (verbosity(s) > 0)
        fprintf(stderr, "sasl result code:  %d\n", rc);
    switch (rc) {
    case SASL_OK:
        c->authed = true;
        answer(c, MC_BIN_ST_OK, S("Authenticated"));
        STAT_INC(c->ctx->st.auth_cmds);
        break;
    case SASL_CONTINUE:
        answer(c, MC_BIN_ST_AUTH_CONTINUE, out, outlen);
        c->mc_flush = true;
        break;
    default:
        if (verbosity(s) > 0)
            fprintf(stderr, "Unknown sasl response:  %d\n", rc);
        answer_error(c, MC_BIN_ST_AUTH_ERROR);
        STAT_INC(c->ctx->st.auth_cmds);
        STAT_INC(c->ctx->st.auth_errors);
        break;
    }
}

void sasl_conn_end(struct conn *c) {
    if (c->sasl == NULL)
        return;
    sasl_dispose(&c->sasl->conn);
    free(c->sasl);
    c->sasl = NULL;
}
