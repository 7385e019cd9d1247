/* test_plot.c: `nmt plot` and its parts: nice linear and log ticks and
 * their labels, XML escaping, the train.csv writer (exact text) and reader
 * (columns by name, extra columns, CRLF/BOM, blank lines, errors naming
 * FILE:LINE or the column), the resume rule of the curves, and the SVG of
 * cmd_plot: well-formed XML (python3's minidom, skipped without python3),
 * one polyline point per data point of each series, markers, the log
 * scale label, the legend, escaping of the run name, empty panels and the
 * exit codes; the grouped bar charts of `nmt plot --bars` (bar_svg.h): value
 * labels, bar heights proportional to the values (negative ones too),
 * missing values, escaping, turned labels, the TSV reader and its errors
 * naming FILE:LINE, and allocation failures. */
#include <math.h>
#include <sys/stat.h>

#include "commands.h"
#include "fileio.h"
#include "plot/bar_svg.h"
#include "plot/svg_plot.h"
#include "test_util.h"
#include "train/train_csv.h"

#define HEADER "kind,step,epoch,loss,ppl,lr,grad_norm,src_tok_s,tgt_tok_s,valid_ppl,valid_bleu\n"
/* the header nmt writes now (HEADER, the one before valid_chrf, is read too) */
#define HEADER_NOW "kind,step,epoch,loss,ppl,lr,grad_norm,src_tok_s,tgt_tok_s,valid_ppl,valid_bleu,valid_chrf,align_loss\n"

/* ------------------------------------------------------------------ */
/* Ticks and labels                                                    */
/* ------------------------------------------------------------------ */

static void check_linear(double lo, double hi, int target, double step, double tlo, double thi,
                         int n) {
    SvgTicks t;
    svg_ticks_linear(lo, hi, target, &t);
    CHECK(fabs(t.step - step) < 1e-12 && fabs(t.lo - tlo) < 1e-9 && fabs(t.hi - thi) < 1e-9 &&
              t.n == n,
          "ticks(%g, %g, %d): step %g lo %g hi %g n %d; expected %g %g %g %d", lo, hi, target,
          t.step, t.lo, t.hi, t.n, step, tlo, thi, n);
}

static void test_ticks(void) {
    check_linear(0, 10000, 8, 2000, 0, 10000, 6);
    check_linear(100, 5000, 8, 1000, 0, 5000, 6);
    check_linear(0.13, 0.87, 5, 0.2, 0, 1.0, 6);
    check_linear(1.52, 9.1, 5, 2, 0, 10, 6);
    check_linear(2, 9, 5, 2, 2, 10, 5);
    check_linear(-3.7, 12.2, 5, 5, -5, 15, 5);
    check_linear(0.5, 35, 5, 10, 0, 40, 5);
    check_linear(3, 3, 5, 0.2, 2.6, 3.4, 5);     /* one value: widened by 10% */
    check_linear(0, 0, 5, 0.5, -1, 1, 5);        /* zero: widened by 1 */
    check_linear(NAN, 1, 5, 0.2, 0, 1, 6);       /* non-finite: [0, 1] */
    check_linear(9, 1, 5, 2, 0, 10, 6);          /* reversed */
    /* tick values are multiples of the step, no "-0" */
    SvgTicks t;
    svg_ticks_linear(-0.3, 0.3, 5, &t);
    CHECK_NEAR(t.step, 0.2, 1e-12);
    CHECK_EQ_INT(t.n, 5);
    CHECK(t.v[2] == 0 && !signbit(t.v[2]), "middle tick %g", t.v[2]);
    /* invariants over many ranges: cover the data, at most target+1 ticks,
     * step 1/2/5 x 10^k, evenly spaced */
    int bad = 0;
    for (int i = 0; i < 500; i++) {
        double lo = (i % 37 - 18) * pow(10, i % 7 - 3) * 1.37, hi = lo + (i % 11 + 1) * pow(10, i % 5 - 2) * 0.73;
        int target = 3 + i % 7;
        svg_ticks_linear(lo, hi, target, &t);
        double m = t.step / pow(10, floor(log10(t.step) + 1e-9));
        int nice = fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9;
        int even = 1;
        for (int k = 1; k < t.n; k++) even &= fabs(t.v[k] - t.v[k - 1] - t.step) < t.step * 1e-6;
        double tol = 1e-12 * fmax(fabs(lo), fabs(hi)); /* ulps of the tick values */
        if (!(t.lo <= lo + tol && t.hi >= hi - tol && t.n <= target + 1 && t.n >= 2 && nice &&
              even)) {
            if (bad++ < 3)
                fprintf(stderr, "bad ticks for [%g, %g] target %d: lo %g hi %g step %g n %d\n", lo,
                        hi, target, t.lo, t.hi, t.step, t.n);
        }
    }
    CHECK_EQ_INT(bad, 0);

    /* log: 1-2-5 within two decades, powers of ten beyond */
    svg_ticks_log(8, 200, &t);
    double want125[] = {5, 10, 20, 50, 100, 200};
    CHECK_EQ_INT(t.n, 6);
    for (int i = 0; i < 6 && i < t.n; i++) CHECK_NEAR(t.v[i], want125[i], 1e-9);
    svg_ticks_log(3, 8000, &t);
    CHECK_EQ_INT(t.n, 5);
    CHECK_NEAR(t.lo, 1, 1e-12);
    CHECK_NEAR(t.hi, 10000, 1e-6);
    svg_ticks_log(50, 50, &t);
    CHECK_EQ_INT(t.n, 3);
    CHECK_NEAR(t.lo, 20, 1e-9);
    CHECK_NEAR(t.hi, 100, 1e-9);
    svg_ticks_log(0.3, 0.9, &t);
    CHECK_NEAR(t.lo, 0.2, 1e-12);
    CHECK_NEAR(t.hi, 1, 1e-12);
    CHECK_EQ_INT(t.n, 3); /* 0.2, 0.5, 1 */
    svg_ticks_log(1e-3, 1e20, &t); /* 23 decades: every third power of ten */
    CHECK_EQ_INT(t.n, 9);
    CHECK_NEAR(log10(t.lo), -3, 1e-9);
    CHECK_NEAR(log10(t.hi), 21, 1e-9);
    svg_ticks_log(-1, 5, &t); /* not positive: [1, 10] */
    CHECK_NEAR(t.lo, 1, 1e-12);
    CHECK_NEAR(t.hi, 10, 1e-12);

    /* labels */
    char buf[64];
    svg_ticks_linear(0.13, 0.87, 5, &t);
    svg_tick_label(&t, 0, t.v[3], buf, sizeof buf);
    CHECK_EQ_STR(buf, "0.6");
    svg_tick_label(&t, 0, t.v[0], buf, sizeof buf);
    CHECK_EQ_STR(buf, "0");
    svg_ticks_linear(0, 10000, 8, &t);
    svg_tick_label(&t, 0, 4000, buf, sizeof buf);
    CHECK_EQ_STR(buf, "4k");
    svg_ticks_linear(0, 3000, 8, &t);
    CHECK_NEAR(t.step, 500, 1e-9);
    svg_tick_label(&t, 0, 1500, buf, sizeof buf);
    CHECK_EQ_STR(buf, "1500");
    svg_ticks_linear(0, 0.3, 8, &t);
    CHECK_NEAR(t.step, 0.05, 1e-12);
    svg_tick_label(&t, 0, t.v[3], buf, sizeof buf);
    CHECK_EQ_STR(buf, "0.15");
    svg_ticks_linear(0, 2.5e7, 6, &t);
    svg_tick_label(&t, 0, 2e7, buf, sizeof buf);
    CHECK_EQ_STR(buf, "20M");
    svg_tick_label(&t, 1, 200, buf, sizeof buf);
    CHECK_EQ_STR(buf, "200");
    svg_tick_label(&t, 1, 0.5, buf, sizeof buf);
    CHECK_EQ_STR(buf, "0.5");
    svg_tick_label(&t, 1, 1e6, buf, sizeof buf);
    CHECK_EQ_STR(buf, "1e6");
    svg_tick_label(&t, 1, 2e-4, buf, sizeof buf);
    CHECK_EQ_STR(buf, "2e-4");
}

