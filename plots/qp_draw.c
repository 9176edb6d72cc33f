/* qp_draw.c — one figure, data file to finished file (see qp_draw.h). */
#include "qp_draw.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qp_figcsv.h"
#include "qp_gnuplot.h"
#include "qp_share.h"

static const char *ext_of(const char *path)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    return dot && (!slash || dot > slash) ? dot + 1 : "";
}

const char *qp_term_for(const char *path)
{
    const char *e = ext_of(path);
    if (!strcasecmp(e, "png")) return "pngcairo";
    if (!strcasecmp(e, "svg")) return "svg";
    if (!strcasecmp(e, "pdf")) return "pdfcairo";
    return NULL;
}

const char *qp_plots_dir(void)
{
    const char *d = getenv("QP_PLOTS_DIR");
    if (d && *d) return d;
    /* PREFIX/share/qprec/plots (the build puts the scripts there too); if
     * this executable's path cannot be read, the reason stands in for the
     * folder and the check for the script names it */
    static char dir[4096];
    if (!dir[0]) qp_share_path("plots", dir, sizeof dir);
    return dir;
}

const char *const QP_DRAW_FORMATS[QP_DRAW_NFORMATS] = {"png", "svg", "pdf"};

/* gnuplot draws path (a hidden temporary beside it, renamed over it only
 * when gnuplot succeeded) from the variables the kind set. */
static int draw_one(const qp_fig_kind *kind, qp_gpvars *v, const char *path, char *err, size_t errlen)
{
    char script[4096], tmp[4300];
    if ((size_t)snprintf(script, sizeof script, "%s/%s.gp", qp_plots_dir(), kind->name) >= sizeof script) {
        snprintf(err, errlen, "%.200s...: the path of qplot's scripts is too long", qp_plots_dir());
        return -1;
    }
    const char *slash = strrchr(path, '/');
    const int dirlen = slash ? (int)(slash - path + 1) : 0;
    if ((size_t)snprintf(tmp, sizeof tmp, "%.*s.%s.qplot-%ld.tmp", dirlen, path, slash ? slash + 1 : path,
                         (long)getpid()) >= sizeof tmp) {
        snprintf(err, errlen, "%.200s...: the figure's path is too long", path);
        return -1;
    }
    qp_gpv_str(v, "out", tmp);
    qp_gpv_str(v, "term", qp_term_for(path));
    qp_gpv_str(v, "plotsdir", qp_plots_dir());
    /* QP_PNG_DPI: the PNG's resolution (style.gp; default 300, for print
     * and slides; a web page needs about half) */
    const char *dpi = getenv("QP_PNG_DPI");
    if (dpi && *dpi) {
        char *end;
        errno = 0;
        const long d = strtol(dpi, &end, 10);
        if (*end || errno || d < 30 || d > 1200) {
            snprintf(err, errlen, "QP_PNG_DPI '%.40s': expected dots per inch, 30 to 1200", dpi);
            return -1;
        }
        qp_gpv_int(v, "dpi", d);
    }
    int rc = qp_gnuplot_run(script, v, err, errlen);
    struct stat st;
    if (!rc && (stat(tmp, &st) != 0 || st.st_size == 0)) {
        snprintf(err, errlen, "gnuplot (%s.gp) wrote no figure to %s", kind->name, tmp);
        rc = -1;
    }
    if (!rc && rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    if (rc) unlink(tmp);
    return rc;
}

int qp_draw(const qp_fig_kind *kind, const qp_run *const *runs, int n, const qp_fig_opts *o, const char *out,
            const char *scratch, int keep_data, char *err, size_t errlen)
{
    const char *term = qp_term_for(out);
    if (!term) {
        snprintf(err, errlen, "%s: unknown figure format '.%s' (use .png, .svg or .pdf)", out, ext_of(out));
        return -1;
    }
    /* gnuplot would say "cannot open file" about its own script's line */
    char dir[4096];
    const char *sl = strrchr(out, '/');
    snprintf(dir, sizeof dir, "%.*s", sl ? (int)(sl - out) + 1 : 1, sl ? out : ".");
    /* create a file there rather than ask access(): root passes access() even
     * where nothing can be created (/proc) */
    char probe[4200];
    snprintf(probe, sizeof probe, "%s%s.qplot-probe-%ld", dir, sl ? "" : "/", (long)getpid());
    const int pfd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (pfd < 0) {
        snprintf(err, errlen, "%s: cannot write there (%s)", out, strerror(errno));
        return -1;
    }
    close(pfd);
    unlink(probe);
    char script[4096];
    if ((size_t)snprintf(script, sizeof script, "%s/%s.gp", qp_plots_dir(), kind->name) >= sizeof script) {
        snprintf(err, errlen, "%.200s...: the path of qplot's scripts is too long", qp_plots_dir());
        return -1;
    }
    if (access(script, R_OK) != 0) {
        snprintf(err, errlen, "%s: %s (qplot reads its scripts from share/qprec/plots beside its bin/;"
                 " QP_PLOTS_DIR overrides that)", script, strerror(errno));
        return -1;
    }

    /* the data file */
    char datafile[4096];
    size_t stem = strlen(out) - strlen(ext_of(out)) - 1;
    if (keep_data)
        snprintf(datafile, sizeof datafile, "%.*s.dat", (int)stem, out);
    else
        snprintf(datafile, sizeof datafile, "%s/%s.dat", scratch, kind->name);
    FILE *f = fopen(datafile, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", datafile, strerror(errno));
        return -1;
    }
    qp_gpvars v;
    qp_gpv_init(&v);
    qp_gpv_str(&v, "datafile", datafile);
    int rc = kind->write(runs, n, o, f, &v, err, errlen);
    int werr = ferror(f);
    if (fclose(f) != 0) werr = 1;
    if (rc) goto out;
    if (werr) {
        snprintf(err, errlen, "%s: cannot write the data file", datafile);
        rc = -1;
        goto out;
    }

    /* the figure in every format, the one asked for first; then the data as CSV */
    const size_t vars_len = v.len;
    char path[4200];
    for (int k = -1; !rc && k < QP_DRAW_NFORMATS; k++) {
        if (k >= 0 && !strcasecmp(ext_of(out), QP_DRAW_FORMATS[k])) continue; /* out itself, drawn first */
        if (k < 0) snprintf(path, sizeof path, "%s", out);
        else snprintf(path, sizeof path, "%.*s.%s", (int)stem, out, QP_DRAW_FORMATS[k]);
        v.len = vars_len; /* the kind's variables; out and term are the format's */
        if (v.s) v.s[vars_len] = '\0';
        rc = draw_one(kind, &v, path, err, errlen);
    }
    if (!rc) {
        snprintf(path, sizeof path, "%.*s.csv", (int)stem, out);
        rc = qp_figcsv_write(datafile, path, err, errlen);
    }
out:
    qp_gpv_free(&v);
    return rc;
}
