/*
 * route_modify_key.c -- ModifyKeyRoute: sends requests on to its target
 * with their key changed, as mcrouter's does.  Of a key (its routing
 * prefix, if the client wrote one and a RootRoute took it off, apart):
 *
 *   replace_key_prefix R   a key starting with R: R becomes ensure_key_prefix
 *   ensure_key_prefix P    a key not starting with P gets P before it
 *                          (with modify_inplace, in place of its first
 *                          len(P) bytes)
 *   set_routing_prefix S   the routing prefix becomes S ("" none)
 *   set_key_suffix X       X after the key
 *
 * A key that grows past 250 bytes is answered SERVER_ERROR "ModifyKeyRoute:
 * invalid key: ...", as mcrouter answers it.  The child request carries its
 * own copy of the new key (and the routing prefix before it).
 */
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "protocol/mc_put.h"

#define PART_MAX 250

struct modify_key {
    struct route r;             /* children[0]: the target */
    bool set_rp, inplace, has_replace;
    char rp[PART_MAX + 1], prefix[PART_MAX + 1], replace[PART_MAX + 1], suffix[PART_MAX + 1];
};

static const struct modify_key *mk(const struct route *r) {
    return (const struct modify_key *)r;
}

struct mk_req {
    struct cl_req q;            /* first, so done() finds it */
    struct cl_req *parent;
    char bytes[];               /* the routing prefix, then the key */
};

static void mk_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct mk_req *c = (struct mk_req *)q;
    struct cl_req *parent = c->parent;
    free(c);
    parent->done(parent, status, rep);
}

static bool starts(struct mc_span k, const char *p) {
    size_t n = strlen(p);
    return k.len >= n && memcmp(k.p, p, n) == 0;
}

static void modify_key_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    const struct modify_key *m = mk(r);
    if (!msg_op_keyed(q->m.op) || q->m.op == MSG_META) {
        route_dispatch(r->children[0], h, q);
        return;
    }
    struct mc_span key = q->m.key, own = {key.p - q->m.prefix_len, q->m.prefix_len};
    struct mc_span rp = m->set_rp ? (struct mc_span){m->rp, strlen(m->rp)} : own;
    const char *head = "";
    if (m->has_replace && starts(key, m->replace)) {
        key.p += strlen(m->replace), key.len -= strlen(m->replace);
        head = m->prefix;
    } else if (!starts(key, m->prefix)) {
        if (m->inplace && key.len >= strlen(m->prefix))
            key.p += strlen(m->prefix), key.len -= strlen(m->prefix);
        head = m->prefix;
    } else if (!(m->set_rp && (rp.len != own.len || memcmp(rp.p, own.p, rp.len) != 0)) &&
               m->suffix[0] == '\0') {
        route_dispatch(r->children[0], h, q);   /* nothing to change */
        return;
    }
    size_t nh = strlen(head), ns = strlen(m->suffix), n = nh + key.len + ns;
    if (rp.len + n > MC_KEY_MAX || n == 0) {
        static const char why[] = "ModifyKeyRoute: invalid key: key too long";
        cl_answer_error(h, q, CELLAR_ESERVER, why, sizeof(why) - 1);
        return;
    }
    struct mk_req *c = malloc(sizeof(*c) + rp.len + n);
    if (c == NULL) {
        q->done(q, CELLAR_ENOMEM, NULL);
        return;
    }
    *c = (struct mk_req){.q = {.m = q->m, .done = mk_done}, .parent = q};
    char *p = c->bytes;
    memcpy(p, rp.p, rp.len);
    memcpy(p + rp.len, head, nh);
    memcpy(p + rp.len + nh, key.p, key.len);
    memcpy(p + rp.len + nh + key.len, m->suffix, ns);
    c->q.m.key = (struct mc_span){p + rp.len, n};
    c->q.m.prefix_len = (uint16_t)rp.len;
    route_dispatch(r->children[0], h, &c->q);
}

