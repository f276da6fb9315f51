/*
 * msg_meta.c -- the meta wire: struct msg as memcached's meta commands.
 *
 *   get / gets            mg k v f [c]            VA n f<flags> [c<cas>] / data, or EN
 *   gat / gats            mg k v f [c] T<e>       the same, after touching
 *   touch                 mg k T<e>               HD (TOUCHED), EN (NOT_FOUND)
 *   set add replace       ms k n F<f> T<e> MS|ME|MR     HD (STORED), NS
 *   append prepend        ms k n MA|MP            HD, NS (flags and TTL kept); a
 *                                                 text client's (text_form): the
 *                                                 text command, STORED, NOT_STORED
 *   cas                   ms k n F<f> T<e> C<cas>       HD, NS, EX, NF
 *   delete                md k                    HD (DELETED), NF
 *   delete with a hold    delete k <hold>         DELETED, NOT_FOUND (text: meta has
 *                                                 no hold-off; cellard -o delete_hold)
 *   incr / decr           ma k [MD] D<d> v        VA n / digits (NUMBER), NF
 *   lease-get             mg k v f c t N<e>       VA ... [W] [Z] [X], or EN
 *   lease-set             ms k n F<f> T<e> C<token>     HD, NS, EX, NF
 *   flush_all / version   the text commands; OK, VERSION <text>
 *   stats [group]         the text command and reply (msg_text_parse_stats)
 *
 * Any request may also be answered by ERROR, CLIENT_ERROR or SERVER_ERROR.
 * No request carries q, so every one gets exactly one reply.
 *
 * What memcached 1.6.18 does with these (observed on Debian's build):
 *   - ms with MA or MP ignores F and T: the item keeps its flags and TTL,
 *     as the text protocol's append does; so they are not sent at all,
 *     and a server that read them could not change the text semantics.
 *   - T-1 (and N-1) are accepted: the item is expired at once.
 *   - ms C0 answers EX for an existing item, as `cas k 0 0 1 0` answers
 *     EXISTS; ms C on a missing item answers NF.
 *   - An item marked stale (md I) gets X and then W or Z on every mg,
 *     with or without N, and "HD Z X" for a touch; so W, Z and X are
 *     read on every mg reply, not only a lease-get's.
 *   - A lease-set is a compare-and-set on the token: a token that is no
 *     longer the item's CAS (the item was invalidated by md I, or stored
 *     again, after the lease was won) answers EX, a deleted item NF, so a
 *     delete since the lease was issued makes the fill fail, as the
 *     paper's leases do.  (With ms's I flag memcached would store such a
 *     fill and keep the item stale; that is not sent.)
 *   - The lease-get that wins on a miss (N vivifies an empty item) shows
 *     t-1 although the placeholder expires after N's seconds; the next
 *     one shows the TTL ("VA 0 f0 c11 t-1 W", then "... t30 Z").  N0 (a
 *     lease exptime of 0) makes a placeholder that never expires.
 *   - flush_all and version are answered in text ("OK", "VERSION 1.6.18")
 *     on a meta connection.
 *
 * Replies are read with mc_meta_parse_resp(); this file only checks that
 * a reply is one the request allows -- its code, and exactly the return
 * flags the request asked for -- and maps it to the text protocol's words.
 */
#include "protocol/msg.h"

#include <limits.h>
#include <string.h>

#include "protocol/mc_meta.h"
#include "protocol/mc_meta_resp.h"
#include "protocol/mc_put.h"

/* ---------------------------------------------------------------------- */
/* Requests                                                                 */
/* ---------------------------------------------------------------------- */

/*
 * The flags after "mg <key>" for each op that is an mg.  Where the string
 * ends in T or N, the op's exptime follows it.
 */
static const char *const mg_flags[MSG_OP_COUNT] = {
    [MSG_GET] = " v f",         [MSG_GETS] = " v f c",
    [MSG_GAT] = " v f T",       [MSG_GATS] = " v f c T",
    [MSG_TOUCH] = " T",         [MSG_LEASE_GET] = " v f c t N",
};

/* A get-family request that asks for the remaining TTL (the lease-get always does). */
static inline bool asks_ttl(const struct msg *m) {
    return m->want_ttl && (m->op == MSG_GET || m->op == MSG_GETS || m->op == MSG_GAT ||
                           m->op == MSG_GATS);
}

