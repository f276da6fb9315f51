/*
 * mc_num.h -- decimal numbers read the way memcached reads them.
 *
 * memcached parses every number of its text and meta protocols with
 * safe_strtoull / safe_strtoll and friends: libc's strtoull / strtoll in
 * base 10, then a check on what follows the digits.  These helpers give
 * the same answers on a (pointer, length) span, so a codec can read a
 * number out of its input buffer without a NUL-terminated copy.
 *
 * The rules, in the C locale memcached runs in:
 *   - leading whitespace (' ', \t \n \v \f \r) is skipped, then one
 *     optional '+' or '-';
 *   - at least one digit must follow; a value that does not fit in 64 bits
 *     is refused (ERANGE);
 *   - the digits must end the span or be followed by a whitespace byte
 *     (whatever follows that whitespace is ignored: "5\tz" reads as 5).
 *
 * mc_num_fmt_u64() writes them.  Pure functions: no allocation, no state,
 * safe from any thread.
 */
#ifndef CELLAR_PROTOCOL_MC_NUM_H
#define CELLAR_PROTOCOL_MC_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * safe_strtoull: an unsigned 64-bit number.  A leading '-' negates modulo
 * 2^64 as strtoull does; the result is refused only when it looks negative
 * as a signed number and the span holds a '-' anywhere (even after the
 * digits).  So "-1" is refused, "-0" is 0, "-18446744073709551615" is 1 and
 * "18446744073709551615\t-" is refused.  Returns false (and leaves *out
 * alone) when the span is not such a number.
 */
bool mc_num_u64(const char *p, size_t len, uint64_t *out);

/*
 * safe_strtoll (and safe_strtol, whose long is 64 bits on every platform
 * memcached runs on): any int64_t.  Returns false when the span is not
 * such a number or it does not fit.
 */
bool mc_num_i64(const char *p, size_t len, int64_t *out);

/*
 * Writes v in decimal at p (at most MC_NUM_U64_DIGITS bytes, no NUL) and
 * returns the byte after it: every reply's numbers, two digits a step.
 */
#define MC_NUM_U64_DIGITS 20
char *mc_num_fmt_u64(char *p, uint64_t v);

#endif
