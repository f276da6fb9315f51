/*
 * config_macro.c -- mcrouter's JSON with macros (JSONM): a configuration
 * is expanded into plain JSON before its pools and routes are read.
 *
 *   "macros": { NAME: {"type": "macroDef", "params": [P, ...], "result": V}
 *             | NAME: {"type": "constDef", "result": V}, ... }
 *   P        := NAME | {"name": NAME, "default": V} | {"name": NAME, "optional": true}
 *
 * and everywhere else (the macros themselves included):
 *
 *   "%name%"          the value of name: a macro's parameter, a constant,
 *                     or a --config-params one; inside a longer string it
 *                     must be a string ("a%b%c")
 *   "@name(a, b)"     a macro called with strings, each expanded first;
 *   "@name"           ... with none
 *   {"type": NAME, "param": V, ...}   a macro called with values
 *
 * and the built-ins int, str, bool (of "value"), merge ("params": lists
 * concatenated, objects merged, strings joined), select ("dictionary",
 * "key", "default"), transform ("dictionary", "itemTransform",
 * "keyTransform", "itemName" (item), "keyName" (key)), if ("condition",
 * "is_true", "is_false"), equals ("A", "B").  A backslash takes the
 * character after it as it is (so "\\@" is an '@').  A macro's result
 * sees its own parameters and the constants; transform's sees the item
 * and key beside what its caller sees.  import ("path") is the JSON of
 * another file (comments allowed, its macros expanded as here): a path
 * "file:P" as it is, else beside the configuration's file.  Anything else
 * mcrouter's preprocessor has (hash, range, ...) is refused by name.
 */
#include "client/config_macro.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH_MAX 200           /* macro calls inside macro calls */
#define IMPORT_MAX (16u << 20)  /* an imported file's bytes, at most */

/* One binding of a name to a value, in a chain to the outer ones. */
struct frame {
    const char *name;
    size_t len;
    json_t *value;
    const struct frame *up;
};

struct mx {
    json_t *macros;             /* name -> definition object */
    json_t *consts;             /* name -> value, as written */
    json_t *done;               /* name -> value, expanded (when first used) */
    char *err;
    size_t errlen;
    unsigned depth;
    const char *dir;            /* an import's relative paths start here (NULL: .) */
};

__attribute__((format(printf, 2, 3))) static json_t *fail(struct mx *x, const char *fmt, ...) {
    if (x->errlen && x->err[0] == '\0') {     /* the innermost reason wins */
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->err, x->errlen, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

static json_t *expand(struct mx *x, json_t *v, const struct frame *f);

/* The first c in s[0..n) not after a backslash, or n. */
static size_t find_unescaped(const char *s, size_t n, char c) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == c)
            return i;
    }
    return n;
}

/* The ')' closing the '(' at s[open], or n. */
static size_t closing(const char *s, size_t n, size_t open) {
    int depth = 0;
    for (size_t i = open; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '(')
            depth++;
        else if (s[i] == ')' && --depth == 0)
            return i;
    }
    return n;
}

/* Appends s[0..n) to b (of len, cap), without its escaping backslashes. */
static bool put_unescaped(char **b, size_t *len, size_t *cap, const char *s, size_t n) {
    if (*len + n + 1 > *cap) {
        size_t c = (*len + n + 1) * 2;
        char *nb = realloc(*b, c);
        if (nb == NULL)
            return false;
        *b = nb;
        *cap = c;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n)
            i++;
        (*b)[(*len)++] = s[i];
    }
    (*b)[*len] = '\0';
    return true;
}

/* The value bound to name[0..n): the innermost frame's, else a constant's. */
static json_t *lookup(struct mx *x, const char *name, size_t n, const struct frame *f) {
    for (; f; f = f->up)
        if (f->len == n && memcmp(f->name, name, n) == 0)
            return f->value;
    char key[256];
    if (n >= sizeof(key))
        return NULL;
    memcpy(key, name, n);
    key[n] = '\0';
    json_t *v = json_object_get(x->done, key), *c = json_object_get(x->consts, key);
    if (v != NULL || c == NULL)
        return v;
    if ((v = expand(x, c, NULL)) == NULL || json_object_set_new(x->done, key, v) < 0)
        return NULL;
    return v;
}