static void test_escape(void) {
    char buf[128];
    size_t n = svg_escape("a<b & \"c\" 'd'>", buf, sizeof buf);
    CHECK_EQ_STR(buf, "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
    CHECK_EQ_INT(n, strlen("a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;"));
    svg_escape("x\xff" "y\x01z \xc3\xa9", buf, sizeof buf); /* bad byte, control char, é */
    CHECK_EQ_STR(buf, "x\xEF\xBF\xBDy?z \xc3\xa9");
    n = svg_escape("&&&", buf, 7); /* truncated at an entity boundary */
    CHECK_EQ_INT(n, 15);
    CHECK_EQ_STR(buf, "&amp;");
    CHECK_EQ_INT(svg_escape("abc", NULL, 0), 3);
}

/* ------------------------------------------------------------------ */
/* train.csv writer and reader                                         */
/* ------------------------------------------------------------------ */

static void test_format_number(void) {
    char b[TRAIN_CSV_NUMBER_CAP];
    struct {
        double v;
        const char *want;
    } cases[] = {{0.00001, "0.00001"},   {12345.6789, "12345.6789"}, {3, "3"},
                 {2.345678912, "2.34567891"}, {-0.5, "-0.5"},     {0.1 + 0.2, "0.3"},
                 {0, "0"},               {-0.0, "0"},              {1e-20, "1e-20"},
                 {INFINITY, "inf"},      {-INFINITY, "-inf"},      {NAN, ""},
                 {123456789012.0, "123456789012"}, {0.000123456789123, "0.000123456789"}};
    for (size_t i = 0; i < NMT_ARRAY_LEN(cases); i++) {
        train_csv_format_number(cases[i].v, b, sizeof b);
        CHECK(!strcmp(b, cases[i].want), "format(%.17g) = '%s', expected '%s'", cases[i].v, b,
              cases[i].want);
    }
}

static char *read_text(const char *path) {
    char *text = NULL;
    size_t n;
    if (file_read_all(path, &text, &n) != NMT_OK) return NULL;
    return text;
}

static void test_writer(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/written.csv", test_tmpdir());
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "open %s", path);
    if (!f) return;
    CHECK_EQ_INT(train_csv_header(f), NMT_OK);
    TrainCsvRow r;
    memset(&r, 0x55, sizeof r);
    train_csv_row_init(&r);
    CHECK(r.kind == TRAIN_CSV_TRAIN && r.step == 0 && isnan(r.loss) && isnan(r.valid_bleu) &&
              isnan(r.epoch),
          "row_init");
    r.step = 100;
    r.epoch = 0;
    r.loss = 5.25;
    r.ppl = 190.566268;
    r.lr = 0.001;
    r.grad_norm = 1.5;
    r.src_tok_s = 1000;
    r.tgt_tok_s = 1100.25;
    CHECK_EQ_INT(train_csv_append(f, &r), NMT_OK);
    TrainCsvRow v;
    train_csv_row_init(&v);
    v.kind = TRAIN_CSV_VALID;
    v.step = 500;
    v.epoch = 1;
    v.valid_ppl = 12.5;
    v.valid_bleu = TRAIN_CSV_EMPTY;
    CHECK_EQ_INT(train_csv_append(f, &v), NMT_OK);
    fclose(f);
    char *text = read_text(path);
    CHECK_EQ_STR(text, HEADER_NOW "train,100,0,5.25,190.566268,0.001,1.5,1000,1100.25,,,,\n"
                                  "valid,500,1,,,,,,,12.5,,,\n");
    nmt_free(text);

    /* read back */
    TrainCsvTable *t = NULL;
    CHECK_EQ_INT(train_csv_read(path, &t), NMT_OK);
    if (t) {
        CHECK_EQ_INT(t->n_rows, 2);
        CHECK_EQ_INT(t->has_column, (1u << TRAIN_CSV_N_COLUMNS) - 1);
        CHECK_EQ_INT(t->rows[0].kind, TRAIN_CSV_TRAIN);
        CHECK_EQ_INT(t->rows[0].step, 100);
        CHECK_NEAR(t->rows[0].ppl, 190.566268, 1e-9);
        CHECK_NEAR(t->rows[0].tgt_tok_s, 1100.25, 1e-9);
        CHECK(isnan(t->rows[0].valid_ppl), "train row valid_ppl %g", t->rows[0].valid_ppl);
        CHECK_EQ_INT(t->rows[1].kind, TRAIN_CSV_VALID);
        CHECK_NEAR(t->rows[1].valid_ppl, 12.5, 0);
        CHECK(isnan(t->rows[1].valid_bleu) && isnan(t->rows[1].loss), "valid row empties");
        CHECK_NEAR(train_csv_row_value(&t->rows[1], TRAIN_CSV_COL_STEP), 500, 0);
        CHECK(isnan(train_csv_row_value(&t->rows[1], TRAIN_CSV_COL_KIND)), "kind value");
    }
    train_csv_free(t);
    CHECK_EQ_STR(train_csv_column_name(TRAIN_CSV_COL_VALID_BLEU), "valid_bleu");
    CHECK_EQ_STR(train_csv_kind_name(TRAIN_CSV_VALID), "valid");

    /* open_append: new file gets the header; a torn last line is cut; a
     * foreign header is refused */
    char path2[1024];
    snprintf(path2, sizeof path2, "%s/append.csv", test_tmpdir());
    FILE *a = NULL;
    CHECK_EQ_INT(train_csv_open_append(path2, &a), NMT_OK);
    if (a) {
        train_csv_append(a, &v);
        fclose(a);
    }
    FILE *torn = fopen(path2, "ab");
    fputs("train,600,1,2.5,12", torn); /* a crash mid-row */
    fclose(torn);
    a = NULL;
    CHECK_EQ_INT(train_csv_open_append(path2, &a), NMT_OK);
    if (a) {
        TrainCsvRow w;
        train_csv_row_init(&w);
        w.step = 600;
        w.loss = 2;
        train_csv_append(a, &w);
        fclose(a);
    }
    text = read_text(path2);
    CHECK_EQ_STR(text, HEADER_NOW "valid,500,1,,,,,,,12.5,,,\ntrain,600,,2,,,,,,,,,\n");
    nmt_free(text);
    /* an earlier version's log (no valid_chrf; CRLF, a torn last row) is
     * widened before rows are added, so that a resumed run can append */
    const char *old_log = "kind,step,epoch,loss,ppl,lr,grad_norm,src_tok_s,tgt_tok_s,valid_ppl,valid_bleu\r\n"
                          "train,100,1,5,,,,,,,\r\n\nvalid,100,1,,,,,,,9.5,20.5\ntrain,200,1,4";
    const char *path3 = test_write_file(test_tmpdir(), "old.csv", old_log, strlen(old_log));
    char old_path[1024];
    snprintf(old_path, sizeof old_path, "%s", path3);
    a = NULL;
    CHECK_EQ_INT(train_csv_open_append(old_path, &a), NMT_OK);
    if (a) {
        TrainCsvRow w;
        train_csv_row_init(&w);
        w.kind = TRAIN_CSV_VALID;
        w.step = 200;
        w.valid_ppl = 8;
        w.valid_bleu = 22;
        w.valid_chrf = 50.25;
        train_csv_append(a, &w);
        fclose(a);
    }
    text = read_text(old_path);
    CHECK_EQ_STR(text, HEADER_NOW "train,100,1,5,,,,,,,,,\n\nvalid,100,1,,,,,,,9.5,20.5,,\nvalid,200,,,,,,,,8,22,50.25,\n");
    nmt_free(text);
    TrainCsvTable *widened = NULL;
    CHECK_EQ_INT(train_csv_read(old_path, &widened), NMT_OK);
    if (widened) {
        CHECK_EQ_INT(widened->n_rows, 3);
        CHECK(isnan(widened->rows[1].valid_chrf) && widened->rows[2].valid_chrf == 50.25, "valid_chrf read back");
    }
    train_csv_free(widened);
    const char *foreign = test_write_file(test_tmpdir(), "foreign.csv", "step,loss\n1,2\n", 14);
    a = NULL;
    CHECK_EQ_INT(train_csv_open_append(foreign, &a), NMT_ERR_FORMAT);
    CHECK_CONTAINS(nmt_error_message(), "foreign.csv");
    CHECK(a == NULL, "no file on error");
}

