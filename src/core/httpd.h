/*
 * httpd.h -- a very small HTTP/1.0 listener for one document: the
 * Prometheus /metrics page that cellard, cellar-router and cellar-squeal
 * serve with --metrics.
 *
 * httpd_create() binds HOST:PORT and starts one thread that accepts and
 * answers one client at a time: GET (or HEAD) of the path calls render on
 * that thread and sends what it wrote (200, text/plain; version=0.0.4);
 * another path gets 404, another method 405, a request line it cannot
 * read 400.  A request head is at most HTTPD_REQ_MAX bytes and must
 * arrive within HTTPD_READ_MS; each read and write waits at most a second,
 * and the whole exchange at most HTTPD_CONN_MS (a client that reads the
 * answer a trickle at a time is cut off then); then the connection is
 * closed.  Bind the port to a private address: a few clients that never
 * finish delay every scrape.  Scrapes are rare, so one at a time is
 * enough, and a slow or stuck client holds only this thread: the caller's
 * other threads never wait on it.  render must therefore read only what
 * other threads publish safely (atomics, or state under their locks).
 *
 * It allocates the struct, the thread and each answer's text; it blocks
 * only on its own thread.  httpd_destroy() shuts the socket down (which
 * wakes the blocking accept) and joins the thread.
 */
#ifndef CELLAR_CORE_HTTPD_H
#define CELLAR_CORE_HTTPD_H

#include <stdbool.h>
#include <stddef.h>

#include "core/text.h"

#define HTTPD_REQ_MAX 8192          /* the request line and headers */
#define HTTPD_READ_MS 3000          /* to read them, in all */
#define HTTPD_CONN_MS 10000         /* one connection, the answer's writing included */

/* Writes the document into t (empty on entry); runs on the listener's thread. */
typedef void (*httpd_render_fn)(void *arg, struct text *t);

struct httpd;

/*
 * Splits "HOST:PORT", "[v6]:PORT" or ":PORT" (every address) in place:
 * *host ("" for every address) and *port (digits, 1 to 65535).  false
 * when s is not of that form.
 */
bool httpd_split_hostport(char *s, char **host, char **port);

/*
 * Listens on hostport and serves path (e.g. "/metrics") from render(arg).
 * The listener, or NULL with a line in err ("expected HOST:PORT ...",
 * or the address and why it could not be bound).
 */
struct httpd *httpd_create(const char *hostport, const char *path, httpd_render_fn render,
                           void *arg, char *err, size_t errlen);

/* Stops the thread, closes the socket, frees *h and sets it NULL; NULL is fine. */
void httpd_destroy(struct httpd **h);

#endif
