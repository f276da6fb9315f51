#include "core/uring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int bufring_init(struct bufring *r, struct io_uring *ring, unsigned n, size_t size,
                 unsigned short bgid) {
    memset(r, 0, sizeof(*r));
    void *br = mmap(NULL, n * sizeof(struct io_uring_buf), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (br == MAP_FAILED)
        return -ENOMEM;
    r->br = br;
    r->n = n;
    r->size = size;
    r->bufs = malloc((size_t)n * size);
    if (r->bufs == NULL)
        return -ENOMEM;
    struct io_uring_buf_reg reg = {.ring_addr = (uintptr_t)br, .ring_entries = n, .bgid = bgid};
    int rc = io_uring_register_buf_ring(ring, &reg, 0);
    if (rc != 0)
        return rc < 0 ? rc : -EINVAL;
    io_uring_buf_ring_init(r->br);
    for (unsigned i = 0; i < n; i++)
        io_uring_buf_ring_add(r->br, r->bufs + (size_t)i * size, (unsigned)size,
                              (unsigned short)i, io_uring_buf_ring_mask(n), (int)i);
    io_uring_buf_ring_advance(r->br, (int)n);
    return 0;
}

void bufring_deinit(struct bufring *r) {
    if (r->br != NULL)
        munmap(r->br, r->n * sizeof(struct io_uring_buf));
    free(r->bufs);
    memset(r, 0, sizeof(*r));
}

unsigned uring_take(struct io_uring *ring, struct uring_done *out, unsigned max) {
    unsigned head, n = 0;
    struct io_uring_cqe *cqe;
    io_uring_for_each_cqe(ring, head, cqe) {
        out[n].data = cqe->user_data;
        out[n].res = cqe->res;
        out[n].flags = cqe->flags;
        if (++n == max)
            break;
    }
    io_uring_cq_advance(ring, n);
    return n;
}