/* s[0..n) with its %name%s replaced (a whole "%name%" by any value). */
static json_t *replace_params(struct mx *x, const char *s, size_t n, const struct frame *f) {
    char *b = NULL;
    size_t len = 0, cap = 0;
    json_t *out = NULL;
    while (n > 0) {
        size_t p = find_unescaped(s, n, '%');
        if (!put_unescaped(&b, &len, &cap, s, p))
            goto nomem;
        if (p == n)
            break;
        size_t q = find_unescaped(s + p + 1, n - p - 1, '%');
        if (q == n - p - 1) {
            fail(x, "an odd number of '%%' in \"%.*s\"", (int)n, s);
            goto out;
        }
        json_t *v = lookup(x, s + p + 1, q, f);
        if (v == NULL) {
            fail(x, "unknown parameter \"%.*s\"", (int)q, s + p + 1);
            goto out;
        }
        if (len == 0 && p == 0 && p + q + 2 == n) {     /* the whole string */
            out = json_deep_copy(v);
            goto out;
        }
        if (!json_is_string(v)) {
            fail(x, "parameter \"%.*s\" in \"%.*s\" is not a string", (int)q, s + p + 1,
                 (int)n, s);
            goto out;
        }
        if (!put_unescaped(&b, &len, &cap, json_string_value(v), json_string_length(v)))
            goto nomem;
        s += p + q + 2;
        n -= p + q + 2;
    }
    out = json_stringn(b ? b : "", len);
    goto out;
nomem:
    fail(x, "out of memory");
out:
    free(b);
    return out;
}

/* ---------------------------------------------------------------------- */
/* Built-ins                                                                */
/* ---------------------------------------------------------------------- */

/* args[key], expanded; NULL (and an error) when it is missing and needed. */
static json_t *arg(struct mx *x, json_t *args, const char *key, bool need, const struct frame *f) {
    json_t *v = json_object_get(args, key);
    if (v == NULL)
        return need ? fail(x, "\"%s\" is missing", key) : NULL;
    return expand(x, v, f);
}

static json_t *b_int(struct mx *x, json_t *args, const struct frame *f) {
    json_t *v = arg(x, args, "value", true, f), *out = NULL;
    char *end;
    if (json_is_integer(v))
        out = json_incref(v);
    else if (json_is_string(v) && *json_string_value(v) &&
             (strtoll(json_string_value(v), &end, 10), *end == '\0'))
        out = json_integer(strtoll(json_string_value(v), NULL, 10));
    else if (v)
        fail(x, "int: \"value\" is not an integer");
    json_decref(v);
    return out;
}

static json_t *b_str(struct mx *x, json_t *args, const struct frame *f) {
    json_t *v = arg(x, args, "value", true, f), *out = NULL;
    char num[32];
    if (json_is_string(v))
        out = json_incref(v);
    else if (json_is_integer(v) && snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
                                            json_integer_value(v)) > 0)
        out = json_string(num);
    else if (json_is_boolean(v))
        out = json_string(json_is_true(v) ? "true" : "false");
    else if (v)
        fail(x, "str: \"value\" is not a string, a number or a boolean");
    json_decref(v);
    return out;
}

static json_t *b_bool(struct mx *x, json_t *args, const struct frame *f) {
    json_t *v = arg(x, args, "value", true, f), *out = NULL;
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    if (json_is_boolean(v))
        out = json_incref(v);
    else if (s && (strcmp(s, "true") == 0 || strcmp(s, "false") == 0))
        out = json_boolean(strcmp(s, "true") == 0);
    else if (v)
        fail(x, "bool: \"value\" is not true or false");
    json_decref(v);
    return out;
}

