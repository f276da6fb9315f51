/*
 * report.c -- table, CSV and SVG output (see report.h).
 */
#include "tools/sim/report.h"

#include <math.h>
#include <string.h>

static void fmt_size(char *buf, size_t n, uint64_t v, bool bytes) {
    const char *unit[] = {"", "Ki", "Mi", "Gi", "Ti"};
    if (!bytes) {
        snprintf(buf, n, "%llu", (unsigned long long)v);
        return;
    }
    int u = 0;
    double d = (double)v;
    while (d >= 1024 && u < 4 && fmod(d, 1024) == 0)
        d /= 1024, u++;
    snprintf(buf, n, "%.0f%sB", d, unit[u]);
}

/*
 * One row per size: the size, its share of the working set, and each
 * policy's miss ratio (byte miss ratio too in byte mode); then each
 * policy's speed on the largest size.
 */
void report_table(FILE *f, const struct sim_grid *g) {
    const struct trace *t = g->trace;
    fprintf(f, "trace: %s\n", t->name);
    fprintf(f, "requests %zu, objects %llu, bytes %llu; capacity in %s\n", t->n,
            (unsigned long long)t->unique, (unsigned long long)t->unique_bytes,
            g->bytes ? "bytes (slab allocator)" : "objects");
    int w = 10;
    for (size_t p = 0; p < g->npol; p++)
        if ((int)strlen(g->policies[p]) > w)
            w = (int)strlen(g->policies[p]);
    fprintf(f, "%-12s %8s", "cache", "of WS");
    for (size_t p = 0; p < g->npol; p++)
        fprintf(f, " %*s", w, g->policies[p]);
    fputc('\n', f);
    for (size_t s = 0; s < g->nsizes; s++) {
        char buf[32];
        fmt_size(buf, sizeof(buf), grid_at(g, s, 0)->capacity, g->bytes);
        fprintf(f, "%-12s %7.3f%%", buf, 100 * grid_at(g, s, 0)->frac);
        for (size_t p = 0; p < g->npol; p++) {
            const struct sim_job *j = grid_at(g, s, p);
            if (j->rc != 0)
                fprintf(f, " %*s", w, "-");
            else
                fprintf(f, " %*.4f", w, miss_ratio(&j->res));
        }
        fputc('\n', f);
    }
    if (g->bytes) {
        fprintf(f, "byte miss ratio:\n");
        for (size_t s = 0; s < g->nsizes; s++) {
            char buf[32];
            fmt_size(buf, sizeof(buf), grid_at(g, s, 0)->capacity, g->bytes);
            fprintf(f, "%-12s %7.3f%%", buf, 100 * grid_at(g, s, 0)->frac);
            for (size_t p = 0; p < g->npol; p++) {
                const struct sim_job *j = grid_at(g, s, p);
                double r = j->res.get_bytes ? (double)j->res.miss_bytes / j->res.get_bytes : 0;
                if (j->rc != 0)
                    fprintf(f, " %*s", w, "-");
                else
                    fprintf(f, " %*.4f", w, r);
            }
            fputc('\n', f);
        }
    }
    fprintf(f, "%-21s", "Mreq/s (per engine)");
    for (size_t p = 0; p < g->npol; p++) {
        double best = 0;
        for (size_t s = 0; s < g->nsizes; s++) {
            const struct sim_job *j = grid_at(g, s, p);
            if (j->rc == 0 && j->res.seconds > 0) {
                double v = (double)t->n / j->res.seconds / 1e6;
                best = v > best ? v : best;
            }
        }
        fprintf(f, " %*.2f", w, best);
    }
    fputc('\n', f);
    for (size_t i = 0; i < g->nsizes * g->npol; i++)
        if (g->jobs[i].rc == 0 && g->jobs[i].res.uncacheable > 0)
            fprintf(f, "%s at %llu: %llu misses could not be stored (too large)\n",
                    g->jobs[i].policy, (unsigned long long)g->jobs[i].capacity,
                    (unsigned long long)g->jobs[i].res.uncacheable);
    for (size_t i = 0; i < g->nsizes * g->npol; i++)
        if (g->jobs[i].rc != 0)
            fprintf(f, "%s at %llu: %s\n", g->jobs[i].policy,
                    (unsigned long long)g->jobs[i].capacity, g->jobs[i].err);
}

void report_csv(FILE *f, const struct sim_grid *g) {
    fprintf(f, "trace,policy,capacity,unit,fraction,requests,gets,misses,miss_ratio,"
               "byte_miss_ratio,evictions,seconds,mreq_per_s\n");
    for (size_t s = 0; s < g->nsizes; s++)
        for (size_t p = 0; p < g->npol; p++) {
            const struct sim_job *j = grid_at(g, s, p);
            if (j->rc != 0)
                continue;
            const struct replay_result *r = &j->res;
            double bmr = r->get_bytes ? (double)r->miss_bytes / r->get_bytes : 0;
            double rate = r->seconds > 0 ? (double)g->trace->n / r->seconds / 1e6 : 0;
            fprintf(f, "\"%s\",%s,%llu,%s,%.6f,%zu,%llu,%llu,%.6f,%.6f,%llu,%.3f,%.2f\n",
                    g->trace->name, j->policy, (unsigned long long)j->capacity,
                    g->bytes ? "bytes" : "objects", j->frac, g->trace->n,
                    (unsigned long long)r->gets, (unsigned long long)r->misses,
                    miss_ratio(r), bmr, (unsigned long long)r->evictions, r->seconds, rate);
        }
}

