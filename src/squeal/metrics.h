/*
 * metrics.h -- cellar-squeal's --metrics listener: the shared one
 * (core/httpd.h) serving GET /metrics from a render callback (Prometheus
 * text format 0.0.4), which writes into a struct text (core/text.h:
 * text_printf, text_family).
 *
 * render runs on the listener's own thread, so it must only read what
 * other threads publish under their locks or as atomics.
 * FIXME: this file is only a name kept for the build (the Makefile lists
 * squeal/metrics.o); main.c could call httpd_create() itself.
 */
#ifndef CELLAR_SQUEAL_METRICS_H
#define CELLAR_SQUEAL_METRICS_H

#include <stddef.h>

#include "core/httpd.h"
#include "core/text.h"

typedef httpd_render_fn metrics_render_fn;

struct metrics {
    struct httpd *h;                /* NULL: not listening */
};

/* Listens on HOST:PORT ("[v6]:port", ":port" for any): 0, or -1 with err set. */
int metrics_start(struct metrics *m, const char *hostport, metrics_render_fn render, void *arg,
                  char *err, size_t errlen);

/* Stops the listener and joins its thread; a no-op when not started. */
void metrics_stop(struct metrics *m);

#endif
