/*
 * metrics.c -- cellar-squeal's --metrics listener (metrics.h): the shared
 * core/httpd.c, serving /metrics.
 */
#include "squeal/metrics.h"

int metrics_start(struct metrics *m, const char *hostport, metrics_render_fn render, void *arg,
                  char *err, size_t errlen) {
    m->h = httpd_create(hostport, "/metrics", render, arg, err, errlen);
    return m->h != NULL ? 0 : -1;
}

void metrics_stop(struct metrics *m) {
    httpd_destroy(&m->h);
}