static json_t *b_merge(struct mx *x, json_t *args, const struct frame *f) {
    json_t *p = arg(x, args, "params", true, f), *out = NULL;
    if (p && (!json_is_array(p) || json_array_size(p) == 0)) {
        fail(x, "merge: \"params\" is not a list of at least one");
    } else if (p) {
        out = json_deep_copy(json_array_get(p, 0));
        for (size_t i = 1; out && i < json_array_size(p); i++) {
            json_t *it = json_array_get(p, i);
            int rc = -1;
            if (json_is_array(out) && json_is_array(it))
                rc = json_array_extend(out, it);
            else if (json_is_object(out) && json_is_object(it))
                rc = json_object_update(out, it);
            else if (json_is_string(out) && json_is_string(it)) {
                size_t a = json_string_length(out), b = json_string_length(it);
                char *s = malloc(a + b + 1);
                if (s) {
                    memcpy(s, json_string_value(out), a);
                    memcpy(s + a, json_string_value(it), b + 1);
                    rc = json_string_setn(out, s, a + b);
                    free(s);
                }
            }
            if (rc < 0) {
                json_decref(out);
                out = fail(x, "merge: param %zu is not of the first one's type", i);
            }
        }
    }
    json_decref(p);
    return out;
}

static json_t *b_select(struct mx *x, json_t *args, const struct frame *f) {
    json_t *d = arg(x, args, "dictionary", true, f), *k = d ? arg(x, args, "key", true, f) : NULL;
    json_t *out = NULL;
    if (d && k) {
        if (json_is_object(d) && json_is_string(k)) {
            out = json_incref(json_object_get(d, json_string_value(k)));
        } else if (json_is_array(d) && json_is_integer(k)) {
            json_int_t i = json_integer_value(k);
            out = json_incref(json_array_get(d, (size_t)(i < 0 ? i + (json_int_t)json_array_size(d)
                                                               : i)));
        } else {
            fail(x, "select: a key of the wrong type for the dictionary");
        }
        if (out == NULL && x->err[0] == '\0') {
            out = arg(x, args, "default", false, f);
            if (out == NULL && x->err[0] == '\0')
                fail(x, "select: the key is not in the dictionary, and there is no default");
        }
    }
    json_decref(d);
    json_decref(k);
    return out;
}

/* The name args[key] gives (expanded), else dflt, into buf. */
static bool name_arg(struct mx *x, json_t *args, const char *key, const char *dflt, char *buf,
                     size_t cap, const struct frame *f) {
    json_t *v = arg(x, args, key, false, f);
    bool ok = v == NULL ? x->err[0] == '\0' : json_is_string(v);
    snprintf(buf, cap, "%s", v ? (ok ? json_string_value(v) : "") : dflt);
    if (v && !ok)
        fail(x, "transform: \"%s\" is not a string", key);
    json_decref(v);
    return ok;
}

static json_t *b_transform(struct mx *x, json_t *args, const struct frame *f) {
    char item[128], key[128];
    json_t *d = arg(x, args, "dictionary", true, f);
    json_t *it = json_object_get(args, "itemTransform"), *kt = json_object_get(args, "keyTransform");
    if (d == NULL || !name_arg(x, args, "itemName", "item", item, sizeof(item), f) ||
        !name_arg(x, args, "keyName", "key", key, sizeof(key), f)) {
        json_decref(d);
        return NULL;
    }
    if (!json_is_object(d) && !json_is_array(d)) {
        json_decref(d);
        return fail(x, "transform: \"dictionary\" is not an object or a list");
    }
    json_t *out = json_is_object(d) ? json_object() : json_array();
    const char *k;
    json_t *v;
    size_t i;
    void *tmp;
    bool ok = out != NULL;
    if (json_is_object(d)) {
        json_object_foreach_safe(d, tmp, k, v) {
            json_t *kv = json_string(k);
            struct frame fi = {item, strlen(item), v, f}, fk = {key, strlen(key), kv, &fi};
            json_t *nk = kt ? expand(x, kt, &fk) : json_incref(kv);
            json_t *nv = it ? expand(x, it, &fk) : json_incref(v);
            ok = ok && nk && nv && json_is_string(nk) &&
                 json_object_set(out, json_string_value(nk), nv) == 0;
            if (nk && !json_is_string(nk))
                fail(x, "transform: a key is not a string");
            json_decref(kv);
            json_decref(nk);
            json_decref(nv);
            if (!ok)
                break;
        }
    } else {
        json_array_foreach(d, i, v) {
            json_t *kv = json_integer((json_int_t)i);
            struct frame fi = {item, strlen(item), v, f}, fk = {key, strlen(key), kv, &fi};
            json_t *nv = it ? expand(x, it, &fk) : json_incref(v);
            ok = ok && nv && json_array_append(out, nv) == 0;
            json_decref(kv);
            json_decref(nv);
            if (!ok)
                break;
        }
    }
    json_decref(d);
    if (!ok) {
        json_decref(out);
        return fail(x, "transform: out of memory");
    }
    return out;
}

