/*
 * auth.c -- memcached's ASCII authentication on a cellard connection
 * (auth.h): the exchange is protocol/mc_auth.c's, the password table
 * core/authfile.c's; this answers on the connection and counts.
 */
#include "server/auth.h"

#include "protocol/mc_auth.h"
#include "server/conn.h"
#include "server/ctx.h"
#include "server/stats.h"

bool auth_step(struct conn *c, struct authfile *a) {
    struct mc_auth st = {c->auth_need};
    struct mc_span answer;
    size_t used = 0;
    bool checked, passed;
    enum mc_auth_step r = mc_auth_step(&st, c->net.rbuf + c->net.rstart,
                                       c->net.rend - c->net.rstart, &used, a, &answer, &checked,
                                       &passed);
    c->auth_need = st.need;
    c->net.rstart += used;
    if (r == MC_AUTH_MORE)
        return false;
    if (r == MC_AUTH_CLOSE) {
        conn_set_state(c, CONN_CLOSING);    /* junk: memcached hangs up */
        return true;
    }
    out_copy(&c->net.out, answer.p, answer.len);
    if (checked)
        STAT_INC(c->ctx->st.auth_cmds);
    if (checked && !passed)
        STAT_INC(c->ctx->st.auth_errors);
    c->authed = passed;
    return true;
}