static TrainCsvTable *parse(const char *text, NmtStatus want) {
    TrainCsvTable *t = NULL;
    NmtStatus st = train_csv_parse("runs/x/train.csv", text, strlen(text), &t);
    CHECK(st == want, "parse status %d, expected %d (%s) for:\n%s", st, want,
          st ? nmt_error_message() : "ok", text);
    return t;
}

static void test_reader(void) {
    /* columns in another order, unknown columns in the middle and at the end,
     * CRLF, a BOM, a blank line, an unknown kind */
    TrainCsvTable *t = parse("\xEF\xBB\xBF" "step,extra,kind,valid_bleu,loss,valid_ppl,future\r\n"
                             "100,x,train,,4.5,,abc\r\n"
                             "\r\n"
                             "200,y,valid,21.5,,9.25,\r\n"
                             "300,z,test,,,,\r\n"
                             "300,z,train,,3.75,,\r\n",
                             NMT_OK);
    if (t) {
        CHECK_EQ_INT(t->n_rows, 3);
        CHECK_EQ_INT(t->n_ignored, 1);
        CHECK(!(t->has_column & (1u << TRAIN_CSV_COL_PPL)), "ppl column absent");
        CHECK(t->has_column & (1u << TRAIN_CSV_COL_VALID_BLEU), "valid_bleu present");
        CHECK_EQ_INT(t->rows[0].step, 100);
        CHECK_NEAR(t->rows[0].loss, 4.5, 0);
        CHECK(isnan(t->rows[0].ppl), "absent column reads empty");
        CHECK_EQ_INT(t->rows[1].kind, TRAIN_CSV_VALID);
        CHECK_NEAR(t->rows[1].valid_bleu, 21.5, 0);
        CHECK_NEAR(t->rows[1].valid_ppl, 9.25, 0);
        CHECK_EQ_INT(t->rows[2].step, 300);
        CHECK_NEAR(t->rows[2].loss, 3.75, 0);
        CHECK_EQ_INT(train_csv_count(t, TRAIN_CSV_TRAIN), 2);
        CHECK_EQ_INT(train_csv_count(t, TRAIN_CSV_VALID), 1);
    }
    train_csv_free(t);

    /* header only, and an empty file: no rows */
    t = parse(HEADER, NMT_OK);
    CHECK(t && t->n_rows == 0, "header only");
    train_csv_free(t);
    t = parse("", NMT_OK);
    CHECK(t && t->n_rows == 0, "empty");
    train_csv_free(t);

    /* errors */
    struct {
        const char *text;
        const char *needle;
    } bad[] = {
        {"kind,epoch,loss\ntrain,1,2\n", "runs/x/train.csv: missing column 'step'"},
        {"step,loss\n1,2\n", "runs/x/train.csv: missing column 'kind'"},
        {"kind,step,loss,step\n", "column 'step' appears twice"},
        {HEADER "train,100,0,5,,,,,,,\ntrain,abc,0,5,,,,,,,\n", "runs/x/train.csv:3: step 'abc'"},
        {HEADER "train,-5,0,5,,,,,,,\n", "runs/x/train.csv:2: step '-5'"},
        {HEADER "train,100,0,5,,,,,,,\n\ntrain,200,0,4\n", "runs/x/train.csv:4: 4 fields"},
        {HEADER "train,100,0,5,,,,,,,,\n", "runs/x/train.csv:2: 12 fields"},
        {HEADER "train,100,0,5x,,,,,,,\n", "runs/x/train.csv:2: loss '5x' is not a number"},
        {HEADER "valid,100,0,,,,,,,9.5,1.2.3\n", "runs/x/train.csv:2: valid_bleu '1.2.3'"},
        {HEADER ",100,0,5,,,,,,,\n", "runs/x/train.csv:2: empty kind"},
        {"\n", "missing column 'kind'"},
    };
    for (size_t i = 0; i < NMT_ARRAY_LEN(bad); i++) {
        t = parse(bad[i].text, NMT_ERR_FORMAT);
        CHECK(t == NULL, "no table on error");
        train_csv_free(t);
        CHECK_CONTAINS(nmt_error_message(), bad[i].needle);
    }
    /* a missing file names it */
    TrainCsvTable *none = NULL;
    char missing[1024];
    snprintf(missing, sizeof missing, "%s/nope/train.csv", test_tmpdir());
    CHECK_EQ_INT(train_csv_read(missing, &none), NMT_ERR_IO);
    CHECK_CONTAINS(nmt_error_message(), missing);
}