static void put_opt(struct mc_put *w, const char **sep, const char *name, const char *v) {
    mc_put(w, *sep, 1);
    mc_put(w, name, strlen(name));
    MC_PUT_LIT(w, "=");
    mc_put(w, v, strlen(v));
    *sep = ",";
}

static void modify_key_label(const struct route *r, const struct cellar_config *cfg,
                             struct mc_put *w) {
    (void)cfg;
    const struct modify_key *m = mk(r);
    const char *sep = "(";
    if (m->set_rp)
        put_opt(w, &sep, "set_routing_prefix", m->rp);
    if (m->prefix[0])
        put_opt(w, &sep, "ensure_key_prefix", m->prefix);
    if (m->has_replace)
        put_opt(w, &sep, "replace_key_prefix", m->replace);
    if (m->suffix[0])
        put_opt(w, &sep, "set_key_suffix", m->suffix);
    if (*sep == ',')
        MC_PUT_LIT(w, ")");
}

static const struct route_ops modify_key_ops = {
    .name = "ModifyKeyRoute",
    .dispatch = modify_key_dispatch,
    .server_of = route_server_of_first,
    .label = modify_key_label,
};

/* obj[key], a string of key bytes (no space or control byte), into out; absent: *present false. */
static int key_part(struct rb *b, json_t *obj, const char *key, char *out, bool *present) {
    json_t *v = json_object_get(obj, key);
    if (present)
        *present = v != NULL;
    if (v == NULL)
        return 0;
    size_t mark = rb_path_key(b, key);
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    if (s == NULL || strlen(s) > PART_MAX)
        return rb_fail(b, "expected a string of at most %d bytes", PART_MAX);
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return rb_fail(b, "a key cannot hold a space or control byte");
    strcpy(out, s);
    rb_path_set(b, mark);
    return 0;
}

/*
 * {"type": "ModifyKeyRoute", "target": route, "set_routing_prefix": "/a/b/",
 *  "ensure_key_prefix", "replace_key_prefix", "set_key_suffix": STRING,
 *  "modify_inplace": BOOL}
 */
static int build_modify_key(struct rb *b, const struct route_type *t, json_t *obj,
                            struct route **out) {
    (void)t;
    struct route *target = NULL;
    if (rb_build_key(b, obj, "target", true, &target) < 0)
        return -1;
    struct modify_key *m = (struct modify_key *)route_make(
        b->cfg->routes, &modify_key_ops, sizeof(struct modify_key), &target, 1);
    if (m == NULL)
        return rb_nomem(b);
    json_t *rp = json_object_get(obj, "set_routing_prefix");
    if (rp != NULL) {
        size_t mark = rb_path_key(b, "set_routing_prefix");
        if (!json_is_string(rp))
            return rb_fail(b, "expected a routing prefix, \"/region/cluster/\"");
        if (*json_string_value(rp) != '\0' &&
            route_prefix_norm(json_string_value(rp), m->rp, sizeof(m->rp)) < 0)
            return rb_fail(b, "\"%s\" is not a routing prefix (\"/region/cluster/\")",
                           json_string_value(rp));
        m->set_rp = true;
        rb_path_set(b, mark);
    }
    if (key_part(b, obj, "ensure_key_prefix", m->prefix, NULL) < 0 ||
        key_part(b, obj, "replace_key_prefix", m->replace, &m->has_replace) < 0 ||
        key_part(b, obj, "set_key_suffix", m->suffix, NULL) < 0)
        return -1;
    json_t *inplace = json_object_get(obj, "modify_inplace");
    if (inplace && !json_is_boolean(inplace)) {
        rb_path_key(b, "modify_inplace");
        return rb_fail(b, "expected true or false");
    }
    m->inplace = json_is_true(inplace);
    *out = &m->r;
    return 0;
}

const struct route_type route_type_modify_key = {
    .type = "ModifyKeyRoute",
    .keys = "target set_routing_prefix ensure_key_prefix replace_key_prefix set_key_suffix "
            "modify_inplace",
    .route_keys = "target",
    .map_keys = "",
    .pool_keys = "",
    .build = build_modify_key,
};
