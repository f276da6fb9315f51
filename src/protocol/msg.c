/*
 * msg.c -- what every wire shares: key rules, the wire table, names.
 * The wires themselves are msg_text.c, msg_meta.c and msg_bin.c.
 */
#include "protocol/msg.h"

#include <string.h>

bool msg_key_ok(struct mc_span key) {
    if (key.len == 0 || key.len > MC_KEY_MAX)
        return false;
    for (size_t i = 0; i < key.len; i++) {
        unsigned char c = (unsigned char)key.p[i];
        if (c <= ' ' || c == 0x7f)
            return false;
    }
    return true;
}

bool msg_key_line_ok(struct mc_span key) {
    if (!msg_key_any(key))
        return false;
    for (size_t i = 0; i < key.len; i++) {
        char c = key.p[i];
        if (c == ' ' || c == '\r' || c == '\n' || c == '\0')
            return false;
    }
    return true;
}

bool msg_group_ok(struct mc_span group) {
    if (group.len > MC_KEY_MAX)
        return false;
    for (size_t i = 0; i < group.len; i++) {
        unsigned char c = (unsigned char)group.p[i];
        if (c < ' ' || c == 0x7f)
            return false;
    }
    return true;
}

bool msg_meta_ok(char cmd, struct mc_span f) {
    if (cmd != 'g' && cmd != 's' && cmd != 'd' && cmd != 'a' && cmd != 'e')
        return false;
    for (size_t i = 0; i < f.len; i++) {
        unsigned char b = (unsigned char)f.p[i];
        if (b < ' ' || b == 0x7f || (b == 'q' && (i == 0 || f.p[i - 1] == ' ')))
            return false;
    }
    return true;
}

const struct msg_wire *msg_wire_find(const char *name) {
    if (!strcmp(name, "meta"))
        return &msg_wire_meta;
    if (!strcmp(name, "ascii"))
        return &msg_wire_ascii;
    if (!strcmp(name, "text"))
        return &msg_wire_text;
    if (!strcmp(name, "binary"))
        return &msg_wire_bin;
    return NULL;
}

static const char *const op_names[MSG_OP_COUNT] = {
    [MSG_GET] = "get",         [MSG_GETS] = "gets",       [MSG_GAT] = "gat",
    [MSG_GATS] = "gats",       [MSG_SET] = "set",         [MSG_ADD] = "add",
    [MSG_REPLACE] = "replace", [MSG_APPEND] = "append",   [MSG_PREPEND] = "prepend",
    [MSG_CAS] = "cas",         [MSG_DELETE] = "delete",   [MSG_INCR] = "incr",
    [MSG_DECR] = "decr",       [MSG_TOUCH] = "touch",     [MSG_FLUSH_ALL] = "flush_all",
    [MSG_VERSION] = "version", [MSG_LEASE_GET] = "lease-get", [MSG_LEASE_SET] = "lease-set",
    [MSG_STATS] = "stats",     [MSG_META] = "meta",
};

static const char *const res_names[MSG_RES_COUNT] = {
    [MSG_RES_NONE] = "NONE",         [MSG_RES_HIT] = "HIT",
    [MSG_RES_MISS] = "MISS",         [MSG_RES_STORED] = "STORED",
    [MSG_RES_NOT_STORED] = "NOT_STORED", [MSG_RES_EXISTS] = "EXISTS",
    [MSG_RES_NOT_FOUND] = "NOT_FOUND", [MSG_RES_DELETED] = "DELETED",
    [MSG_RES_TOUCHED] = "TOUCHED",   [MSG_RES_NUMBER] = "NUMBER",
    [MSG_RES_OK] = "OK",             [MSG_RES_VERSION] = "VERSION",
    [MSG_RES_ERROR] = "ERROR",       [MSG_RES_CLIENT_ERROR] = "CLIENT_ERROR",
    [MSG_RES_SERVER_ERROR] = "SERVER_ERROR", [MSG_RES_STATS] = "STATS",
    [MSG_RES_META] = "META",
};

const char *msg_op_name(enum msg_op op) {
    return (unsigned)op < MSG_OP_COUNT ? op_names[op] : "?";
}

int msg_op_by_name(const char *name) {
    for (int op = 0; op < MSG_OP_COUNT; op++)
        if (op_names[op] != NULL && strcmp(op_names[op], name) == 0)
            return op;
    return -1;
}

const char *msg_res_name(enum msg_res res) {
    return (unsigned)res < MSG_RES_COUNT ? res_names[res] : "?";
}