static void check_series(const TrainCsvTable *t, TrainCsvKind kind, TrainCsvColumn col,
                         const double *steps, const double *values, size_t n, const char *what) {
    TrainCsvSeries s;
    CHECK_EQ_INT(train_csv_series(t, kind, col, &s), NMT_OK);
    int same = s.n == n;
    for (size_t i = 0; same && i < n; i++) same = s.step[i] == steps[i] && s.value[i] == values[i];
    CHECK(same, "%s: %zu points, expected %zu", what, s.n, n);
    if (!same)
        for (size_t i = 0; i < s.n; i++) fprintf(stderr, "  (%g, %g)\n", s.step[i], s.value[i]);
    train_csv_series_free(&s);
}

static void test_resume(void) {
    /* a run to step 500 with validations at 200 and 400, resumed from the
     * checkpoint at 200: its rows from 300 on replace the old ones */
    TrainCsvTable *t = parse(HEADER "train,100,0,9,,,,,,,\n"
                                    "train,200,0,8,,,,,,,\n"
                                    "valid,200,0,,,,,,,50,1\n"
                                    "train,300,0,7,,,,,,,\n"
                                    "train,400,0,6,,,,,,,\n"
                                    "valid,400,0,,,,,,,40,2\n"
                                    "train,500,0,5,,,,,,,\n"
                                    "train,300,0,7.5,,,,,,,\n" /* resumed */
                                    "train,400,0,6.5,,,,,,,\n"
                                    "valid,400,0,,,,,,,45,\n" /* BLEU not computed */
                                    "train,500,0,5.5,,,,,,,\n"
                                    "train,600,0,4.5,,,,,,,\n"
                                    "valid,600,1,,,,,,,35,3\n"
                                    "valid,600,1,,,,,,,34,4\n", /* same step again: replaces */
                             NMT_OK);
    if (!t) return;
    check_series(t, TRAIN_CSV_TRAIN, TRAIN_CSV_COL_LOSS, (double[]){100, 200, 300, 400, 500, 600},
                 (double[]){9, 8, 7.5, 6.5, 5.5, 4.5}, 6, "train loss after resume");
    check_series(t, TRAIN_CSV_VALID, TRAIN_CSV_COL_VALID_PPL, (double[]){200, 400, 600},
                 (double[]){50, 45, 34}, 3, "valid ppl after resume");
    /* the old BLEU at 400 was cut by the resume; the new row at 400 has none */
    check_series(t, TRAIN_CSV_VALID, TRAIN_CSV_COL_VALID_BLEU, (double[]){200, 600},
                 (double[]){1, 4}, 2, "valid bleu after resume");
    check_series(t, TRAIN_CSV_TRAIN, TRAIN_CSV_COL_PPL, NULL, NULL, 0, "empty column");
    train_csv_free(t);

    /* a resumed run that stopped before its first validation: the old
     * validations after the resume step are gone */
    t = parse(HEADER "train,100,0,9,,,,,,,\n"
                     "valid,100,0,,,,,,,60,\n"
                     "train,200,0,8,,,,,,,\n"
                     "valid,200,0,,,,,,,50,\n"
                     "train,300,0,7,,,,,,,\n"
                     "valid,300,0,,,,,,,40,\n"
                     "train,150,0,8.6,,,,,,,\n",
              NMT_OK);
    if (!t) return;
    check_series(t, TRAIN_CSV_VALID, TRAIN_CSV_COL_VALID_PPL, (double[]){100}, (double[]){60}, 1,
                 "valid ppl cut by a train resume");
    check_series(t, TRAIN_CSV_TRAIN, TRAIN_CSV_COL_LOSS, (double[]){100, 150}, (double[]){9, 8.6},
                 2, "train loss cut back to 150");
    train_csv_free(t);
}

/* ------------------------------------------------------------------ */
/* The SVG of cmd_plot                                                 */
/* ------------------------------------------------------------------ */

typedef struct {
    int found;
    int polylines;
    int points;
    int markers;
    double first_x, first_y, last_x, last_y;
} SeriesInfo;

/* Finds the series group whose <title> is `name` and counts its points. */
static SeriesInfo series_info(const char *svg, const char *name) {
    SeriesInfo si = {0};
    char want[256];
    snprintf(want, sizeof want, "<title>%s</title>", name);
    for (const char *g = strstr(svg, "<g class=\"series\""); g; g = strstr(g + 1, "<g class=\"series\"")) {
        const char *end = strstr(g, "</g>");
        const char *title = strstr(g, "<title>");
        if (!end || !title || title > end || strncmp(title, want, strlen(want))) continue;
        si.found = 1;
        for (const char *p = strstr(g, "points=\""); p && p < end; p = strstr(p + 1, "points=\"")) {
            si.polylines++;
            const char *q = p + 8;
            int first = 1;
            while (*q && *q != '"') {
                double x, y;
                int used;
                if (sscanf(q, "%lf,%lf%n", &x, &y, &used) != 2) break;
                if (first && si.polylines == 1) {
                    si.first_x = x;
                    si.first_y = y;
                }
                first = 0;
                si.last_x = x;
                si.last_y = y;
                si.points++;
                q += used;
                while (*q == ' ') q++;
            }
        }
        const char *m = end + strlen("</g>\n");
        if (!strncmp(m, "<g class=\"markers\"", 18)) {
            const char *mend = strstr(m, "</g>");
            for (const char *c = strstr(m, "<circle"); c && c < mend; c = strstr(c + 1, "<circle"))
                si.markers++;
        }
        break;
    }
    return si;
}

