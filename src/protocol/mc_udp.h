/*
 * mc_udp.h -- memcached's UDP frame header, for server and client alike.
 *
 *   [request id][sequence][total][reserved 0]   four big-endian u16, then data
 *
 * A request is one datagram (sequence 0 of 1); a reply is a message of
 * `total` datagrams numbered from 0, all with the request's id.  Pure,
 * header-only: cellard's UDP transport and libcellar's UDP gets both
 * read and write frames through these two calls.
 */
#ifndef CELLAR_PROTOCOL_MC_UDP_H
#define CELLAR_PROTOCOL_MC_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_UDP_HDR 8

struct mc_udp_frame {
    uint16_t id, seq, total;
};

/* Writes f's header into out[0..MC_UDP_HDR). */
static inline void mc_udp_frame_fmt(unsigned char *out, struct mc_udp_frame f) {
    out[0] = (unsigned char)(f.id >> 8);
    out[1] = (unsigned char)f.id;
    out[2] = (unsigned char)(f.seq >> 8);
    out[3] = (unsigned char)f.seq;
    out[4] = (unsigned char)(f.total >> 8);
    out[5] = (unsigned char)f.total;
    out[6] = out[7] = 0;
}

/* Reads the header of a datagram of n bytes; false when it is too short to have one. */
static inline bool mc_udp_frame_parse(const unsigned char *d, size_t n, struct mc_udp_frame *f) {
    if (n < MC_UDP_HDR)
        return false;
    f->id = (uint16_t)(d[0] << 8 | d[1]);
    f->seq = (uint16_t)(d[2] << 8 | d[3]);
    f->total = (uint16_t)(d[4] << 8 | d[5]);
    return true;
}

#endif
