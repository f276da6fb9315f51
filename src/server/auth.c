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
    struct mc_span answer, user, pass;
    size_t used = 0;
    enum mc_auth_step r = mc_auth_parse(&st, c->net.rbuf + c->net.rstart,
                                        c->net.rend - c->net.rstart, &used, &answer, &user,
                                        &pass);
    c->auth_need = st.need;
    c->net.rstart += used;
    switch (r) {
    case MC_AUTH_MORE:
        return false;
    case MC_AUTH_CLOSE:
        conn_set_state(c, CONN_CLOSING);    /* junk: memcached hangs up */
        return true;
    case MC_AUTH_ANSWER:
        out_copy(&c->net.out, answer.p, answer.len);
        return true;
    case MC_AUTH_TOKEN:
        break;
    }
    STAT_INC(c->ctx->st.auth_cmds);
    if (authfile_check(a, user.p, user.len, pass.p, pass.len)) {
        out_copy(&c->net.out, S(MC_AUTH_OK));
        c->authed = true;
    } else {
        STAT_INC(c->ctx->st.auth_errors);
        out_copy(&c->net.out, S(MC_AUTH_FAILED));
    }
    return true;
}