static int count_substr(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static int have_python3(void) {
    return system("python3 -c 'import xml.dom.minidom' >/dev/null 2>&1") == 0;
}

/* Parses the file as XML with python3 (1 ok, 0 not well-formed, -1 skipped). */
static int xml_ok(const char *path) {
    if (!have_python3()) return -1;
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])\" '%s'",
             path);
    return system(cmd) == 0;
}

static int run_plot(const char *dir, const char *out) {
    char *argv[6];
    int argc = 0;
    argv[argc++] = "plot";
    argv[argc++] = "--run";
    argv[argc++] = (char *)dir;
    if (out) {
        argv[argc++] = "--out";
        argv[argc++] = (char *)out;
    }
    argv[argc] = NULL;
    fflush(stdout);
    return cmd_plot(argc, argv);
}

/* A run folder `name` under the test folder with train.csv = text. */
static const char *make_run(const char *name, const char *text) {
    static char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    mkdir(dir, 0755);
    test_write_file(dir, "train.csv", text, strlen(text));
    return dir;
}

static void test_svg(void) {
    /* 50 train rows (steps 100..5000, loss 9 -> 2 linearly, ppl = exp(loss))
     * and 10 validations (every 500 steps), the third without BLEU */
    size_t cap = 1 << 16, n = 0;
    char *csv = malloc(cap);
    n += (size_t)snprintf(csv + n, cap - n, "%s", HEADER);
    for (int i = 0; i < 50; i++) {
        double loss = 9 - 7.0 * i / 49;
        n += (size_t)snprintf(csv + n, cap - n, "train,%d,%d,%.6f,%.6f,0.001,1.0,1000,1000,,\n",
                              100 * (i + 1), i / 25, loss, exp(loss));
        if ((i + 1) % 5 == 0) {
            int k = (i + 1) / 5;
            if (k == 3)
                n += (size_t)snprintf(csv + n, cap - n, "valid,%d,%d,,,,,,,%.3f,\n", 100 * (i + 1),
                                      i / 25, 100.0 / k + 5);
            else
                n += (size_t)snprintf(csv + n, cap - n, "valid,%d,%d,,,,,,,%.3f,%.2f\n",
                                      100 * (i + 1), i / 25, 100.0 / k + 5, 3.0 * k);
        }
    }
    const char *dir = make_run("run&<1>", csv);
    free(csv);
    CHECK_EQ_INT(run_plot(dir, NULL), 0);
    char svg_path[1100];
    snprintf(svg_path, sizeof svg_path, "%s/curves.svg", dir);
    char *svg = read_text(svg_path);
    CHECK(svg != NULL, "%s written", svg_path);
    if (!svg) return;
    int x = xml_ok(svg_path);
    if (x < 0) printf("SKIP: python3 not found, XML well-formedness not checked\n");
    else CHECK(x == 1, "%s is not well-formed XML", svg_path);
    CHECK(!strncmp(svg, "<?xml", 5), "XML declaration");
    CHECK_CONTAINS(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"");
    CHECK_CONTAINS(svg, "run&amp;&lt;1&gt;"); /* the run name, escaped */
    CHECK(strstr(svg, "run&<1>") == NULL, "raw run name in the SVG");
    CHECK_EQ_INT(count_substr(svg, "<g class=\"panel\">"), 3);
    CHECK_CONTAINS(svg, ">Training loss</text>");
    CHECK_CONTAINS(svg, ">Perplexity</text>");
    CHECK_CONTAINS(svg, ">Validation BLEU and chrF</text>");
    CHECK(strstr(svg, "validation chrF2") == NULL, "a chrF curve from a log without valid_chrf values");
    CHECK_CONTAINS(svg, ">step</text>");
    /* perplexity spans exp(9)/exp(2) > 10: log scale, labelled */
    CHECK_CONTAINS(svg, "perplexity (log scale)");
    CHECK_EQ_INT(count_substr(svg, "(log scale)"), 1);
    /* one legend: the perplexity panel holds two series */
    CHECK_EQ_INT(count_substr(svg, "<g class=\"legend\""), 1);

    SeriesInfo loss = series_info(svg, "training loss");
    SeriesInfo tppl = series_info(svg, "training");
    SeriesInfo vppl = series_info(svg, "validation");
    SeriesInfo bleu = series_info(svg, "validation BLEU");
    CHECK(loss.found && tppl.found && vppl.found && bleu.found, "series found: %d %d %d %d",
          loss.found, tppl.found, vppl.found, bleu.found);
    CHECK_EQ_INT(loss.polylines, 1);
    CHECK_EQ_INT(loss.points, 50);
    CHECK_EQ_INT(loss.markers, 0);
    CHECK_EQ_INT(tppl.points, 50);
    CHECK_EQ_INT(vppl.points, 10);
    CHECK_EQ_INT(vppl.markers, 10);
    CHECK_EQ_INT(bleu.points, 9);
    CHECK_EQ_INT(bleu.markers, 9);
    /* positions: the x axis runs 0..5000 over the plot (x 88..932); the
     * loss axis 0..10 (2..9 with a 3% margin, rounded out to steps of 2)
     * over the first panel's plot (y 296..76) */
    CHECK_NEAR(loss.first_x, 88 + 100.0 / 5000 * 844, 0.01);
    CHECK_NEAR(loss.last_x, 932, 0.01);
    CHECK_NEAR(loss.first_y, 296 - 9.0 / 10 * 220, 0.01);
    CHECK_NEAR(loss.last_y, 296 - 2.0 / 10 * 220, 0.01);
    /* the shared x axis: BLEU's last point (step 5000) at the same x */
    CHECK_NEAR(bleu.last_x, 932, 0.01);
    CHECK_NEAR(vppl.first_x, 88 + 500.0 / 5000 * 844, 0.01);
    /* the training perplexity decreases: its pixel y increases */
    CHECK(tppl.first_y < tppl.last_y, "ppl y %g -> %g", tppl.first_y, tppl.last_y);
    /* x tick labels 0, 1000, ..., 5000 */
    CHECK_CONTAINS(svg, ">5000</text>");
    nmt_free(svg);

    /* --out, a small perplexity range (linear), no BLEU at all, no training
     * perplexity, one validation only */
    dir = make_run("run2", HEADER "train,10,0,3.5,,,,,,,\ntrain,20,0,3.25,,,,,,,\n"
                                  "valid,20,0,,,,,,,25.5,\n");
    char out[1100];
    snprintf(out, sizeof out, "%s/elsewhere.svg", test_tmpdir());
    CHECK_EQ_INT(run_plot(dir, out), 0);
    svg = read_text(out);
    CHECK(svg != NULL, "--out written");
    if (svg) {
        x = xml_ok(out);
        CHECK(x != 0, "%s is not well-formed XML", out);
        CHECK(strstr(svg, "(log scale)") == NULL, "linear perplexity axis");
        CHECK_CONTAINS(svg, "no validation BLEU (not computed)");
        SeriesInfo v = series_info(svg, "validation");
        CHECK_EQ_INT(v.points, 1);
        CHECK_EQ_INT(v.markers, 1);
        CHECK_EQ_INT(series_info(svg, "training").points, 0);
        CHECK_CONTAINS(svg, ">training (no data)</text>"); /* in the legend */
        CHECK(strstr(svg, ">validation (no data)</text>") == NULL, "validation has data");
        CHECK_EQ_INT(series_info(svg, "training loss").points, 2);
    }
    nmt_free(svg);
    char def_path[1100];
    snprintf(def_path, sizeof def_path, "%s/curves.svg", dir);
    CHECK(access(def_path, F_OK) != 0, "no default output with --out");

    /* non-finite values split the line and are not drawn */
    dir = make_run("run3", HEADER "train,1,0,3,,,,,,,\ntrain,2,0,2.5,,,,,,,\ntrain,3,0,inf,,,,,,,\n"
                                  "train,4,0,2,,,,,,,\ntrain,5,0,1.5,,,,,,,\n");
    CHECK_EQ_INT(run_plot(dir, NULL), 0);
    snprintf(def_path, sizeof def_path, "%s/curves.svg", dir);
    svg = read_text(def_path);
    if (svg) {
        SeriesInfo l = series_info(svg, "training loss");
        CHECK_EQ_INT(l.polylines, 2);
        CHECK_EQ_INT(l.points, 4);
    }
    nmt_free(svg);
}