static void fmt_mg(struct mc_put *w, const struct msg *m) {
    const char *f = mg_flags[m->op];
    size_t n = strlen(f);
    MC_PUT_LIT(w, "mg ");
    mc_put(w, m->key.p, m->key.len);
    if (asks_ttl(m))
        MC_PUT_LIT(w, " t");
    mc_put(w, f, n);
    if (f[n - 1] == 'T' || f[n - 1] == 'N')
        mc_put_i64(w, m->exptime);
    if (m->op == MSG_TOUCH && m->want_cas)
        MC_PUT_LIT(w, " c f");      /* binary's touch answers both */
}

/* The M token of each ms op; append and prepend carry no F or T. */
static const char *const ms_mode[MSG_OP_COUNT] = {
    [MSG_SET] = " MS",    [MSG_ADD] = " ME",    [MSG_REPLACE] = " MR",
    [MSG_APPEND] = " MA", [MSG_PREPEND] = " MP",
};

/*
 * "ms <key> <vlen>" then F and T unless the op appends, then the mode
 * or, for cas and lease-set, the C token.
 */
static void fmt_ms(struct mc_put *w, const struct msg *m) {
    MC_PUT_LIT(w, "ms ");
    mc_put(w, m->key.p, m->key.len);
    MC_PUT_LIT(w, " ");
    mc_put_u64(w, m->value.len);
    if (m->op != MSG_APPEND && m->op != MSG_PREPEND) {
        MC_PUT_LIT(w, " F");
        mc_put_u64(w, m->flags);
        MC_PUT_LIT(w, " T");
        mc_put_i64(w, m->exptime);
    }
    if (m->op != MSG_CAS && m->op != MSG_LEASE_SET)
        mc_put(w, ms_mode[m->op], 3);
    if (m->op == MSG_CAS || m->op == MSG_LEASE_SET || (msg_op_compares(m->op) && m->cas)) {
        MC_PUT_LIT(w, " C");
        mc_put_u64(w, m->cas);
    }
    if (m->want_cas)
        MC_PUT_LIT(w, " c");
}

static void fmt_other(struct mc_put *w, const struct msg *m) {
    switch (m->op) {
    case MSG_DELETE:
        if (m->hold) {                  /* meta has no hold-off: the text delete says it */
            MC_PUT_LIT(w, "delete ");
            mc_put(w, m->key.p, m->key.len);
            MC_PUT_LIT(w, " ");
            mc_put_u64(w, m->hold);
            break;
        }
        MC_PUT_LIT(w, "md ");
        mc_put(w, m->key.p, m->key.len);
        if (m->cas != 0) {
            MC_PUT_LIT(w, " C");
            mc_put_u64(w, m->cas);
        }
        break;
    case MSG_INCR: case MSG_DECR:
        MC_PUT_LIT(w, "ma ");
        mc_put(w, m->key.p, m->key.len);
        if (m->op == MSG_DECR)
            MC_PUT_LIT(w, " MD");
        MC_PUT_LIT(w, " D");
        mc_put_u64(w, m->delta);
        MC_PUT_LIT(w, " v");
        if (m->want_cas)
            MC_PUT_LIT(w, " c");
        if (m->cas != 0) {
            MC_PUT_LIT(w, " C");
            mc_put_u64(w, m->cas);
        }
        break;
    case MSG_FLUSH_ALL:
        MC_PUT_LIT(w, "flush_all");
        if (m->exptime != 0) {
            MC_PUT_LIT(w, " ");
            mc_put_i64(w, m->exptime);
        }
        break;
    default: /* MSG_VERSION */
        MC_PUT_LIT(w, "version");
        break;
    }
}

/*
 * A raw meta command: "m<c> <key>[ <datalen>][ <flags>]\r\n".  Refused:
 * a command other than mg ms md ma, a control byte in the flags, and a q
 * token, whose silence would break the one reply per request that
 * connections match replies by.
 */