static json_t *b_if(struct mx *x, json_t *args, const struct frame *f) {
    json_t *c = arg(x, args, "condition", true, f);
    if (c == NULL)
        return NULL;
    bool yes = json_is_true(c);
    if (!json_is_boolean(c)) {
        json_decref(c);
        return fail(x, "if: \"condition\" is not a boolean");
    }
    json_decref(c);
    return arg(x, args, yes ? "is_true" : "is_false", true, f);
}

static json_t *b_equals(struct mx *x, json_t *args, const struct frame *f) {
    json_t *a = arg(x, args, "A", true, f), *b = a ? arg(x, args, "B", true, f) : NULL;
    json_t *out = a && b ? json_boolean(json_equal(a, b)) : NULL;
    json_decref(a);
    json_decref(b);
    return out;
}

/* import: the JSON of the file at "path", read as the configuration is, macros expanded. */
static json_t *b_import(struct mx *x, json_t *args, const struct frame *f) {
    json_t *p = arg(x, args, "path", true, f);
    if (p == NULL)
        return NULL;
    const char *path = json_string_value(p);
    char full[4096];
    if (path == NULL || *path == '\0') {
        json_decref(p);
        return fail(x, "@import: expected a file's path");
    }
    if (strncmp(path, "file:", 5) == 0 || path[0] == '/' || x->dir == NULL)
        snprintf(full, sizeof(full), "%s", strncmp(path, "file:", 5) == 0 ? path + 5 : path);
    else
        snprintf(full, sizeof(full), "%s/%s", x->dir, path);
    json_decref(p);
    FILE *in = fopen(full, "rb");
    if (in == NULL)
        return fail(x, "@import(%s): %s", full, strerror(errno));
    long size = fseek(in, 0, SEEK_END) == 0 ? ftell(in) : -1;
    bool big = size > (long)IMPORT_MAX;
    char *text = size >= 0 && !big && fseek(in, 0, SEEK_SET) == 0 ? malloc((size_t)size + 1)
                                                                   : NULL;
    size_t n = text ? fread(text, 1, (size_t)size, in) : 0;
    bool bad = text == NULL || ferror(in) || n != (size_t)size;
    fclose(in);
    char *clean = bad ? NULL : malloc(n + 1);
    if (clean == NULL) {
        free(text);
        return fail(x, "@import(%s): %s", full, big ? "larger than 16 MiB" : "cannot read it");
    }
    text[n] = '\0';
    int line, col;
    json_error_t je;
    json_t *v = NULL;
    if (cl_json_strip(text, clean, &line, &col) < 0)
        fail(x, "@import(%s): line %d, column %d: unterminated /* comment", full, line, col);
    else if ((v = json_loads(clean, JSON_DECODE_ANY, &je)) == NULL)
        fail(x, "@import(%s): line %d, column %d: %s", full, je.line, je.column, je.text);
    free(text);
    free(clean);
    if (v == NULL)
        return NULL;
    json_t *out = expand(x, v, f);
    json_decref(v);
    return out;
}

