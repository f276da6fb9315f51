/*
 * udp.h -- memcached's UDP transport: one socket per worker, 8-byte
 * frames (udp.c).
 *
 * main.c and worker.c open the sockets before the workers start; after
 * that each worker reads and answers only its own sockets, on its own
 * thread.  udp_send_reply() sends with sendmsg() and never blocks (a reply
 * the kernel will not take is lost, as a datagram may be).
 */
#ifndef CELLAR_SERVER_UDP_H
#define CELLAR_SERVER_UDP_H

#include <stddef.h>

struct conn;
struct server;
struct worker;

#define UDP_PAYLOAD 1392            /* reply bytes per datagram (1400 with the frame) */

/* One UDP socket bound to host:port with SO_REUSEPORT (-1 on error). */
int udp_open(const char *host, int port);
/* w's sockets, one per -l address when -U is set; -1 on error. */
int udp_open_worker(struct server *s, struct worker *w);
/* A frame header: the request id, or -1 when the datagram must be dropped. */
int udp_frame_parse(const unsigned char *d, size_t n);
/* c's pending output as framed datagrams to the peer of the datagram in hand. */
void udp_send_reply(struct conn *c);

#endif