static size_t fmt_raw(char *out, size_t cap, const struct msg *m) {
    char c = m->meta_cmd;
    struct mc_span f = m->meta_flags;
    if (!msg_meta_ok(c, f))
        return 0;
    struct mc_put w = MC_PUT_INIT(out, cap);
    mc_put(&w, "m", 1);
    mc_put(&w, &c, 1);
    MC_PUT_LIT(&w, " ");
    mc_put(&w, m->key.p, m->key.len);
    if (c == 's') {
        MC_PUT_LIT(&w, " ");
        mc_put_u64(&w, m->value.len);
    }
    if (f.len) {
        MC_PUT_LIT(&w, " ");
        mc_put(&w, f.p, f.len);
    }
    if (m->meta_quiet && c != 's')      /* ms's mn would have to follow its value */
        MC_PUT_LIT(&w, " q\r\nmn");
    MC_PUT_LIT(&w, "\r\n");
    return mc_put_len(&w, out);
}

/*
 * A raw meta command's reply, whatever flags it carries: HD, VA (with its
 * value) and MN are META; EN, NF, NS and EX answer as the text words do.
 * The code and the return flags (as text) go back as they came.
 */
static bool map_raw(struct msg_reply *r, const struct msg *m, const struct mc_meta_resp *e) {
    /* me answers ME or EN; ME answers nothing else */
    if ((m->meta_cmd == 'e') != (e->code == MC_META_CODE_ME) &&
        !(m->meta_cmd == 'e' && e->code == MC_META_CODE_EN))
        return false;
    static const struct { enum mc_meta_code code; char name[3]; enum msg_res res; } map[] = {
        {MC_META_CODE_HD, "HD", MSG_RES_META},      {MC_META_CODE_VA, "VA", MSG_RES_META},
        {MC_META_CODE_MN, "MN", MSG_RES_META},      {MC_META_CODE_EN, "EN", MSG_RES_MISS},
        {MC_META_CODE_NF, "NF", MSG_RES_NOT_FOUND}, {MC_META_CODE_NS, "NS", MSG_RES_NOT_STORED},
        {MC_META_CODE_EX, "EX", MSG_RES_EXISTS},    {MC_META_CODE_ME, "ME", MSG_RES_META},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (map[i].code != e->code)
            continue;
        r->res = map[i].res;
        memcpy(r->code, map[i].name, 2);
        r->value = e->value;
        if (e->code == MC_META_CODE_ME) {
            r->msg = e->msg;            /* me's answer: the rest of its line */
        } else if (e->nflags) {
            const struct mc_meta_rflag *a = &e->flags[0], *z = &e->flags[e->nflags - 1];
            const char *from = a->arg.p - 1, *to = z->arg.p + z->arg.len;
            r->msg = (struct mc_span){from, (size_t)(to - from)};
        }
        return true;
    }
    return false;
}

/*
 * A key with a space or control byte (a binary client's, through the
 * router) travels in base64 with the b flag, which memcached decodes; the
 * reply does not echo the key, so nothing else changes.
 */
/*
 * A text-form request the text command can say: a get or touch (else an
 * mg), an append or prepend that compares no cas and wants none back
 * (else an ms MA|MP: memcached 1.6.18 drops the item when an ms's value
 * is too large for it, but keeps it for the text command).
 */
static inline bool as_text(const struct msg *m) {
    if (!m->text_form || m->want_ttl || m->want_cas || !msg_key_line_ok(m->key))
        return false;
    if (m->op == MSG_APPEND || m->op == MSG_PREPEND)
        return m->cas == 0 && msg_key_ok(m->key);
    return m->op == MSG_GET || m->op == MSG_GETS || m->op == MSG_GAT || m->op == MSG_GATS ||
           m->op == MSG_TOUCH;
}

/*
 * The ascii wire (mcrouter's default protocol): everything the text
 * protocol can say goes as the text command, so that a backend speaking
 * only text works; what it cannot (a lease, a raw meta command, a TTL or
 * cas asked back, a compared cas, a key only base64 can carry) as meta,
 * which memcached 1.6 reads on the same connection.
 */
static inline bool ascii_text(const struct msg *m) {
    switch (m->op) {
    case MSG_LEASE_GET: case MSG_LEASE_SET: case MSG_META: case MSG_STATS:
        return false;
    default:
        break;
    }
    if ((unsigned)m->op >= MSG_OP_COUNT || m->want_ttl || m->want_cas)
        return false;
    if (msg_op_keyed(m->op) && !msg_key_line_ok(m->key))
        return false;
    if (msg_op_compares(m->op) && m->cas != 0)
        return false;
    return !msg_carries_value(m) || m->value.len <= INT_MAX - 2;
}