static void test_cli_errors(void) {
    char *argv_none[] = {"plot", NULL};
    CHECK_EQ_INT(cmd_plot(1, argv_none), 2);
    CHECK_CONTAINS(nmt_error_message(), "--run");
    char *argv_bad[] = {"plot", "--run", "x", "--bogus", NULL};
    CHECK_EQ_INT(cmd_plot(4, argv_bad), 2);
    CHECK_CONTAINS(nmt_error_message(), "--bogus");
    char *argv_missing[] = {"plot", "--run", NULL};
    CHECK_EQ_INT(cmd_plot(2, argv_missing), 2);
    char *argv_help[] = {"plot", "--help", NULL};
    CHECK_EQ_INT(cmd_plot(2, argv_help), 0);

    char nodir[1024];
    snprintf(nodir, sizeof nodir, "%s/no-such-run", test_tmpdir());
    CHECK_EQ_INT(run_plot(nodir, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "no-such-run/train.csv");

    const char *dir = make_run("header-only", HEADER);
    CHECK_EQ_INT(run_plot(dir, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "no rows to plot");
    CHECK_CONTAINS(nmt_error_message(), "header-only/train.csv");
    dir = make_run("empty", "");
    CHECK_EQ_INT(run_plot(dir, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "no rows to plot");

    dir = make_run("malformed", HEADER "train,1,0,3,,,,,,,\ntrain,2,0,oops,,,,,,,\n");
    CHECK_EQ_INT(run_plot(dir, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "malformed/train.csv:3:");
    char svg_path[1100];
    snprintf(svg_path, sizeof svg_path, "%s/curves.svg", dir);
    CHECK(access(svg_path, F_OK) != 0, "no SVG written on error");

    dir = make_run("nostep", "kind,loss\ntrain,3\n");
    CHECK_EQ_INT(run_plot(dir, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "nostep/train.csv: missing column 'step'");

    dir = make_run("unwritable", HEADER "train,1,0,3,,,,,,,\n");
    char bad_out[1100];
    snprintf(bad_out, sizeof bad_out, "%s/no/such/dir/x.svg", test_tmpdir());
    CHECK_EQ_INT(run_plot(dir, bad_out), 1);
}

/* Every allocation failing in turn gives NMT_ERR_NOMEM (never a crash). */
static void test_nomem(void) {
    const char *dir = make_run("nomem", HEADER "train,1,0,3,20,,,,,,\ntrain,2,0,2.5,12,,,,,,\n"
                                               "valid,2,0,,,,,,,15,3\n");
    char csv[1100];
    snprintf(csv, sizeof csv, "%s/train.csv", dir);
    int failures_seen = 0, ok_at_end = 0;
    for (long k = 1; k < 200; k++) {
        TrainCsvTable *t = NULL;
        nmt_alloc_fail_at(k);
        NmtStatus st = train_csv_read(csv, &t);
        SvgFigure *fig = NULL;
        if (!st) {
            fig = svg_figure_create("t", "step");
            int p = 0;
            st = fig ? svg_figure_add_panel(fig, "a", "b", SVG_SCALE_AUTO, NULL, &p) : NMT_ERR_NOMEM;
            TrainCsvSeries s = {0};
            if (!st) st = train_csv_series(t, TRAIN_CSV_TRAIN, TRAIN_CSV_COL_LOSS, &s);
            if (!st) st = svg_figure_add_series(fig, p, "x", s.step, s.value, s.n, NULL, 0);
            train_csv_series_free(&s);
            char *svg = NULL;
            if (!st) st = svg_figure_render(fig, &svg, NULL);
            nmt_free(svg);
        }
        nmt_alloc_fail_at(0);
        svg_figure_free(fig);
        train_csv_free(t);
        if (st == NMT_ERR_NOMEM) failures_seen++;
        else if (st == NMT_OK) {
            ok_at_end = 1;
            break;
        } else {
            CHECK(0, "allocation %ld failing gave status %d (%s)", k, st, nmt_error_message());
            break;
        }
    }
    CHECK(failures_seen > 3 && ok_at_end, "nomem: %d failures, ok at end %d", failures_seen, ok_at_end);
}

/* ------------------------------------------------------------------ */
/* Bar charts (bar_svg.h, nmt plot --bars)                             */
/* ------------------------------------------------------------------ */

/* Heights of the bars of series NAME, in order (at most cap); returns the
 * count, or -1 when the series is missing. */
static int bar_heights(const char *svg, const char *name, double *h, int cap) {
    char needle[256];
    snprintf(needle, sizeof needle, "<g class=\"series\" fill=\"");
    for (const char *p = strstr(svg, needle); p; p = strstr(p + 1, needle)) {
        const char *t = strstr(p, "<title>");
        char want[256];
        snprintf(want, sizeof want, "<title>%s</title>", name);
        if (!t || strncmp(t, want, strlen(want))) continue;
        const char *end = strstr(t, "</g>");
        int n = 0;
        for (const char *r = strstr(t, "<rect class=\"bar\""); r && r < end;
             r = strstr(r + 1, "<rect class=\"bar\"")) {
            const char *hh = strstr(r, "height=\"");
            if (n < cap && hh) h[n] = atof(hh + 8);
            n++;
        }
        return n;
    }
    return -1;
}

static void test_bar_labels(void) {
    char b[32];
    svg_bars_value_label(34.56, b, sizeof b);
    CHECK_EQ_STR(b, "34.6");
    svg_bars_value_label(4.44, b, sizeof b);
    CHECK_EQ_STR(b, "4.4");
    svg_bars_value_label(12345.4, b, sizeof b);
    CHECK_EQ_STR(b, "12345");
    svg_bars_value_label(0.1234, b, sizeof b);
    CHECK_EQ_STR(b, "0.12");
    svg_bars_value_label(0, b, sizeof b);
    CHECK_EQ_STR(b, "0");
    svg_bars_value_label(-2.25, b, sizeof b);
    CHECK_EQ_STR(b, "-2.2");
    svg_bars_value_label(NAN, b, sizeof b);
    CHECK_EQ_STR(b, "n/a");
}

static void test_bar_chart(void) {
    const char *cats[] = {"none", "a&<b>", "local-p"};
    SvgBarChart *c = svg_bars_create("Ablation \"x\"", "variant", cats, 3);
    CHECK(c != NULL, "chart created");
    if (!c) return;
    int p0 = -1, p1 = -1;
    CHECK_EQ_INT(svg_bars_add_panel(c, "BLEU", NULL, &p0), NMT_OK);
    double all[] = {10, 20, NAN}, shrt[] = {5, 0, 40};
    CHECK_EQ_INT(svg_bars_add_series(c, p0, "all", all, NULL), NMT_OK);
    CHECK_EQ_INT(svg_bars_add_series(c, p0, "short", shrt, "#123456"), NMT_OK);
    CHECK_EQ_INT(svg_bars_add_panel(c, "Speed", NULL, &p1), NMT_OK);
    double tok[] = {-50, 150, 100};
    CHECK_EQ_INT(svg_bars_add_series(c, p1, "tokens/s", tok, NULL), NMT_OK);
    CHECK_EQ_INT(p0, 0);
    CHECK_EQ_INT(p1, 1);
    char path[1100];
    snprintf(path, sizeof path, "%s/bars.svg", test_tmpdir());
    CHECK_EQ_INT(svg_bars_write(c, path), NMT_OK);
    svg_bars_free(c);
    char *svg = read_text(path);
    CHECK(svg != NULL, "%s written", path);
    if (!svg) return;
    int x = xml_ok(path);
    CHECK(x != 0, "%s is not well-formed XML", path);
    CHECK_EQ_INT(count_substr(svg, "<g class=\"panel\">"), 2);
    CHECK_EQ_INT(count_substr(svg, "<rect class=\"bar\""), 8);
    CHECK_EQ_INT(count_substr(svg, "class=\"missing\""), 1);
    CHECK_EQ_INT(count_substr(svg, "<text class=\"category\""), 6); /* under each panel */
    CHECK_EQ_INT(count_substr(svg, "<g class=\"legend\""), 1);      /* BLEU holds two series */
    CHECK_CONTAINS(svg, ">a&amp;&lt;b&gt;</text>");
    CHECK(strstr(svg, "a&<b>") == NULL, "raw category in the SVG");
    CHECK_CONTAINS(svg, "Ablation &quot;x&quot;");
    CHECK_CONTAINS(svg, "fill=\"#123456\"");
    CHECK_CONTAINS(svg, ">tokens/s</text>"); /* one series: its name on the y axis */
    CHECK_CONTAINS(svg, ">variant</text>");
    CHECK(strstr(svg, "rotate(-35)") == NULL, "short labels are not turned");
    /* heights proportional to the values (the axis starts at 0) */
    double h[8] = {0};
    CHECK_EQ_INT(bar_heights(svg, "all", h, 8), 2);
    CHECK(h[0] > 10 && fabs(h[1] / h[0] - 2) < 0.01, "all: heights %g %g", h[0], h[1]);
    double hs[8] = {0};
    CHECK_EQ_INT(bar_heights(svg, "short", hs, 8), 3);
    CHECK(fabs(hs[2] / hs[0] - 8) < 0.01 && hs[1] == 0, "short: heights %g %g %g", hs[0], hs[1], hs[2]);
    CHECK_NEAR(hs[0], h[0] / 2, 0.02);
    /* a negative bar hangs below zero: same scale, 50 is a third of 150 */
    double ht[8] = {0};
    CHECK_EQ_INT(bar_heights(svg, "tokens/s", ht, 8), 3);
    CHECK(fabs(ht[1] / ht[0] - 3) < 0.01 && fabs(ht[2] / ht[0] - 2) < 0.01, "tokens: %g %g %g", ht[0],
          ht[1], ht[2]);
    CHECK_CONTAINS(svg, ">20.0</text>"); /* value labels */
    CHECK_CONTAINS(svg, ">-50.0</text>");
    CHECK_CONTAINS(svg, "<title>a&amp;&lt;b&gt;, short: 0</title>");
    nmt_free(svg);

    /* many long labels: turned, and the figure grows to fit the bars */
    const char *many[10] = {"bahdanau-additive-1", "bahdanau-additive-2", "bahdanau-additive-3",
                            "bahdanau-additive-4", "bahdanau-additive-5", "bahdanau-additive-6",
                            "bahdanau-additive-7", "bahdanau-additive-8", "bahdanau-additive-9",
                            "bahdanau-additive-10"};
    c = svg_bars_create(NULL, NULL, many, 10);
    double v[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    CHECK_EQ_INT(svg_bars_add_panel(c, "P", NULL, NULL), NMT_OK);
    for (int s = 0; s < 4; s++) CHECK_EQ_INT(svg_bars_add_series(c, 0, "s", v, NULL), NMT_OK);
    size_t len = 0;
    CHECK_EQ_INT(svg_bars_render(c, &svg, &len), NMT_OK);
    svg_bars_free(c);
    CHECK(svg && len == strlen(svg), "render length");
    CHECK_EQ_INT(count_substr(svg, "rotate(-35)"), 10);
    const char *w = strstr(svg, "width=\"");
    double width = w ? atof(w + 7) : 0;
    CHECK(width >= 10 * 4 * 24, "figure width %g too small for 40 bars", width);
    nmt_free(svg);
}

static const char *write_tsv(const char *name, const char *text) {
    static char path[1100];
    snprintf(path, sizeof path, "%s", test_write_file(test_tmpdir(), name, text, strlen(text)));
    return path;
}

static int run_bars(const char *table, const char *out, const char *title) {
    char *argv[8];
    int argc = 0;
    argv[argc++] = "plot";
    argv[argc++] = "--bars";
    argv[argc++] = (char *)table;
    if (out) {
        argv[argc++] = "--out";
        argv[argc++] = (char *)out;
    }
    if (title) {
        argv[argc++] = "--title";
        argv[argc++] = (char *)title;
    }
    argv[argc] = NULL;
    return cmd_plot(argc, argv);
}

static void test_bar_tsv(void) {
    /* BOM, CRLF, a comment, a blank line, panels grouped by name, missing values */
    const char *tsv = write_tsv("ok.tsv", "\xEF\xBB\xBFvariant\tBLEU:all\tspeed\tBLEU : short\r\n"
                                          "# a comment\r\n\r\n"
                                          "none\t1.5\t100\t2\r\n"
                                          "dot\tn/a\t200\t4\r\n"
                                          "bad\tfailed\t-\t\r\n");
    CHECK_EQ_INT(run_bars(tsv, NULL, "T&T"), 0);
    char out[1100];
    snprintf(out, sizeof out, "%s/ok.svg", test_tmpdir());
    char *svg = read_text(out);
    CHECK(svg != NULL, "default output %s", out);
    if (svg) {
        CHECK_EQ_INT(count_substr(svg, "<g class=\"panel\">"), 2);
        const char *pb = strstr(svg, ">BLEU</text>"), *ps = strstr(svg, ">speed</text>");
        CHECK(pb && ps && pb < ps, "panel order: BLEU first");
        double h[4] = {0};
        CHECK_EQ_INT(bar_heights(svg, "all", h, 4), 1);
        CHECK_EQ_INT(bar_heights(svg, "short", h, 4), 2);
        CHECK(fabs(h[1] / h[0] - 2) < 0.01, "short heights %g %g", h[0], h[1]);
        CHECK_EQ_INT(bar_heights(svg, "speed", h, 4), 2);
        CHECK_EQ_INT(count_substr(svg, "class=\"missing\""), 4);
        CHECK_CONTAINS(svg, ">T&amp;T</text>");
        CHECK_CONTAINS(svg, ">variant</text>");
        CHECK_EQ_INT(count_substr(svg, ">bad</text>"), 2);
    }
    nmt_free(svg);

    /* errors name FILE:LINE and the column */
    char other[1100];
    snprintf(other, sizeof other, "%s/bars-error.svg", test_tmpdir());
    tsv = write_tsv("fields.tsv", "v\ta\tb\nx\t1\t2\ny\t3\n");
    CHECK_EQ_INT(run_bars(tsv, other, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "fields.tsv:3: 2 fields, the header has 3");
    CHECK(access(other, F_OK) != 0, "no SVG written on error");
    tsv = write_tsv("num.tsv", "v\tBLEU:all\nx\t1\ny\t3x\n");
    CHECK_EQ_INT(run_bars(tsv, other, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "num.tsv:3: column 'BLEU:all': '3x' is not a number");
    tsv = write_tsv("inf.tsv", "v\ta\nx\tinf\n");
    CHECK_EQ_INT(run_bars(tsv, other, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "'inf' is not a number");
    tsv = write_tsv("nodata.tsv", "v\ta\n# nothing\n\n");
    CHECK_EQ_INT(run_bars(tsv, other, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "nodata.tsv: no data lines");
    tsv = write_tsv("empty.tsv", "");
    CHECK_EQ_INT(run_bars(tsv, other, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "empty.tsv: empty");
    tsv = write_tsv("onecol.tsv", "v\nx\n");
    CHECK_EQ_INT(run_bars(tsv, other, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "onecol.tsv:1: the header needs");
    tsv = write_tsv("hdr.tsv", "v\tBLEU:\nx\t1\n");
    CHECK_EQ_INT(run_bars(tsv, other, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "hdr.tsv:1: header column 2: 'BLEU:'");
    tsv = write_tsv("label.tsv", "v\ta\n \t1\n");
    CHECK_EQ_INT(run_bars(tsv, other, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "label.tsv:2: empty category label");
    snprintf(other, sizeof other, "%s/none.tsv", test_tmpdir());
    CHECK_EQ_INT(run_bars(other, NULL, NULL), 1);
    CHECK_CONTAINS(nmt_error_message(), "none.tsv");

    /* usage */
    char *argv_both[] = {"plot", "--run", "x", "--bars", "y", NULL};
    CHECK_EQ_INT(cmd_plot(5, argv_both), 2);
    CHECK_CONTAINS(nmt_error_message(), "exclude each other");
    char *argv_title[] = {"plot", "--run", "x", "--title", "t", NULL};
    CHECK_EQ_INT(cmd_plot(5, argv_title), 2);
    char *argv_nob[] = {"plot", "--bars", NULL};
    CHECK_EQ_INT(cmd_plot(2, argv_nob), 2);
}

/* Every allocation of reading and rendering a bar chart failing in turn
 * gives NMT_ERR_NOMEM (never a crash). */
static void test_bars_nomem(void) {
    const char *tsv = write_tsv("nomem.tsv", "v\tB:a\tB:b\tc\nx\t1\t2\t3\ny\t4\tn/a\t6\n");
    int failures_seen = 0, ok_at_end = 0;
    for (long k = 1; k < 300; k++) {
        SvgBarChart *c = NULL;
        char *svg = NULL;
        nmt_alloc_fail_at(k);
        NmtStatus st = svg_bars_read_tsv(tsv, "t", &c);
        if (!st) st = svg_bars_render(c, &svg, NULL);
        nmt_alloc_fail_at(0);
        nmt_free(svg);
        svg_bars_free(c);
        if (st == NMT_ERR_NOMEM) failures_seen++;
        else if (st == NMT_OK) {
            ok_at_end = 1;
            break;
        } else {
            CHECK(0, "allocation %ld failing gave status %d (%s)", k, st, nmt_error_message());
            break;
        }
    }
    CHECK(failures_seen > 5 && ok_at_end, "bars nomem: %d failures, ok at end %d", failures_seen,
          ok_at_end);
}

int main(void) {
    nmt_log_quiet(1);
    test_ticks();
    test_escape();
    test_format_number();
    test_writer();
    test_reader();
    test_resume();
    test_svg();
    test_cli_errors();
    test_nomem();
    test_bar_labels();
    test_bar_chart();
    test_bar_tsv();
    test_bars_nomem();
    return test_summary("test_plot");
}
