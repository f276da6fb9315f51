/*
 * tls.c -- TLS for the network core (tls.h), with OpenSSL.
 *
 * One SSL_CTX per server.  Reading the certificates again makes a new
 * context and swaps it in under the lock SSL_new() takes: an SSL made
 * before keeps its context, and its certificate, until it ends.  Renegotiation is off
 * (as memcached has it); a write that OpenSSL cannot finish is retried
 * with the same bytes first, as it requires, since the output is consumed
 * only by what SSL_write() took.
 */
#include "net/tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "net/worker.h"

#define SESSION_ID_CONTEXT "cellard"

struct net_tls {
    SSL_CTX *ctx;
    pthread_mutex_t lock;           /* the context's certificates vs. SSL_new() */
    struct net_tls_config cfg;      /* its strings point at the caller's */
    _Atomic uint64_t handshake_errors, new_sessions;
    _Atomic int64_t refreshed;
};

static void ssl_error(char *buf, size_t cap) {
    unsigned long e = ERR_get_error();
    if (e != 0)
        ERR_error_string_n(e, buf, cap);
    else
        snprintf(buf, cap, "(no further reason)");
    ERR_clear_error();
}

/* The certificate chain, key and CA of t's settings into ctx. */
static bool load_certs(struct net_tls *t, SSL_CTX *ctx, char *err, size_t cap) {
    const struct net_tls_config *c = &t->cfg;
    char why[256];
    if (c->chain_cert == NULL || !SSL_CTX_use_certificate_chain_file(ctx, c->chain_cert)) {
        ssl_error(why, sizeof(why));
        snprintf(err, cap, "Error loading the certificate chain: %s : %s",
                 c->chain_cert ? c->chain_cert : "(null)", why);
        return false;
    }
    if (!SSL_CTX_use_PrivateKey_file(ctx, c->key ? c->key : c->chain_cert, c->keyformat)) {
        ssl_error(why, sizeof(why));
        snprintf(err, cap, "Error loading the key: %s : %s", c->key ? c->key : "(null)", why);
        return false;
    }
    if (!SSL_CTX_check_private_key(ctx)) {
        ssl_error(why, sizeof(why));
        snprintf(err, cap, "Error validating the certificate: %s", why);
        return false;
    }
    if (c->ca_cert != NULL) {
        STACK_OF(X509_NAME) *names = NULL;
        if (!SSL_CTX_load_verify_locations(ctx, c->ca_cert, NULL) ||
            (names = SSL_load_client_CA_file(c->ca_cert)) == NULL) {
            ssl_error(why, sizeof(why));
            snprintf(err, cap, "Error loading the CA certificate: %s : %s", c->ca_cert, why);
            return false;
        }
        SSL_CTX_set_client_CA_list(ctx, names);
    }
    return true;
}

static int new_session(SSL *s, SSL_SESSION *sess) {
    (void)sess;
    struct net_tls *t = SSL_CTX_get_app_data(SSL_get_SSL_CTX(s));
    atomic_fetch_add_explicit(&t->new_sessions, 1, memory_order_relaxed);
    return 0;                       /* the cache keeps its own reference */
}

static const int versions[] = {TLS1_VERSION, TLS1_1_VERSION, TLS1_2_VERSION, TLS1_3_VERSION};
static const int verify_modes[] = {
    SSL_VERIFY_NONE, SSL_VERIFY_PEER, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
    SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT | SSL_VERIFY_CLIENT_ONCE,
};

const char *net_tls_version_name(int v) {
    static const char *const names[] = {"tlsv1.0", "tlsv1.1", "tlsv1.2", "tlsv1.3"};
    return v >= 0 && v < 4 ? names[v] : "unknown";
}