static size_t wire_fmt(bool (*text)(const struct msg *), char *out, size_t cap,
                       const struct msg *m, uint32_t opaque) {
    if ((unsigned)m->op >= MSG_OP_COUNT)
        return 0;
    char b64[MC_KEY_MAX];
    struct msg enc;
    bool b = false;
    if (msg_op_keyed(m->op) && !msg_key_ok(m->key)) {
        /* a key with control bytes goes as it is (a meta token may hold them,
           and a text client's was sent so); one with a byte that would end
           the token or the line, only in base64 (not a raw command's) */
        if (!msg_key_any(m->key))
            return 0;
        if (msg_key_line_ok(m->key))
            goto plain;
        if (m->op == MSG_META || m->key.len > MSG_META_B64_KEY_MAX ||
            (m->op == MSG_DELETE && m->hold))
            return 0;
        enc = *m;
        enc.key = (struct mc_span){b64, mc_meta_b64_encode(m->key.p, m->key.len, b64)};
        m = &enc;
        b = true;
    }
plain:
    if (msg_op_stores(m->op) && m->value.len > UINT32_MAX)
        return 0;
    if (m->op == MSG_STATS)
        return msg_text_fmt_stats(out, cap, m);
    if (m->op == MSG_META)
        return fmt_raw(out, cap, m);
    if (!b && text(m))
        return msg_wire_text.fmt(out, cap, m, opaque);
    struct mc_put w = MC_PUT_INIT(out, cap);
    if (mg_flags[m->op] != NULL)
        fmt_mg(&w, m);
    else if (msg_op_stores(m->op))
        fmt_ms(&w, m);
    else
        fmt_other(&w, m);
    if (b)
        MC_PUT_LIT(&w, " b");
    MC_PUT_LIT(&w, "\r\n");
    return mc_put_len(&w, out);
}

/* ---------------------------------------------------------------------- */
/* Replies                                                                  */
/* ---------------------------------------------------------------------- */

