/*
 * tls.c -- TLS toward the servers of a pool with "use_ssl" (mcrouter's
 * key), with OpenSSL: the configuration's client context (its CAs, the
 * client certificate, whether a server's certificate and name are
 * checked), and a connection's session, which conn.c drives in place of
 * send() and recv() once the TCP connect is done:
 *
 *   connect --> cl_tls_handshake() until done (the connect timeout covers it)
 *           --> cl_tls_send() from wbuf, cl_tls_recv() into rbuf
 *
 * A configuration with a TLS pool keeps its handles' connections on
 * epoll (client.c: no io_uring): the kernel does not encrypt.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "client/client_int.h"

struct cl_tls {
    SSL_CTX *ctx;
    BIO_METHOD *bio;                /* a socket's, writing with MSG_NOSIGNAL */
    bool verify;                    /* the server's certificate and name checked */
};

/*
 * The socket BIO a session reads and writes through: OpenSSL's own writes
 * with write(), whose SIGPIPE (a server that reset the connection) would
 * stop a program that did not ignore it; a library must not.  The fd is
 * the BIO's data; a call that would block asks for a retry.
 */
static int bio_write(BIO *b, const char *buf, int n) {
    ssize_t r = send((int)(intptr_t)BIO_get_data(b), buf, (size_t)n, MSG_NOSIGNAL);
    BIO_clear_retry_flags(b);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        BIO_set_retry_write(b);
    return (int)r;
}

static int bio_read(BIO *b, char *buf, int n) {
    ssize_t r = recv((int)(intptr_t)BIO_get_data(b), buf, (size_t)n, 0);
    BIO_clear_retry_flags(b);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        BIO_set_retry_read(b);
    return (int)r;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
    (void)b, (void)num, (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b) {
    BIO_set_init(b, 1);
    return 1;
}

static void ssl_reason(char *buf, size_t cap) {
    unsigned long e = ERR_get_error();
    if (e != 0)
        ERR_error_string_n(e, buf, cap);
    else
        snprintf(buf, cap, "(no reason given)");
    ERR_clear_error();
}

struct cl_tls *cl_tls_create(const struct cellar_tls *o, char *err, size_t cap) {
    struct cl_tls *t = calloc(1, sizeof(*t));
    if (t == NULL || (t->ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
        free(t);
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    char why[256];
    t->verify = o == NULL || !o->no_verify;
    t->bio = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "cellar socket");
    if (t->bio == NULL || !BIO_meth_set_write(t->bio, bio_write) ||
        !BIO_meth_set_read(t->bio, bio_read) || !BIO_meth_set_ctrl(t->bio, bio_ctrl) ||
        !BIO_meth_set_create(t->bio, bio_create)) {
        cl_tls_free(&t);
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                 SSL_MODE_RELEASE_BUFFERS);
    bool ok = true;
    if (o != NULL && o->ca_file != NULL) {
        if (!SSL_CTX_load_verify_locations(t->ctx, o->ca_file, NULL)) {
            ssl_reason(why, sizeof(why));
            snprintf(err, cap, "the CA file %s: %s", o->ca_file, why);
            ok = false;
        }
    } else if (!SSL_CTX_set_default_verify_paths(t->ctx)) {
        ssl_reason(why, sizeof(why));
        snprintf(err, cap, "the system's CAs: %s", why);
        ok = false;
    }
    if (ok && o != NULL && o->cert_file != NULL) {
        const char *key = o->key_file ? o->key_file : o->cert_file;
        if (!SSL_CTX_use_certificate_chain_file(t->ctx, o->cert_file) ||
            !SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) ||
            !SSL_CTX_check_private_key(t->ctx)) {
            ssl_reason(why, sizeof(why));
            snprintf(err, cap, "the client certificate %s (key %s): %s", o->cert_file, key, why);
            ok = false;
        }
    }
    if (!ok) {
        cl_tls_free(&t);
        return NULL;
    }
    SSL_CTX_set_verify(t->ctx, t->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    return t;
}

void cl_tls_free(struct cl_tls **tp) {
    struct cl_tls *t = *tp;
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    BIO_meth_free(t->bio);
    free(t);
    *tp = NULL;
}

void cl_tls_end(struct cl_conn *c) {
    if (c->tls == NULL)
        return;
    ERR_clear_error();
    if (SSL_is_init_finished(c->tls))
        SSL_shutdown(c->tls);       /* one try: the socket closes next */
    SSL_free(c->tls);
    ERR_clear_error();
    c->tls = NULL;
}

/* A session for c's new socket, checking the server's name when t says so. */
static bool start(struct cl_conn *c, const struct cl_tls *t) {
    SSL *ssl = SSL_new(t->ctx);
    BIO *bio = ssl ? BIO_new(t->bio) : NULL;
    if (bio == NULL) {
        SSL_free(ssl);
        return false;
    }
    BIO_set_data(bio, (void *)(intptr_t)c->fd);
    SSL_set_bio(ssl, bio, bio);
    const char *host = c->srv->host;
    struct in6_addr a6;
    struct in_addr a4;
    bool ip = inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
    if (!ip)
        SSL_set_tlsext_host_name(ssl, host);     /* SNI: names only */
    if (t->verify) {
        X509_VERIFY_PARAM *p = SSL_get0_param(ssl);
        if (!(ip ? X509_VERIFY_PARAM_set1_ip_asc(p, host) : SSL_set1_host(ssl, host))) {
            SSL_free(ssl);
            return false;
        }
    }
    SSL_set_connect_state(ssl);
    c->tls = ssl;
    return true;
}

int cl_tls_handshake(struct cl_conn *c, int *events) {
    const struct cl_tls *t = c->h->cfg->tls;
    if (c->tls == NULL && !start(c, t)) {
        ERR_clear_error();
        snprintf(c->h->last_error.text, sizeof(c->h->last_error.text), "%s: TLS: out of memory",
                 c->srv->name);
        return -1;
    }
    ERR_clear_error();              /* SSL_get_error() reads the thread's queue first */
    int r = SSL_do_handshake(c->tls);
    if (r == 1)
        return 1;
    int e = SSL_get_error(c->tls, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        *events = e == SSL_ERROR_WANT_READ ? EV_READ : EV_READ | EV_WRITE;
        return 0;
    }
    char why[256];
    long v = SSL_get_verify_result(c->tls);
    if (v != X509_V_OK)
        snprintf(why, sizeof(why), "%s", X509_verify_cert_error_string(v));
    else
        ssl_reason(why, sizeof(why));
    ERR_clear_error();
    snprintf(c->h->last_error.text, sizeof(c->h->last_error.text), "%s: TLS handshake: %.100s",
             c->srv->name, why);
    return -1;
}

/* A failed SSL_read or SSL_write as recv() and send() say it: -1 and errno, or 0 at the end. */
static ssize_t failed(struct cl_conn *c, int r) {
    int e = SSL_get_error(c->tls, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    ERR_clear_error();
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    errno = ECONNRESET;
    return -1;
}

ssize_t cl_tls_recv(struct cl_conn *c, char *buf, size_t n) {
    ERR_clear_error();
    int r = SSL_read(c->tls, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    return r > 0 ? r : failed(c, r);
}

ssize_t cl_tls_send(struct cl_conn *c, const char *buf, size_t n) {
    ERR_clear_error();
    int r = SSL_write(c->tls, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    return r > 0 ? r : failed(c, r);
}