/* A context with t's settings and certificates, or NULL with why in err. */
static SSL_CTX *ctx_make(struct net_tls *t, char *err, size_t cap) {
    const struct net_tls_config *cfg = &t->cfg;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        snprintf(err, cap, "Out of memory making the TLS context");
        return NULL;
    }
    SSL_CTX_set_app_data(ctx, t);
    SSL_CTX_set_min_proto_version(ctx, versions[cfg->min_version]);
    bool ok = load_certs(t, ctx, err, cap);
    if (ok) {
        SSL_CTX_set_verify(ctx, verify_modes[cfg->verify_mode], NULL);
        if (cfg->ciphers != NULL && !SSL_CTX_set_cipher_list(ctx, cfg->ciphers)) {
            snprintf(err, cap, "Error setting the provided cipher(s): %s", cfg->ciphers);
            ok = false;
        }
    }
    if (!ok) {
        ERR_clear_error();
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (cfg->session_cache) {
        SSL_CTX_sess_set_new_cb(ctx, new_session);
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
        SSL_CTX_set_session_id_context(ctx, (const unsigned char *)SESSION_ID_CONTEXT,
                                       sizeof(SESSION_ID_CONTEXT) - 1);
    } else {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                              SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    return ctx;
}

struct net_tls *net_tls_create(const struct net_tls_config *cfg, char *err, size_t cap) {
    if (cfg->min_version < 0 || cfg->min_version > 3 || cfg->verify_mode < 0 ||
        cfg->verify_mode > 3) {
        snprintf(err, cap, "Invalid TLS setting");
        return NULL;
    }
    /* kernel TLS sends a write OpenSSL had to hold from the caller's buffer, which
       here is the worker's, shared by its connections: not offered */
    if (cfg->kernel_tls) {
        snprintf(err, cap, "ssl_kernel_tls: the kernel's TLS offload is not supported by "
                           "cellar");
        return NULL;
    }
    struct net_tls *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, cap, "Out of memory making the TLS context");
        return NULL;
    }
    t->cfg = *cfg;
    if (t->cfg.wbuf_size == 0)
        t->cfg.wbuf_size = 16384;
    pthread_mutex_init(&t->lock, NULL);
    if ((t->ctx = ctx_make(t, err, cap)) == NULL) {
        net_tls_destroy(&t);
        return NULL;
    }
    atomic_store(&t->refreshed, (int64_t)time(NULL));
    return t;
}

void net_tls_destroy(struct net_tls **tp) {
    struct net_tls *t = *tp;
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    pthread_mutex_destroy(&t->lock);
    free(t);
    *tp = NULL;
}

bool net_tls_refresh(struct net_tls *t, char *err, size_t cap) {
    /* a context of its own, so that one that fails leaves the old one whole; the
       sessions made from the old keep it until they end */
    SSL_CTX *ctx = ctx_make(t, err, cap);
    if (ctx == NULL)
        return false;
    pthread_mutex_lock(&t->lock);
    SSL_CTX *old = t->ctx;
    t->ctx = ctx;
    pthread_mutex_unlock(&t->lock);
    SSL_CTX_free(old);
    atomic_store(&t->refreshed, (int64_t)time(NULL));
    return true;
}

uint64_t net_tls_handshake_errors(const struct net_tls *t) {
    return atomic_load_explicit(&t->handshake_errors, memory_order_relaxed);
}

uint64_t net_tls_new_sessions(const struct net_tls *t) {
    return atomic_load_explicit(&t->new_sessions, memory_order_relaxed);
}

int64_t net_tls_refreshed(const struct net_tls *t) {
    return atomic_load_explicit(&t->refreshed, memory_order_relaxed);
}

/* ---------------------------------------------------------------------- */
/* Connections                                                              */
/* ---------------------------------------------------------------------- */

int net_tls_conn_start(struct net_conn *c) {
    struct net_tls *t = c->w->srv->tls;
    pthread_mutex_lock(&t->lock);
    SSL *ssl = SSL_new(t->ctx);
    pthread_mutex_unlock(&t->lock);
    if (ssl == NULL || !SSL_set_fd(ssl, c->fd)) {
        SSL_free(ssl);
        ERR_clear_error();
        return -1;
    }
    SSL_set_accept_state(ssl);
    SSL_set_read_ahead(ssl, 1);     /* a record's header and body in one read() */
    c->tls = ssl;
    return 0;
}