static const char *const colors[] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#e6550d", "#31a354", "#756bb1",
    "#843c39", "#3182bd", "#d6616b", "#636363", "#8c6d31", "#000000",
};

/*
 * A line chart, cache size on x (logarithmic when the sizes span more than
 * a factor of 4), miss ratio on y (the tenths that hold the data), one
 * polyline with dots per policy, OPT black and dashed, and a legend on
 * the right.  Plain SVG 1.1: any
 * browser shows it, nothing to install.
 */
int report_svg(const char *path, const struct sim_grid *g) {
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    const double W = 860, H = 520, L = 70, R = 170, T = 50, B = 60;
    double pw = W - L - R, ph = H - T - B;
    double xmin = INFINITY, xmax = 0, ymin = 1, ymax = 0;
    for (size_t s = 0; s < g->nsizes; s++)
        for (size_t p = 0; p < g->npol; p++) {
            const struct sim_job *j = grid_at(g, s, p);
            if (j->rc != 0)
                continue;
            double x = (double)j->capacity;
            xmin = x < xmin ? x : xmin;
            xmax = x > xmax ? x : xmax;
            double y = miss_ratio(&j->res);
            ymax = y > ymax ? y : ymax;
            ymin = y < ymin ? y : ymin;
        }
    if (!(xmax > 0)) {
        fclose(f);
        return -1;
    }
    bool logx = xmax / xmin > 4;
    ymax = ceil(ymax * 10) / 10;
    ymin = floor(ymin * 10) / 10;
    if (ymax <= ymin)
        ymin = 0, ymax = 1;
    double lx0 = logx ? log10(xmin) : xmin, lx1 = logx ? log10(xmax) : xmax;
    if (lx1 == lx0)
        lx1 = lx0 + 1, lx0 -= 1;
#define XPOS(v) (L + ((logx ? log10(v) : (v)) - lx0) / (lx1 - lx0) * pw)
#define YPOS(v) (T + ph - ((v) - ymin) / (ymax - ymin) * ph)
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H);
    fprintf(f, "<text x=\"%.0f\" y=\"25\" font-size=\"15\">miss ratio: ", L);
    for (const char *c = g->trace->name; *c; c++) {
        if (*c == '<')
            fputs("&lt;", f);
        else if (*c == '&')
            fputs("&amp;", f);
        else
            fputc(*c, f);
    }
    fprintf(f, "</text>\n");
    /* axes and grid */
    for (int i = 0; i <= 10; i++) {
        double v = ymin + (ymax - ymin) * i / 10, y = YPOS(v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                L, y, L + pw, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n", L - 6,
                y + 4, v);
    }
    for (size_t s = 0; s < g->nsizes; s++) {
        const struct sim_job *j = grid_at(g, s, 0);
        double x = XPOS((double)j->capacity);
        char buf[32];
        fmt_size(buf, sizeof(buf), j->capacity, g->bytes);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                x, T, x, T + ph);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x,
                T + ph + 18, buf);
    }
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
               "stroke=\"black\"/>\n", L, T, pw, ph);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">cache size (%s%s)</text>\n",
            L + pw / 2, H - 15, g->bytes ? "bytes" : "objects", logx ? ", log scale" : "");
    fprintf(f, "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" "
               "transform=\"rotate(-90 18 %.1f)\">miss ratio</text>\n", T + ph / 2, T + ph / 2);
    for (size_t p = 0; p < g->npol; p++) {
        bool opt = strcmp(g->policies[p], "OPT") == 0;
        const char *col = opt ? "#000000" : colors[p % (sizeof(colors) / sizeof(colors[0]) - 1)];
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", col,
                opt ? " stroke-dasharray=\"6,4\"" : "");
        for (size_t s = 0; s < g->nsizes; s++) {
            const struct sim_job *j = grid_at(g, s, p);
            if (j->rc == 0)
                fprintf(f, "%.1f,%.1f ", XPOS((double)j->capacity), YPOS(miss_ratio(&j->res)));
        }
        fprintf(f, "\"/>\n");
        for (size_t s = 0; s < g->nsizes; s++) {
            const struct sim_job *j = grid_at(g, s, p);
            if (j->rc == 0)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                        XPOS((double)j->capacity), YPOS(miss_ratio(&j->res)), col);
        }
        double ly = T + 10 + 20 * (double)p;
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"2\"%s/>\n", W - R + 15, ly, W - R + 45, ly, col,
                opt ? " stroke-dasharray=\"6,4\"" : "");
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\">%s</text>\n", W - R + 52, ly + 4,
                g->policies[p]);
    }
#undef XPOS
#undef YPOS
    fprintf(f, "</svg>\n");
    return fclose(f) == 0 ? 0 : -1;
}