/* 1..20 digits and nothing else, not above max. */
static bool span_u64(struct mc_span s, uint64_t max, uint64_t *out) {
    if (s.len == 0 || s.len > 20)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < s.len; i++) {
        unsigned d = (unsigned)((unsigned char)s.p[i] - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

/* t's token: "-1" for no expiry, else the seconds left. */
static bool span_ttl(struct mc_span s, int64_t *out) {
    uint64_t v;
    if (s.len == 2 && memcmp(s.p, "-1", 2) == 0) {
        *out = -1;
        return true;
    }
    if (!span_u64(s, INT64_MAX, &v))
        return false;
    *out = (int64_t)v;
    return true;
}

static inline bool is_mg(enum msg_op op) {
    return (unsigned)op < MSG_OP_COUNT && mg_flags[op] != NULL;
}

/*
 * The return flags an mg may answer with: those the request asked for,
 * and W, Z and X, which memcached adds to any mg of a stale or leased
 * item.  On VA the asked-for value flags (f, c, t) must all be there.
 */
static const char *mg_allowed(const struct msg *m) {
    bool t = asks_ttl(m);
    switch (m->op) {
    case MSG_GETS: case MSG_GATS: return t ? "fctWZX" : "fcWZX";
    case MSG_LEASE_GET:           return "fctWZX";
    case MSG_TOUCH:               return m->want_cas ? "cfWZX" : "WZX";
    default:                      return t ? "ftWZX" : "fWZX";
    }
}

/* Reads one mg return flag into r; false for a malformed token. */
static bool mg_flag(struct msg_reply *r, const struct mc_meta_rflag *f) {
    uint64_t v;
    switch (f->c) {
    case 'f':
        if (!span_u64(f->arg, UINT32_MAX, &v))
            return false;
        r->flags = (uint32_t)v;
        return true;
    case 'c':
        return span_u64(f->arg, UINT64_MAX, &r->cas);
    case 't':
        return span_ttl(f->arg, &r->ttl);
    default:                    /* W Z X: no token */
        if (f->arg.len != 0)
            return false;
        r->won |= f->c == 'W';
        r->token_sent |= f->c == 'Z';
        r->stale |= f->c == 'X';
        return true;
    }
}

/* A letter's bit in a set of flags: A..Z are 0..25, a..z 26..51. */
static inline uint64_t flag_bit(char c) {
    return (uint64_t)1 << (c >= 'a' ? c - 'a' + 26 : c - 'A');
}

/*
 * An mg's reply: VA (HIT; not for a touch, which asks for no value), HD
 * (TOUCHED; only a touch), EN (MISS, or NOT_FOUND for a touch; no flags).
 * Each flag at most once, each one the request allows.
 */
static bool map_mg(struct msg_reply *r, const struct msg *m, const struct mc_meta_resp *e) {
    bool touch = m->op == MSG_TOUCH;
    if (e->code == MC_META_CODE_EN) {
        r->res = touch ? MSG_RES_NOT_FOUND : MSG_RES_MISS;
        return e->nflags == 0;
    }
    if (e->code != (touch ? MC_META_CODE_HD : MC_META_CODE_VA))
        return false;
    const char *allowed = mg_allowed(m);
    uint64_t seen = 0;
    for (int i = 0; i < e->nflags; i++) {
        const struct mc_meta_rflag *f = &e->flags[i];
        uint64_t bit = flag_bit(f->c);
        if ((seen & bit) || strchr(allowed, f->c) == NULL || !mg_flag(r, f))
            return false;
        seen |= bit;
    }
    /* The value flags asked for are the letters before W in allowed. */
    for (const char *a = allowed; !touch && *a != 'W'; a++)
        if (!(seen & flag_bit(*a)))
            return false;
    r->res = touch ? MSG_RES_TOUCHED : MSG_RES_HIT;
    r->value = e->value;
    return true;
}

/*
 * The return flags of an ms, md or ma: none, or the c that want_cas asked
 * for (memcached sends it on success only).
 */
static bool cas_flags(struct msg_reply *r, const struct msg *m, const struct mc_meta_resp *e) {
    if (e->nflags == 0)
        return true;
    return m->want_cas && e->nflags == 1 && e->flags[0].c == 'c' &&
           span_u64(e->flags[0].arg, UINT64_MAX, &r->cas);
}

/*
 * A storage op's reply, without return flags (but c when asked for): HD or
 * NS for all, EX and NF only where the request carried a C token.
 */
static bool map_ms(struct msg_reply *r, const struct msg *m, const struct mc_meta_resp *e) {
    enum msg_op op = m->op;
    bool with_cas = op == MSG_CAS || op == MSG_LEASE_SET || (msg_op_compares(op) && m->cas);
    switch (e->code) {
    case MC_META_CODE_HD: r->res = MSG_RES_STORED; break;
    case MC_META_CODE_NS: r->res = MSG_RES_NOT_STORED; break;
    case MC_META_CODE_EX: r->res = with_cas ? MSG_RES_EXISTS : MSG_RES_NONE; break;
    case MC_META_CODE_NF: r->res = with_cas ? MSG_RES_NOT_FOUND : MSG_RES_NONE; break;
    default: return false;
    }
    return r->res != MSG_RES_NONE && cas_flags(r, m, e);
}

/* md: HD (DELETED) or NF; ma: VA with the new value's digits, or NF. */
static bool map_md_ma(struct msg_reply *r, const struct msg *m, const struct mc_meta_resp *e) {
    enum msg_op op = m->op;
    if (!cas_flags(r, m, e))
        return false;
    if (e->code == MC_META_CODE_NF) {
        r->res = MSG_RES_NOT_FOUND;
        return true;
    }
    if (e->code == MC_META_CODE_EX && m->cas != 0) {
        r->res = MSG_RES_EXISTS;
        return true;
    }
    if (op == MSG_DELETE) {
        r->res = MSG_RES_DELETED;
        return e->code == MC_META_CODE_HD;
    }
    r->res = MSG_RES_NUMBER;
    return e->code == MC_META_CODE_VA && span_u64(e->value, UINT64_MAX, &r->number);
}

/*
 * The text replies of flush_all ("OK"), version ("VERSION <text>") and a
 * delete with a hold-off ("DELETED", "NOT_FOUND").
 */
static bool map_text(struct msg_reply *r, enum msg_op op, const struct mc_meta_resp *e) {
    struct mc_span l = e->msg;
    if (e->code != MC_META_CODE_OTHER)
        return false;
    if (op == MSG_DELETE) {
        bool del = l.len == 7 && memcmp(l.p, "DELETED", 7) == 0;
        r->res = del ? MSG_RES_DELETED : MSG_RES_NOT_FOUND;
        return del || (l.len == 9 && memcmp(l.p, "NOT_FOUND", 9) == 0);
    }
    if (op == MSG_FLUSH_ALL) {
        r->res = MSG_RES_OK;
        return l.len == 2 && memcmp(l.p, "OK", 2) == 0;
    }
    if (l.len < 7 || memcmp(l.p, "VERSION", 7) != 0 || (l.len > 7 && l.p[7] != ' '))
        return false;
    size_t i = 7;
    while (i < l.len && l.p[i] == ' ')
        i++;
    r->res = MSG_RES_VERSION;
    r->msg = (struct mc_span){l.p + i, l.len - i};
    return true;
}

/* What the reply e to m says, in the text protocol's words; false if it cannot be m's. */
static bool map_reply(struct msg_reply *r, const struct msg *m, const struct mc_meta_resp *e) {
    switch (e->code) {
    case MC_META_CODE_ERROR:        r->res = MSG_RES_ERROR; break;
    case MC_META_CODE_CLIENT_ERROR: r->res = MSG_RES_CLIENT_ERROR; break;
    case MC_META_CODE_SERVER_ERROR: r->res = MSG_RES_SERVER_ERROR; break;
    default:
        if (m->op == MSG_META)
            return map_raw(r, m, e);
        if (is_mg(m->op))
            return map_mg(r, m, e);
        if (msg_op_stores(m->op))
            return map_ms(r, m, e);
        if (m->op == MSG_DELETE && m->hold)
            return map_text(r, m->op, e);
        if (m->op == MSG_DELETE || m->op == MSG_INCR || m->op == MSG_DECR)
            return map_md_ma(r, m, e);
        if (m->op == MSG_FLUSH_ALL || m->op == MSG_VERSION)
            return map_text(r, m->op, e);
        return false;
    }
    r->msg = e->msg;
    return true;
}

/*
 * me's answer, "ME <key> exp=... size=<n>\r\n".  memcached prints the key
 * raw when its item lost the base64 bit, so a key sent with b may come
 * back holding spaces, CR or LF; cutting the line at its first LF would
 * let a crafted key pass the rest off as the next request's reply.  So the
 * line is read past the key this request named, in any of the forms it
 * can be printed (as sent, decoded, in base64: an item stored under a
 * base64 key prints it so even to a plain `me`), and ends at the
 * first CR LF after it.  ERROR when no form fits.
 */
static enum mc_parse me_parse(struct msg_reply *r, const struct msg *m, const char *buf,
                              size_t len, size_t *consumed) {
    char raw[MC_KEY_MAX + 4], canon[2 * MC_KEY_MAX + 8];
    struct mc_span forms[3] = {m->key};
    int nforms = 1;
    struct mc_span k = m->key;      /* the key itself: decoded when sent with b */
    if (m->meta_flags.len && memchr(m->meta_flags.p, 'b', m->meta_flags.len)) {
        if (m->key.len > MSG_META_B64_KEY_MAX)
            return MC_PARSE_ERROR;
        k = (struct mc_span){raw, mc_meta_b64_decode(m->key.p, m->key.len, raw)};
        forms[nforms++] = k;
    }
    /* an item stored under a base64 key prints it in base64, whatever this request sent */
    if (k.len <= MC_KEY_MAX)
        forms[nforms++] = (struct mc_span){canon, mc_meta_b64_encode(k.p, k.len, canon)};
    size_t scan = len < MC_META_RESP_LINE_MAX ? len : MC_META_RESP_LINE_MAX;
    bool partial = false;
    for (int i = 0; i < nforms; i++) {
        size_t head = 3 + forms[i].len + 5;         /* "ME " key " exp=" */
        char want[3 + 2 * MC_KEY_MAX + 8 + 5];
        memcpy(want, "ME ", 3);
        memcpy(want + 3, forms[i].p, forms[i].len);
        memcpy(want + 3 + forms[i].len, " exp=", 5);
        if (memcmp(buf, want, len < head ? len : head) != 0)
            continue;
        if (len < head) {
            partial = true;
            continue;
        }
        const char *crlf = memmem(buf + head, scan - head, "\r\n", 2);
        if (crlf == NULL) {
            partial = true;
            continue;
        }
        *r = (struct msg_reply){.ttl = -1, .res = MSG_RES_META};
        memcpy(r->code, "ME", 2);
        r->msg = (struct mc_span){buf + 3, (size_t)(crlf - buf - 3)};
        *consumed = (size_t)(crlf + 2 - buf);
        return MC_PARSE_OK;
    }
    return partial && len < MC_META_RESP_LINE_MAX ? MC_PARSE_NEED_MORE : MC_PARSE_ERROR;
}

static enum mc_parse wire_parse(bool (*text)(const struct msg *), struct msg_reply *r,
                                const struct msg *m, uint32_t opaque, const char *buf,
                                size_t len, size_t *consumed) {
    if (m->op == MSG_STATS)         /* the text command, and its text reply */
        return msg_text_parse_stats(r, buf, len, consumed);
    if (text(m))
        return msg_wire_text.parse(r, m, opaque, buf, len, consumed);
    *consumed = 0;                  /* NEED_MORE and ERROR consume nothing, as msg.h says */
    *r = (struct msg_reply){.ttl = -1};
    if (m->op == MSG_META && m->meta_cmd == 'e' && len >= 3 && memcmp(buf, "ME ", 3) == 0) {
        enum mc_parse rc = me_parse(r, m, buf, len, consumed);
        if (rc != MC_PARSE_OK)
            *r = (struct msg_reply){.ttl = -1};
        return rc;
    }
    struct mc_meta_resp e;
    size_t n = 0;
    enum mc_parse rc = mc_meta_parse_resp(&e, buf, len, &n);
    if (rc != MC_PARSE_OK)
        return rc == MC_PARSE_NEED_MORE ? rc : MC_PARSE_ERROR;
    if (!map_reply(r, m, &e)) {
        *r = (struct msg_reply){.ttl = -1};
        return MC_PARSE_ERROR;
    }
    if (m->op == MSG_META && m->meta_quiet && m->meta_cmd != 's') {
        /* the answer q let through, then the MN after it; or the MN alone */
        if (e.code == MC_META_CODE_MN) {
            r->silent = true;
        } else {
            struct mc_meta_resp mn;
            size_t n2 = 0;
            rc = mc_meta_parse_resp(&mn, buf + n, len - n, &n2);
            if (rc != MC_PARSE_OK || mn.code != MC_META_CODE_MN) {
                *r = (struct msg_reply){.ttl = -1};
                return rc == MC_PARSE_NEED_MORE ? rc : MC_PARSE_ERROR;
            }
            n += n2;
        }
    }
    *consumed = n;
    return MC_PARSE_OK;
}

static size_t meta_fmt(char *out, size_t cap, const struct msg *m, uint32_t opaque) {
    return wire_fmt(as_text, out, cap, m, opaque);
}

static enum mc_parse meta_parse(struct msg_reply *r, const struct msg *m, uint32_t opaque,
                                const char *buf, size_t len, size_t *consumed) {
    return wire_parse(as_text, r, m, opaque, buf, len, consumed);
}

/* A text-form get goes as the text command (as_text), and batches as the text wire's do. */
static bool meta_batches(const struct msg *m) {
    return as_text(m) && msg_text_batches(m);
}

const struct msg_wire msg_wire_meta = {"meta", meta_fmt, meta_parse, "\r\n", 2,
                                       msg_text_stat_next, meta_batches,
                                       msg_text_parse_batched};

static size_t ascii_fmt(char *out, size_t cap, const struct msg *m, uint32_t opaque) {
    return wire_fmt(ascii_text, out, cap, m, opaque);
}

static enum mc_parse ascii_parse(struct msg_reply *r, const struct msg *m, uint32_t opaque,
                                 const char *buf, size_t len, size_t *consumed) {
    return wire_parse(ascii_text, r, m, opaque, buf, len, consumed);
}

static bool ascii_batches(const struct msg *m) {
    return ascii_text(m) && msg_text_batches(m);
}

const struct msg_wire msg_wire_ascii = {"ascii", ascii_fmt, ascii_parse, "\r\n", 2,
                                        msg_text_stat_next, ascii_batches,
                                        msg_text_parse_batched};
