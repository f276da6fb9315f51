/*
 * metrics.h -- cellard's Prometheus exposition (--metrics), made from the
 * lines of stats_collect() and the per-worker counters (metrics.c).
 *
 * metrics_render() runs on core/httpd's thread; it reads only what
 * stats_collect() reads and allocates only its text.
 */
#ifndef CELLAR_SERVER_METRICS_H
#define CELLAR_SERVER_METRICS_H

#include "core/text.h"

/* The render callback of core/httpd.h; arg is the struct server. */
void metrics_render(void *arg, struct text *t);

#endif
