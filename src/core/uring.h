/*
 * uring.h -- pieces every io_uring loop here needs (the network core's,
 * cellar-bench's): a ring of provided receive buffers, and taking a batch
 * of completions out of the ring.
 *
 * A bufring is the memory behind IOSQE_BUFFER_SELECT: n buffers of size
 * bytes registered with a ring as buffer group bgid; the kernel picks one
 * when data arrives, names it in the completion, and the loop gives it
 * back with bufring_put() once the bytes are used.  Pages are touched only
 * where data lands.  Used by the ring's one submitting thread.
 */
#ifndef CELLAR_CORE_URING_H
#define CELLAR_CORE_URING_H

#include <liburing.h>
#include <stddef.h>
#include <stdint.h>

struct bufring {
    struct io_uring_buf_ring *br;
    char *bufs;
    unsigned n;                 /* a power of 2 */
    size_t size;
};

/* Registers n buffers of size bytes with ring as group bgid: 0 or a negative errno. */
int bufring_init(struct bufring *r, struct io_uring *ring, unsigned n, size_t size,
                 unsigned short bgid);
/* Frees the memory (the ring is gone, or no longer uses the group). */
void bufring_deinit(struct bufring *r);

/* The buffer a completion's IORING_CQE_F_BUFFER flags name. */
static inline char *bufring_at(const struct bufring *r, unsigned cqe_flags) {
    return r->bufs + (size_t)(cqe_flags >> IORING_CQE_BUFFER_SHIFT) * r->size;
}

/* Gives a buffer back to the kernel. */
static inline void bufring_put(struct bufring *r, const char *b) {
    unsigned bid = (unsigned)((size_t)(b - r->bufs) / r->size);
    io_uring_buf_ring_add(r->br, (void *)b, (unsigned)r->size, (unsigned short)bid,
                          io_uring_buf_ring_mask(r->n), 0);
    io_uring_buf_ring_advance(r->br, 1);
}

/* A completion, copied out of the ring. */
struct uring_done {
    uint64_t data;
    int res;
    unsigned flags;
};

/*
 * Copies up to max completions out of ring and frees their slots at once,
 * so that their handlers may submit (and complete) more.  Returns the count.
 */
unsigned uring_take(struct io_uring *ring, struct uring_done *out, unsigned max);

#endif