/* A built-in: its name, its parameters in the order a string call gives them. */
struct builtin {
    const char *name;
    const char *params[5];
    json_t *(*fn)(struct mx *x, json_t *args, const struct frame *f);
};

static const struct builtin builtins[] = {
    {"int", {"value"}, b_int},
    {"str", {"value"}, b_str},
    {"bool", {"value"}, b_bool},
    {"merge", {"params"}, b_merge},
    {"select", {"dictionary", "key", "default"}, b_select},
    {"transform", {"dictionary", "itemTransform", "keyTransform", "itemName", "keyName"},
     b_transform},
    {"if", {"condition", "is_true", "is_false"}, b_if},
    {"equals", {"A", "B"}, b_equals},
    {"import", {"path"}, b_import},
};

/* mcrouter's other built-ins: refused by name rather than taken for a route type. */
static bool refused_builtin(const char *name) {
    static const char *const names[] = {
        "hash", "weightedHash", "keys", "values", "shuffle", "slice", "split",
        "range", "contains", "empty", "less", "and", "or", "not", "add", "sub", "mul", "div",
        "mod", "set", "isArray", "isBool", "isInt", "isObject", "isString", "process",
        "bitwiseAnd", "bitwiseOr", "bitwiseXor", "bitwiseLeftShift", "bitwiseRightShift", "define"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

static const struct builtin *builtin_find(const char *name) {
    for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
        if (strcmp(builtins[i].name, name) == 0)
            return &builtins[i];
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* Comments and trailing commas                                             */
/* ---------------------------------------------------------------------- */

/*
 * Past blanks and comments from p (an unterminated block comment runs to
 * the end).  Used to look ahead from a comma.
 */
static const char *skip_blank(const char *p) {
    for (;;) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
            p++;
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n')
                p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            p = end ? end + 2 : p + strlen(p);
        } else {
            return p;
        }
    }
}

/* A UTF-8 continuation byte: jansson counts a character as one column. */
static bool utf8_cont(char c) {
    return ((unsigned char)c & 0xC0) == 0x80;
}

/*
 * Copies in to out (as long as in, plus one) with comments blanked and
 * trailing commas dropped.  Each comment character becomes one space and
 * its newlines stay, so jansson's line and column still point into the
 * text as written.  A comma followed only by blanks and comments up to a
 * closing ] or } is a trailing comma, unless it follows [ { or another
 * comma (then jansson reports it).  -1 with *line, *col set for an
 * unterminated block comment.
 */
int cl_json_strip(const char *in, char *out, int *line, int *col) {
    enum { CODE, STR, LINE_COMMENT, BLOCK_COMMENT } st = CODE;
    int ln = 1, cl = 0, start_ln = 0, start_cl = 0;
    char last = 0;              /* the last significant character in code */
    bool escaped = false;       /* in a string, after a backslash */
    for (const char *p = in; *p; p++) {
        char c = *p;
        if (c == '\n') {
            ln++;
            cl = 0;
        } else if (!utf8_cont(c)) {
            cl++;
        }
        switch (st) {
        case STR:
            *out++ = c;
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                st = CODE;
            continue;
        case LINE_COMMENT:
            if (c == '\n') {
                st = CODE;
                *out++ = c;
            } else if (!utf8_cont(c)) {
                *out++ = ' ';
            }
            continue;
        case BLOCK_COMMENT:
            if (c == '*' && p[1] == '/') {
                *out++ = ' ';
                *out++ = ' ';
                p++;
                cl++;
                st = CODE;
            } else if (c == '\n') {
                *out++ = c;
            } else if (!utf8_cont(c)) {
                *out++ = ' ';
            }
            continue;
        case CODE:
            break;
        }
        if (c == '/' && (p[1] == '/' || p[1] == '*')) {
            st = p[1] == '/' ? LINE_COMMENT : BLOCK_COMMENT;
            start_ln = ln;
            start_cl = cl;
            *out++ = ' ';
            *out++ = ' ';
            p++;
            cl++;
            continue;
        }
        if (c == ',' && last != '[' && last != '{' && last != ',') {
            const char *q = skip_blank(p + 1);
            if (*q == ']' || *q == '}')
                c = ' ';
        }
        if (c == '"')
            st = STR;
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            last = c;
        *out++ = c;
    }
    *out = '\0';
    if (st == BLOCK_COMMENT) {
        *line = start_ln;
        *col = start_cl;
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Macros                                                                   */
/* ---------------------------------------------------------------------- */

/* A parameter of a macroDef: its name, and its default (NULL: none; optional: may be absent). */
static bool param_of(json_t *p, const char **name, json_t **dflt, bool *optional) {
    *dflt = NULL;
    *optional = false;
    if (json_is_string(p)) {
        *name = json_string_value(p);
        return true;
    }
    if (!json_is_object(p) || !json_is_string(json_object_get(p, "name")))
        return false;
    *name = json_string_value(json_object_get(p, "name"));
    *dflt = json_object_get(p, "default");
    *optional = *dflt != NULL || json_is_true(json_object_get(p, "optional"));
    return true;
}

/*
 * Calls macro name (definition def) with its arguments: strings (a
 * string call, each expanded in f) or an object's values (expanded in f).
 */
static json_t *call_macro(struct mx *x, const char *name, json_t *def, json_t *const *strs,
                          size_t nstr, json_t *obj, const struct frame *f) {
    json_t *params = json_object_get(def, "params"), *result = json_object_get(def, "result");
    size_t np = json_array_size(params);
    if (obj == NULL && nstr > np)
        return fail(x, "macro %s takes at most %zu arguments, not %zu", name, np, nstr);
    struct frame *fr = calloc(np ? np : 1, sizeof(*fr));
    json_t **vals = calloc(np ? np : 1, sizeof(*vals));
    const struct frame *top = NULL;
    json_t *out = NULL;
    size_t bound = 0;
    if (fr == NULL || vals == NULL) {
        fail(x, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < np; i++) {
        const char *pn;
        json_t *dflt, *given;
        bool optional;
        if (!param_of(json_array_get(params, i), &pn, &dflt, &optional)) {
            fail(x, "macro %s: parameter %zu is not a name or {\"name\", \"default\"}", name, i);
            goto done;
        }
        given = obj ? json_object_get(obj, pn) : i < nstr ? strs[i] : NULL;
        if (given != NULL)
            vals[i] = expand(x, given, f);
        else if (dflt != NULL)
            vals[i] = expand(x, dflt, NULL);
        else if (optional)
            continue;
        else {
            fail(x, "macro %s: parameter \"%s\" is missing", name, pn);
            goto done;
        }
        if (vals[i] == NULL)
            goto done;
        fr[bound] = (struct frame){pn, strlen(pn), vals[i], top};
        top = &fr[bound++];
    }
    out = expand(x, result, top);
done:
    for (size_t i = 0; vals && i < np; i++)
        json_decref(vals[i]);
    free(vals);
    free(fr);
    return out;
}

static json_t *call_at_depth(struct mx *x, const char *name, json_t *const *strs, size_t nstr,
                             json_t *obj, const struct frame *f);

/* Calls name: a built-in (args an object of raw values) or a macro; NULL without an error: neither. */
static json_t *call(struct mx *x, const char *name, json_t *const *strs, size_t nstr,
                    json_t *obj, const struct frame *f) {
    if (++x->depth > DEPTH_MAX) {
        x->depth--;
        return fail(x, "macros nested more than %d deep", DEPTH_MAX);
    }
    json_t *out = call_at_depth(x, name, strs, nstr, obj, f);
    x->depth--;
    return out;
}

static json_t *call_at_depth(struct mx *x, const char *name, json_t *const *strs, size_t nstr,
                             json_t *obj, const struct frame *f) {
    const struct builtin *b = builtin_find(name);
    if (b) {
        json_t *args = obj ? json_incref(obj) : json_object();
        for (size_t i = 0; !obj && i < nstr; i++) {
            if (i >= sizeof(b->params) / sizeof(b->params[0]) || b->params[i] == NULL) {
                json_decref(args);
                return fail(x, "@%s takes at most %zu arguments", name, i);
            }
            json_object_set(args, b->params[i], strs[i]);
        }
        json_t *out = b->fn(x, args, f);
        json_decref(args);
        return out;
    }
    json_t *def = json_object_get(x->macros, name);
    if (def != NULL)
        return call_macro(x, name, def, strs, nstr, obj, f);
    if (refused_builtin(name))
        return fail(x, "mcrouter's built-in macro \"%s\" is not supported", name);
    return NULL;                /* not a macro: the caller decides */
}

/* "@name(args)" or "@name", else s with its parameters replaced. */
static json_t *expand_string(struct mx *x, const char *s, size_t n, const struct frame *f) {
    if (n == 0 || s[0] != '@')
        return replace_params(x, s, n, f);
    size_t open = find_unescaped(s, n, '(');
    json_t *strs[16];
    size_t nstr = 0;
    if (open < n) {
        if (s[n - 1] != ')' || closing(s, n, open) != n - 1)
            return fail(x, "no closing bracket in the call \"%.*s\"", (int)n, s);
        const char *a = s + open + 1, *end = s + n - 1;
        for (;;) {                  /* arguments at depth 0, trimmed */
            size_t len = (size_t)(end - a), cut = 0;
            int depth = 0;
            while (cut < len && !(depth == 0 && a[cut] == ',')) {
                if (a[cut] == '\\')
                    cut++;
                else if (a[cut] == '(')
                    depth++;
                else if (a[cut] == ')')
                    depth--;
                cut++;
            }
            size_t b = 0, e = cut < len ? cut : len;
            while (b < e && (a[b] == ' ' || a[b] == '\t'))
                b++;
            while (e > b && (a[e - 1] == ' ' || a[e - 1] == '\t'))
                e--;
            if (nstr == sizeof(strs) / sizeof(strs[0])) {
                while (nstr)
                    json_decref(strs[--nstr]);
                return fail(x, "more than 16 arguments in \"%.*s\"", (int)n, s);
            }
            strs[nstr++] = json_stringn(a + b, e - b);
            if (cut >= len)
                break;
            a += cut + 1;
        }
    }
    json_t *name = replace_params(x, s + 1, (open < n ? open : n) - 1, f), *out = NULL;
    if (name && !json_is_string(name))
        fail(x, "a macro's name is not a string in \"%.*s\"", (int)n, s);
    else if (name) {
        out = call(x, json_string_value(name), strs, nstr, NULL, f);
        if (out == NULL && x->err[0] == '\0')
            fail(x, "unknown macro \"%s\" in \"%.*s\"", json_string_value(name), (int)n, s);
    }
    json_decref(name);
    while (nstr)
        json_decref(strs[--nstr]);
    return out;
}

static json_t *expand(struct mx *x, json_t *v, const struct frame *f) {
    json_t *out = NULL;
    if (json_is_string(v)) {
        out = expand_string(x, json_string_value(v), json_string_length(v), f);
    } else if (json_is_object(v)) {
        json_t *type = json_object_get(v, "type");
        json_t *t = json_is_string(type) ? expand(x, type, f) : NULL;
        if (t && json_is_string(t))
            out = call(x, json_string_value(t), NULL, 0, v, f);
        json_decref(t);
        if (out == NULL && x->err[0] == '\0' && (out = json_object()) != NULL) {
            const char *k;
            json_t *val;
            json_object_foreach(v, k, val) {
                json_t *nk = expand_string(x, k, strlen(k), f);
                json_t *nv = nk && json_is_string(nk) ? expand(x, val, f) : NULL;
                if (nk && !json_is_string(nk))
                    fail(x, "the key \"%s\" does not expand to a string", k);
                int rc = nv ? json_object_set(out, json_string_value(nk), nv) : -1;
                json_decref(nk);
                json_decref(nv);
                if (rc < 0) {
                    json_decref(out);
                    out = x->err[0] ? NULL : fail(x, "out of memory");
                    break;
                }
            }
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *val;
        out = json_array();
        json_array_foreach(v, i, val) {
            json_t *nv = out ? expand(x, val, f) : NULL;
            if (nv == NULL || json_array_append_new(out, nv) < 0) {
                json_decref(out);
                out = x->err[0] ? NULL : fail(x, "out of memory");
                break;
            }
        }
    } else {
        out = json_incref(v);
    }
    return out;
}

/* "name:value,name:value" into consts (values as strings). */
static int add_params(struct mx *x, const char *params) {
    for (const char *p = params; p && *p;) {
        const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
        const char *colon = memchr(p, ':', (size_t)(end - p));
        if (colon == NULL || colon == p) {
            fail(x, "config params: \"%.*s\" is not NAME:VALUE", (int)(end - p), p);
            return -1;
        }
        char name[256];
        snprintf(name, sizeof(name), "%.*s", (int)(colon - p), p);
        json_t *v = json_stringn(colon + 1, (size_t)(end - colon - 1));
        if (v == NULL || json_object_set_new(x->done, name, v) < 0) {
            fail(x, "out of memory");
            return -1;
        }
        p = comma ? comma + 1 : end;
    }
    return 0;
}

/* The built-in parameters' JSON object into consts, as they are typed. */
static int add_builtins(struct mx *x, const char *builtins) {
    if (builtins == NULL)
        return 0;
    json_error_t je;
    json_t *v = json_loads(builtins, 0, &je);
    if (!json_is_object(v)) {
        json_decref(v);
        fail(x, "built-in params: not a JSON object");
        return -1;
    }
    int rc = json_object_update(x->done, v);
    json_decref(v);
    if (rc < 0)
        fail(x, "out of memory");
    return rc;
}

json_t *cl_macro_expand(json_t *root, const char *params, const char *builtins, const char *dir,
                        char *err, size_t errlen) {
    char none[1];
    struct mx x = {.macros = json_object(), .consts = json_object(), .done = json_object(),
                   .err = errlen ? err : none, .errlen = errlen ? errlen : sizeof(none),
                   .dir = dir};
    x.err[0] = '\0';
    json_t *out = NULL, *macros = json_object_get(root, "macros");
    if (x.macros == NULL || x.consts == NULL || x.done == NULL ||
        add_builtins(&x, builtins) < 0 || add_params(&x, params) < 0)
        goto done;
    if (macros && !json_is_object(macros)) {
        fail(&x, "macros: expected an object of macro definitions");
        goto done;
    }
    const char *name;
    json_t *def;
    json_object_foreach(macros, name, def) {
        const char *type = json_string_value(json_object_get(def, "type"));
        if (!json_is_object(def) || type == NULL ||
            (strcmp(type, "macroDef") != 0 && strcmp(type, "constDef") != 0)) {
            fail(&x, "macros.%s: expected {\"type\": \"macroDef\" or \"constDef\", ...}", name);
            goto done;
        }
        if (json_object_get(def, "result") == NULL) {
            fail(&x, "macros.%s: no \"result\"", name);
            goto done;
        }
        if (strcmp(type, "constDef") == 0)
            json_object_set(x.consts, name, json_object_get(def, "result"));
        else
            json_object_set(x.macros, name, def);
    }
    if ((out = json_object()) == NULL)
        goto done;
    json_t *v;
    json_object_foreach(root, name, v) {
        if (strcmp(name, "macros") == 0)
            continue;
        json_t *nv = expand(&x, v, NULL);
        if (nv == NULL) {
            char why[512];
            snprintf(why, sizeof(why), "%s", x.err[0] ? x.err : "out of memory");
            snprintf(x.err, x.errlen, "%s: %s", name, why);
            json_decref(out);
            out = NULL;
            goto done;
        }
        json_object_set_new(out, name, nv);
    }
done:
    json_decref(x.macros);
    json_decref(x.consts);
    json_decref(x.done);
    return out;
}
