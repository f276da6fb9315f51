/*
 * route_error.c -- ErrorRoute: answers every request at once with an
 * error, sending nothing: "SERVER_ERROR <response>" (mcrouter's local
 * error), or the reply of the result it is told to stand for, worded as
 * mcrouter's ascii server words it ("SERVER_ERROR 307 busy").  The status
 * is the one libcellar gives that failure, so that a FailoverRoute above
 * treats it as it would the real thing (a "timeout" fails over on
 * timeouts).
 */
#include <string.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "protocol/mc_put.h"

struct error_route {
    struct route r;
    int status;                 /* < 0 */
    size_t len;
    char text[];                /* the reply's words */
};

static const struct error_route *er(const struct route *r) {
    return (const struct error_route *)r;
}

static void error_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    cl_answer_error(h, q, er(r)->status, er(r)->text, er(r)->len);
}

static int error_server_of(const struct route *r, const struct cellar_config *cfg,
                           const char *key, size_t nkey) {
    (void)r, (void)cfg, (void)key, (void)nkey;
    return -1;
}

static void error_traverse(const struct route *r, const struct cellar_config *cfg,
                           enum msg_op op, const char *key, size_t nkey, struct route_walk *w,
                           unsigned depth) {
    (void)r, (void)cfg, (void)op, (void)key, (void)nkey, (void)w, (void)depth;
}

static void error_label(const struct route *r, const struct cellar_config *cfg,
                        struct mc_put *w) {
    (void)cfg;
    MC_PUT_LIT(w, "(");
    mc_put(w, er(r)->text, er(r)->len);
    MC_PUT_LIT(w, ")");
}

static const struct route_ops error_ops = {
    .name = "ErrorRoute",
    .dispatch = error_dispatch,
    .server_of = error_server_of,
    .traverse = error_traverse,
    .label = error_label,
};

struct route *route_error(struct route_set *rs, int status, const char *text, size_t len) {
    struct route *r = route_make(rs, &error_ops, sizeof(struct error_route) + len + 1, NULL, 0);
    if (r) {
        struct error_route *e = (struct error_route *)r;
        e->status = status < 0 ? status : CELLAR_ESERVER;
        e->len = len;
        memcpy(e->text, text, len);
        e->text[len] = '\0';
    }
    return r;
}

/* mcrouter's error results ("mc_res_" may be left off): the status and default words. */
static const struct {
    const char *name;
    int status;
    const char *words;
} results[] = {
    {"local_error", CELLAR_ESERVER, "local error"},
    {"remote_error", CELLAR_ESERVER, "remote error"},
    {"busy", CELLAR_ESERVER, "307 busy"},
    {"try_again", CELLAR_ESERVER, "302 try again"},
    {"shutdown", CELLAR_ESERVER, "301 shutdown"},
    {"aborted", CELLAR_ESERVER, "aborted"},
    {"bad_value", CELLAR_ESERVER, "bad value"},
    {"timeout", CELLAR_ETIMEDOUT, "timeout"},
    {"deadline_exceeded", CELLAR_ETIMEDOUT, "request deadline exceeded"},
    {"connect_timeout", CELLAR_ECONNECT, "connection timeout"},
    {"connect_error", CELLAR_ECONNECT, "connection error"},
    {"tko", CELLAR_EDOWN, "unavailable"},
    {"client_error", CELLAR_ECLIENT, ""},
    {"bad_command", CELLAR_ECLIENT, "bad command"},
    {"bad_key", CELLAR_ECLIENT, "bad key"},
    {"bad_flags", CELLAR_ECLIENT, "bad flags"},
    {"bad_exptime", CELLAR_ECLIENT, "bad exptime"},
    {"bad_lease_id", CELLAR_ECLIENT, "bad lease_id"},
    {"bad_cas_id", CELLAR_ECLIENT, "bad cas_id"},
};

/*
 * {"type": "ErrorRoute", "response": STRING, "result": RESULT,
 *  "enable_logging": BOOL (read, nothing to log to)}
 */
static int build_error(struct rb *b, const struct route_type *t, json_t *obj,
                       struct route **out) {
    (void)t;
    const char *response = "";
    int status = CELLAR_ESERVER, known = 0;
    json_t *v;
    if ((v = json_object_get(obj, "response")) != NULL) {
        size_t mark = rb_path_key(b, "response");
        if (!json_is_string(v))
            return rb_fail(b, "expected a string, not %s", rb_type_name(v));
        response = json_string_value(v);
        rb_path_set(b, mark);
    }
    if ((v = json_object_get(obj, "enable_logging")) != NULL && !json_is_boolean(v)) {
        rb_path_key(b, "enable_logging");
        return rb_fail(b, "expected true or false");
    }
    const char *words = "local error";
    if ((v = json_object_get(obj, "result")) != NULL) {
        size_t mark = rb_path_key(b, "result");
        const char *name = json_is_string(v) ? json_string_value(v) : "";
        if (strncmp(name, "mc_res_", 7) == 0)
            name += 7;
        for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++) {
            if (strcmp(results[i].name, name) == 0) {
                status = results[i].status;
                words = results[i].words;
                known = 1;
            }
        }
        if (!known)
            return rb_fail(b, "not an error result mcrouter names (mc_res_local_error, "
                              "mc_res_busy, mc_res_timeout, mc_res_tko, ...)");
        rb_path_set(b, mark);
    }
    if (*response)
        words = response;
    *out = route_error(b->cfg->routes, status, words, strlen(words));
    return *out ? 0 : rb_nomem(b);
}

/* "ErrorRoute" or "ErrorRoute|response" */
static int error_from_string(struct rb *b, const char *s, const char *arg,
                             struct route_list *l) {
    (void)s;
    const char *words = arg && *arg ? arg : "local error";
    return rb_push(b, l, route_error(b->cfg->routes, CELLAR_ESERVER, words, strlen(words)));
}

const struct route_type route_type_error = {
    .type = "ErrorRoute",
    .keys = "response result enable_logging",
    .route_keys = "",
    .map_keys = "",
    .pool_keys = "",
    .build = build_error,
    .from_string = error_from_string,
};

struct route *rb_empty_hash(struct rb *b, const char *name) {
    char text[300];
    int len = snprintf(text, sizeof(text), "HashRoute with empty children, name: %s", name);
    return route_error(b->cfg->routes, CELLAR_ESERVER, text,
                       len < (int)sizeof(text) ? (size_t)len : sizeof(text) - 1);
}
