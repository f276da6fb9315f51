/*
 * mc_mcr.h -- mcrouter's own text commands, which memcached does not
 * have and only the router reads: a pure codec, as mc_text.h.
 *
 *   lease-get <key>*\r\n
 *     VALUE <key> <flags> <bytes>\r\n<data>\r\n          a hit
 *     LVALUE <key> <token> <flags> <bytes>\r\n<data>\r\n  a miss: fill it with
 *                                                         lease-set and token
 *                                                         (1: another client
 *                                                         fills; ask again)
 *     END\r\n
 *   lease-set <key> <token> <flags> <exptime> <bytes>\r\n<data>\r\n
 *     STORED\r\n | NOT_STORED\r\n
 *   metaget <key>\r\n
 *     META <key> age: <s>; exptime: <unix time>; from: <host>; is_transient: 0;\r\n
 *     END\r\n
 *
 * A line that is none of them is left to mc_text_parse().
 */
#ifndef CELLAR_PROTOCOL_MC_MCR_H
#define CELLAR_PROTOCOL_MC_MCR_H

#include "protocol/mc_text.h"

/*
 * Does buf start one of mcrouter's commands (its word, then a space or
 * the line's end)?
 */
bool mc_mcr_line(const char *buf, size_t len);

/*
 * Parses such a line into req (cmd MC_CMD_LEASE_GET, _LEASE_SET or
 * _METAGET; the fields as mc_req says for them), as mc_text_parse()
 * would: MC_PARSE_OK, NEED_MORE, or ERROR with req->err
 * (MC_ERR_BAD_FORMAT) and the line consumed.  A lease-set's data block
 * follows the line (req->vlen bytes, then \r\n), as a set's.
 */
enum mc_parse mc_mcr_parse(struct mc_req *req, const char *buf, size_t len, size_t *consumed);

/* "LVALUE <key> <token> <flags> <bytes>\r\n" into out (MC_VALUE_LINE_MAX + 24 bytes). */
size_t mc_mcr_fmt_lvalue(char *out, const char *key, size_t nkey, uint64_t token,
                         uint32_t flags, uint32_t bytes);

/* "META <key> age: ...; exptime: <exptime>; from: unknown; is_transient: 0;\r\n"; the
 * age is "unknown" when age < 0.  out holds MC_VALUE_LINE_MAX + 96 bytes. */
size_t mc_mcr_fmt_meta(char *out, const char *key, size_t nkey, int64_t age, int64_t exptime);

#endif
