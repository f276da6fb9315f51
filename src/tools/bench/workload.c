#include "tools/bench/workload.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Zipf by rejection-inversion                                              */
/* ---------------------------------------------------------------------- */

/*
 * W. Hoermann, G. Derflinger, "Rejection-inversion to generate variates
 * from monotone discrete distributions" (1996), as in Apache Commons RNG's
 * RejectionInversionZipfSampler.  h(x) = x^-s is integrated in closed form
 * (H), a uniform u between H(1.5) - 1 and H(n + 0.5) is inverted to x, and
 * k = round(x) is accepted unless u falls in the sliver between the
 * integral and the step function; fewer than a few percent of draws retry.
 * helper1/helper2 are log1p(x)/x and expm1(x)/x, with their series near 0
 * so that s = 1 needs no special case.
 */
static double helper1(double x) {
    return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}

static double helper2(double x) {
    return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x * 0.5 * (1 + x * (1.0 / 3) * (1 + 0.25 * x));
}

static double h_integral(const struct zipf *z, double x) {
    double lx = log(x);
    return helper2((1 - z->s) * lx) * lx;
}

static double h(const struct zipf *z, double x) {
    return exp(-z->s * log(x));
}

static double h_integral_inverse(const struct zipf *z, double x) {
    double t = x * (1 - z->s);
    if (t < -1)
        t = -1;
    return exp(helper1(t) * x);
}

void zipf_init(struct zipf *z, uint64_t n, double s) {
    z->n = n;
    z->s = s;
    z->h_x1 = h_integral(z, 1.5) - 1;
    z->h_n = h_integral(z, (double)n + 0.5);
    z->sval = 2 - h_integral_inverse(z, h_integral(z, 2.5) - h(z, 2));
}

uint64_t zipf_next(const struct zipf *z, struct rng *r) {
    for (int tries = 0; tries < 1000; tries++) {
        double u = z->h_n + rng_double(r) * (z->h_x1 - z->h_n);
        double x = h_integral_inverse(z, u);
        double kd = floor(x + 0.5);
        uint64_t k = kd < 1 ? 1 : kd > (double)z->n ? z->n : (uint64_t)kd;
        if ((double)k - x <= z->sval || u >= h_integral(z, (double)k + 0.5) - h(z, (double)k))
            return k - 1;
    }
    return 0;   /* unreachable in practice: the acceptance rate is far above 1/2 */
}

/* ---------------------------------------------------------------------- */
/* Workload                                                                 */
/* ---------------------------------------------------------------------- */

const char *workload_init(struct workload *w) {
    w->prefix_len = (unsigned)strlen(w->prefix);
    if (w->keys == 0)
        return "the key space must hold at least one key";
    if (w->key_size == 0 || w->key_size > WORKLOAD_KEY_MAX)
        return "key size must be 1..250";
    if (w->prefix_len >= w->key_size)
        return "the key prefix leaves no room for the key number";
    for (unsigned i = 0; i < w->prefix_len; i++)
        if ((unsigned char)w->prefix[i] <= ' ' || (unsigned char)w->prefix[i] == 127)
            return "the key prefix may not hold spaces or control characters";
    /* Both ranges must fit in the digits left: 2 * keys - 1 < 10^digits. */
    unsigned digits = w->key_size - w->prefix_len;
    if (digits < 20) {
        uint64_t lim = 1;
        for (unsigned i = 0; i < digits; i++)
            lim *= 10;
        if (w->keys > lim / 2)
            return "key size too small for the key space (twice the key space must fit)";
    }
    if (w->keys > UINT64_MAX / 2)
        return "key space too large";
    if (!(w->set_ratio >= 0 && w->set_ratio <= 1))
        return "set ratio must be within 0..1";
    if (!(w->miss_ratio >= 0 && w->miss_ratio <= 1))
        return "miss ratio must be within 0..1";
    if (w->multiget < 1 || w->multiget > WORKLOAD_MULTIGET_MAX)
        return "keys per get must be 1..1000";
    if (w->vmin > w->vmax)
        return "value size range is empty";
    if (w->vmax > (1u << 30))
        return "values larger than 1 GiB are not supported";
    if (w->dist == KEY_ZIPF) {
        if (!(w->alpha > 0 && w->alpha < 100))
            return "zipf alpha must be > 0";
        zipf_init(&w->zipf, w->keys, w->alpha);
    }
    return NULL;
}

/* Two digits at a time from a table: this runs for every key of every request. */
static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

void workload_key(const struct workload *w, uint64_t idx, char *out) {
    memcpy(out, w->prefix, w->prefix_len);
    char *p = out + w->key_size, *start = out + w->prefix_len;
    while (p - start >= 2) {
        p -= 2;
        memcpy(p, digit_pairs + 2 * (idx % 100), 2);
        idx /= 100;
    }
    if (p > start)
        *--p = (char)('0' + idx % 10);
}

uint64_t workload_pick(const struct workload *w, struct rng *r, bool for_get) {
    uint64_t k = w->dist == KEY_ZIPF ? zipf_next(&w->zipf, r) : rng_below(r, w->keys);
    if (for_get && w->miss_ratio > 0 && (w->miss_ratio >= 1 || rng_double(r) < w->miss_ratio))
        k += w->keys;
    return k;
}
