/*
 * tls.c -- cellar-bench's --tls: its connections speak TLS (OpenSSL).
 *
 * The handshake is done when a connection opens, before the measurement,
 * on the still blocking socket; afterwards each read takes every record
 * the socket has (OpenSSL keeps a record it read but did not hand over,
 * which the socket's readiness would not announce again) and each write
 * what the write buffer holds.  The server's certificate is not checked:
 * the generator measures the server, it does not trust it.
 */
#include <errno.h>
#include <stdio.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tools/bench/bench.h"

void *bench_tls_ctx(void) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx != NULL) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
        SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                  SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
    return ctx;
}

void bench_tls_ctx_free(void *ctx) {
    SSL_CTX_free(ctx);
}

void *bench_tls_connect(void *ctx, int fd, char *err, size_t cap) {
    SSL *ssl = SSL_new(ctx);
    if (ssl == NULL || !SSL_set_fd(ssl, fd) || SSL_connect(ssl) != 1) {
        unsigned long e = ERR_get_error();
        snprintf(err, cap, "TLS handshake: %s", e ? ERR_reason_error_string(e) : "failed");
        ERR_clear_error();
        SSL_free(ssl);
        return NULL;
    }
    return ssl;
}

void bench_tls_close(void *ssl) {
    SSL_free(ssl);
}

/* -1 with errno EAGAIN for a wait, 0 at the end, else -1 with errno. */
static ssize_t failed(SSL *ssl, int r) {
    int e = SSL_get_error(ssl, r);
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    errno = ECONNRESET;
    return -1;
}

ssize_t bench_tls_read(void *ssl, char *buf, size_t n) {
    int r = SSL_read(ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    return r > 0 ? r : failed(ssl, r);
}

ssize_t bench_tls_write(void *ssl, const char *buf, size_t n) {
    int r = SSL_write(ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    return r > 0 ? r : failed(ssl, r);
}