void net_tls_conn_end(struct net_conn *c, bool notify) {
    SSL *ssl = c->tls;
    if (ssl == NULL)
        return;
    ERR_clear_error();
    if (notify && SSL_is_init_finished(ssl))
        SSL_shutdown(ssl);          /* one try: the socket closes next */
    SSL_free(ssl);
    ERR_clear_error();
    c->tls = NULL;
}

/* A read or write that failed: EAGAIN for a wait, else the error (counted in a handshake). */
static int failed(struct net_conn *c, int r, bool reading) {
    SSL *ssl = c->tls;
    int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        if (reading && e == SSL_ERROR_WANT_WRITE)
            c->tls_rwant_write = true;
        errno = EAGAIN;
        return -1;
    }
    /* the peer's close_notify, or its hanging up without one (most clients do): the end */
    if (e == SSL_ERROR_ZERO_RETURN ||
        (e == SSL_ERROR_SSL &&
         ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING)) {
        ERR_clear_error();
        return 0;
    }
    if (e == SSL_ERROR_SSL && !SSL_is_init_finished(ssl))
        atomic_fetch_add_explicit(&c->w->srv->tls->handshake_errors, 1, memory_order_relaxed);
    int err = e == SSL_ERROR_SYSCALL && errno != 0 ? errno : ECONNRESET;
    ERR_clear_error();
    errno = err;
    return -1;
}

ssize_t net_tls_read(struct net_conn *c, char *buf, size_t n) {
    SSL *ssl = c->tls;
    size_t got = 0;
    c->tls_more = false;
    while (got < n) {
        ERR_clear_error();          /* SSL_get_error() reads the thread's queue first */
        int r = SSL_read(ssl, buf + got, n - got > INT32_MAX ? INT32_MAX : (int)(n - got));
        if (r <= 0) {
            if (got > 0) {
                ERR_clear_error();
                break;              /* what was read first; the failure comes again */
            }
            return failed(c, r, true);
        }
        got += (size_t)r;
        if (!SSL_has_pending(ssl))
            return (ssize_t)got;    /* nothing read ahead: the socket says the rest */
    }
    c->tls_more = SSL_has_pending(ssl);
    return (ssize_t)got;
}

int net_tls_flush(struct net_conn *c, size_t *written) {
    struct out *o = &c->out;
    struct net_worker *w = c->w;
    unsigned cap = w->srv->tls->cfg.wbuf_size;
    *written = 0;
    if (w->tls_wbuf == NULL && (w->tls_wbuf = malloc(cap)) == NULL)
        return -1;
    while (o->sent < o->niov) {
        /* the first cap bytes of what is left: those of a retry come first again */
        size_t n = 0;
        for (int i = o->sent; i < o->niov && n < cap; i++) {
            size_t k = o->iov[i].iov_len < cap - n ? o->iov[i].iov_len : cap - n;
            memcpy(w->tls_wbuf + n, o->iov[i].iov_base, k);
            n += k;
        }
        ERR_clear_error();
        int r = SSL_write(c->tls, w->tls_wbuf, (int)n);
        if (r <= 0) {
            if (failed(c, r, false) < 0 && errno == EAGAIN)
                return 0;
            return -1;
        }
        *written += (size_t)r;
        out_consume(o, (size_t)r);
        if (o->bytes == 0)
            return 1;
    }
    out_reset(o);
    return 1;
}

ssize_t net_tls_send(void *tls, const void *buf, size_t n) {
    ERR_clear_error();
    int r = SSL_write(tls, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (r > 0)
        return r;
    int e = SSL_get_error(tls, r);
    ERR_clear_error();
    errno = e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ ? EAGAIN : EPIPE;
    return -1;
}

void net_tls_worker_free(struct net_worker *w) {
    free(w->tls_wbuf);
    w->tls_wbuf = NULL;
}
