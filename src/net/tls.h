/*
 * tls.h -- TLS for the network core's stream connections, with OpenSSL.
 *
 * A server that listens with TLS gives its net_server one struct net_tls
 * (its certificate, key, CA and options, as memcached's -Z and ssl_*
 * settings name them); a listener marked tls hands its connections over
 * with it, and each such connection gets an SSL object that reads and
 * writes in place of read() and writev():
 *
 *   readable --> net_tls_read(): SSL_read() into rbuf, as many records as
 *                fit (the handshake happens inside the first ones)
 *   flush    --> net_tls_flush(): the output's pieces copied into the
 *                worker's buffer (ssl_wbuf_size) and SSL_write()n from it
 *
 * A TLS connection is always on epoll, even on a worker whose plain
 * connections are on io_uring: the kernel does not encrypt.  What the
 * application sees is the same: bytes in rbuf, replies in out.
 *
 * Certificates can be read again while the server runs
 * (net_tls_refresh(), memcached's refresh_certs): connections opened after
 * that present the new ones, those already open keep theirs.
 */
#ifndef CELLAR_NET_TLS_H
#define CELLAR_NET_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct net_conn;
struct net_worker;

/* What a server's TLS is made of: memcached's ssl_* settings, in its units. */
struct net_tls_config {
    const char *chain_cert;         /* PEM certificate chain */
    const char *key;                /* its private key */
    int keyformat;                  /* 1: PEM, 2: DER (OpenSSL's SSL_FILETYPE_*) */
    int verify_mode;                /* 0: none, 1: a client's certificate checked when it
                                       gives one, 2: required, 3: required, checked once */
    const char *ciphers;            /* OpenSSL's cipher list for TLS 1.2 and before; NULL */
    const char *ca_cert;            /* PEM file of the CAs a client's certificate may come
                                       from (also sent as the acceptable ones); NULL */
    unsigned wbuf_size;             /* bytes written per SSL_write() at most */
    bool session_cache;             /* resume sessions from a server-side cache */
    bool kernel_tls;                /* ask for the kernel's TLS offload */
    int min_version;                /* 0: TLS 1.0, 1: 1.1, 2: 1.2, 3: 1.3 */
};

struct net_tls;

/* A server's TLS from cfg, or NULL with the reason in err (memcached's words). */
struct net_tls *net_tls_create(const struct net_tls_config *cfg, char *err, size_t cap);
void net_tls_destroy(struct net_tls **t);
/* Reads the certificate, key and CA files again; false (and the old ones kept) with err. */
bool net_tls_refresh(struct net_tls *t, char *err, size_t cap);
/* Counters, any thread: handshakes that failed, sessions the cache made, and when
   (CLOCK_REALTIME seconds) the certificates were last read. */
uint64_t net_tls_handshake_errors(const struct net_tls *t);
uint64_t net_tls_new_sessions(const struct net_tls *t);
int64_t net_tls_refreshed(const struct net_tls *t);
/* "tlsv1.2", ... for min_version (0..3), as memcached prints it. */
const char *net_tls_version_name(int min_version);

/* ---- a connection, on its worker's thread ---- */

/* Gives c (just opened on a tls listener of its server) its SSL object: 0, or -1. */
int net_tls_conn_start(struct net_conn *c);
/* Frees c's SSL object (none: nothing), after a close_notify when notify and the
   socket takes it. */
void net_tls_conn_end(struct net_conn *c, bool notify);
/*
 * Reads what c's peer sent into buf[0..n): bytes read, 0 at the end of
 * the stream, -1 with errno (EAGAIN: nothing yet; c->tls_rwant_write set
 * when the handshake waits to write).  OpenSSL reads ahead (a record's
 * header and body, and what follows, in one read()): every record already
 * in hand that fits is taken, and c->tls_more set when one is left.
 */
ssize_t net_tls_read(struct net_conn *c, char *buf, size_t n);
/* Writes c's output as out_flush() does: 1 all written, 0 the socket is full, -1 error;
   *written gets the bytes of output written. */
int net_tls_flush(struct net_conn *c, size_t *written);
/*
 * Writes buf[0..n) on a connection's session from a thread that alone uses
 * it now (cellard's watch thread, the connection's reading paused): bytes
 * written, or -1 with errno (EAGAIN: the socket is full; retry with the
 * same bytes first).
 */
ssize_t net_tls_send(void *tls, const void *buf, size_t n);
/* Frees what the worker's connections shared (its write buffer). */
void net_tls_worker_free(struct net_worker *w);

#endif
