/*
 * window.c -- a handle's window: how many requests, and how many replies'
 * bytes, may be in flight at once over all its servers (the paper's
 * incast control, cellar.h's "Multi-gets").  The count grows by about one
 * per window's worth of answers and halves on a timeout, between the
 * configuration's window_min and window_max; the bytes bound divides
 * window_bytes by the running mean of the replies' sizes.  The handle's
 * thread only; no allocation.
 */
#include "client/handle_int.h"

#define REPLY_BYTES_WEIGHT 16           /* the running mean's weight of the past */

void cl_window_answered(struct cellar *h, size_t reply_bytes) {
    h->reply_bytes += ((double)reply_bytes - h->reply_bytes) / REPLY_BYTES_WEIGHT;
    h->window += 1.0 / h->window;
    if (h->window > h->cfg->window_max)
        h->window = h->cfg->window_max;
}

void cl_window_timeout(struct cellar *h) {
    h->window /= 2;
    if (h->window < h->cfg->window_min)
        h->window = h->cfg->window_min;
}

/* The requests the window lets be in flight: the count, or fewer by bytes. */
unsigned cl_window_now(const struct cellar *h) {
    unsigned limit = (unsigned)h->window;
    if (h->cfg->window_bytes > 0) {
        double by_bytes = h->cfg->window_bytes / (h->reply_bytes > 1 ? h->reply_bytes : 1);
        if (by_bytes < limit)
            limit = by_bytes < 1 ? 1 : (unsigned)by_bytes;
    }
    return limit;
}
