/* cmd_eval.c: `nmt eval`, sacreBLEU-compatible scoring of translation
 * files: corpus BLEU, chrF and TER printed exactly as the sacreBLEU 2.6.0 CLI
 * prints them (text with signature, or -f json), several systems in its
 * table, the paired bootstrap test (--paired-bs) and the single-system
 * confidence interval (--confidence). With --model it first translates
 * --src (src/translator.c); with --split-len it also scores short and long
 * source sentences apart. The metrics live in src/data/bleu.c, chrf.c,
 * ter.c and bootstrap.c; this file reads files, parses options and formats. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "common.h"
#include "data/bleu.h"
#include "data/bootstrap.h"
#include "data/chrf.h"
#include "data/corpus.h"
#include "data/py_format.h"
#include "data/ter.h"
#include "translator.h"

#define EVAL_WIDTH 1 /* sacreBLEU CLI's default --width */
#define SIG_CAP 256
#define LINE_CAP 1024

static void eval_usage(FILE *out) {
    fprintf(out,
            "usage: nmt eval [--bleu] [--chrf] [--ter] --ref REF [--ref REF ...] [--hyp HYP ...] [options]\n"
            "       nmt eval --bleu --ref REF < HYP\n"
            "       nmt eval --bleu --model M [--model M2 ...] --src SRC --ref REF [decoding options]\n"
            "\n"
            "Scores translations against references exactly as sacreBLEU %s does\n"
            "('sacrebleu REF... -i HYP... -f text'), printing its line and signature, e.g.\n"
            "  BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:%s = 34.0 66.0/40.8/...\n"
            "\n"
            "metrics (default --bleu):\n"
            "  --bleu             corpus BLEU (13a tokenizer, exp smoothing, max order 4)\n"
            "  --chrf             chrF2 (character 6-grams, beta 2, whitespace ignored);\n"
            "                     with --chrf, as sacreBLEU's options of the same names:\n"
            "  --chrf-char-order N, -cc N  character n-grams of orders 1..N (0..%d,\n"
            "                     default %d; 0 needs a word order, nc:N in the signature)\n"
            "  --chrf-word-order N, -cw N  word n-grams of orders 1..N as well (0..%d,\n"
            "                     default 0); 2 is chrF++ (chrF2++)\n"
            "  --chrf-beta B      recall weighs B times precision (0..%d, default %d;\n"
            "                     the metric is named chrF{B}, e.g. chrF3)\n"
            "  --chrf-whitespace  whitespace is part of the character n-grams (space:yes)\n"
            "  --chrf-eps-smoothing  average the F-scores of all orders, eps for a missing\n"
            "                     one (chrF++.py, NLTK, Moses), instead of precision and\n"
            "                     recall over the orders that have n-grams (eff:no)\n"
            "  --ter              TER (translation edit rate with shifts, tercom-compatible;\n"
            "                     lower is better); several metrics print in the order\n"
            "                     BLEU, chrF2, TER\n"
            "input:\n"
            "  --ref FILE         a reference file; repeat for several references (one\n"
            "                     line per segment in every file)\n"
            "  --hyp FILE         a hypothesis (system output) file; repeat to compare\n"
            "                     systems, the first being the baseline. Default: stdin\n"
            "  --src FILE         the source text (one sentence per line, aligned with the\n"
            "                     references): translated with --model, split by --split-len\n"
            "  --model FILE       translate --src with this checkpoint (several: an\n"
            "                     ensemble) and score the translation; the same as\n"
            "                     'nmt translate --model FILE < SRC | nmt eval --ref REF'\n"
            "options:\n"
            "  --lowercase        case-insensitive BLEU and chrF (case:lc; sacreBLEU -lc\n"
            "                     and --chrf-lowercase); TER is case-insensitive already\n"
            "  --ter-case-sensitive  TER keeps case (case:mixed)\n"
            "  --ter-normalized   TER with tercom's normalization: entities, punctuation\n"
            "                     split off, \"'s\" split (norm:yes)\n"
            "  --ter-no-punct     TER without the punctuation . , ? : ; ! \" ( ) (punct:no)\n"
            "  --ter-asian-support  TER splits CJK characters (with --ter-normalized) and\n"
            "                     drops CJK punctuation (with --ter-no-punct) (asian:yes)\n"
            "  --tokenize 13a|none  BLEU tokenizer (default 13a)\n"
            "  --json             sacreBLEU's JSON output (-f json)\n"
            "  --bootstrap N      bootstrap resampling with N resamples: with one\n"
            "                     hypothesis the 95%% confidence interval (sacreBLEU\n"
            "                     --confidence -cin N); with two or more the paired\n"
            "                     bootstrap test against the first (--paired-bs -pbsn N)\n"
            "  --seed S           resampling seed, an integer >= 0 (default %u, the\n"
            "                     same as sacreBLEU's SACREBLEU_SEED default); with\n"
            "                     --model and --sample K also the sampling seed\n"
            "  --split-len N      also score apart the sentences whose --src line has at\n"
            "                     most N whitespace-separated words and those with more\n"
            "                     (each with its sentence count; one hypothesis only)\n"
            "  -h, --help         this help\n"
            "decoding options (with --model): those of nmt translate, below; --nbest is refused:\n"
            "%s"
            "\n"
            "Files are UTF-8 text, one segment per line (whitespace at a line's end is\n"
            "stripped, as sacreBLEU's line.rstrip()), plain or gzip-compressed (recognised\n"
            "by content, whatever the name). A FILE of '-' is stdin, which one option at\n"
            "most may read.\n"
            "Exit codes: 0 ok, 1 unreadable, truncated or corrupt file, line counts\n"
            "that differ or output that cannot be written, 2 bad usage. See\n"
            "docs/evaluation.md.\n",
            NMT_SACREBLEU_VERSION, NMT_SACREBLEU_VERSION, CHRF_MAX_CHAR_ORDER, CHRF_CHAR_ORDER,
            CHRF_MAX_WORD_ORDER, CHRF_MAX_BETA, CHRF_BETA, BOOTSTRAP_DEFAULT_SEED,
            translator_options_help);
}

/* ------------------------------------------------------------------ */
/* Input                                                               */
/* ------------------------------------------------------------------ */

typedef struct {
    const char *path; /* as given; NULL for stdin */
    char *buf;
    char **lines;
    int64_t n;
    TranslatorLines translated; /* --model: owns `lines` */
} TextFile;

static void text_free(TextFile *t) {
    nmt_free(t->buf);
    if (t->translated.lines) translator_lines_free(&t->translated);
    else nmt_free(t->lines);
    t->buf = NULL;
    t->lines = NULL;
}

/* The translation of --src as the hypothesis (takes over `tl`), its lines
 * stripped as text_read strips a file's. */
static void text_from_translation(TextFile *t, TranslatorLines *tl) {
    memset(t, 0, sizeof *t);
    t->translated = *tl;
    t->lines = tl->lines;
    t->n = tl->n;
    for (int64_t i = 0; i < t->n; i++) bleu_rstrip(t->lines[i]);
    memset(tl, 0, sizeof *tl);
}

/* Whitespace-separated words of each line of `path` (--split-len), read as
 * `nmt translate` reads its input (gzip, BOM, "\r\n"; invalid UTF-8 kept). */
static NmtStatus source_word_counts(const char *path, int64_t **words, int64_t *n) {
    *words = NULL;
    *n = 0;
    LineReader *r;
    NmtStatus st = line_reader_open(path, &r);
    if (st) return st;
    line_reader_set_validate(r, 0);
    int64_t cap = 0;
    while (!st) {
        const char *line;
        size_t len;
        int got = 0;
        st = line_reader_next(r, &line, &len, &got);
        if (st || !got) break;
        if (*n == cap) {
            cap = cap ? cap * 2 : 1024;
            int64_t *w = nmt_realloc(*words, (size_t)cap * sizeof *w);
            if (!w) {
                st = nmt_fail_nomem("source word counts");
                break;
            }
            *words = w;
        }
        int64_t k = 0;
        for (size_t i = 0; i < len;) {
            while (i < len && (line[i] == ' ' || (line[i] >= '\t' && line[i] <= '\r'))) i++;
            if (i < len) k++;
            while (i < len && !(line[i] == ' ' || (line[i] >= '\t' && line[i] <= '\r'))) i++;
        }
        (*words)[(*n)++] = k;
    }
    line_reader_close(r);
    if (st) {
        nmt_free(*words);
        *words = NULL;
        *n = 0;
    }
    return st;
}

/* Reads `path` ("-": standard input) into t, one line per segment, the way
 * sacreBLEU 2.6.0 reads a file: split on "\n" only, line.rstrip() (every
 * Python whitespace character at the end stripped, "\r" too; only
 * --chrf-whitespace can tell), a last line without "\n" counted, a BOM kept,
 * no UTF-8 check here. gzip is inflated first (corpus_read_all), so a .gz
 * file scores as its plain text does; a truncated one is an error. */
static NmtStatus text_read(const char *path, TextFile *t) {
    memset(t, 0, sizeof *t);
    t->path = strcmp(path, "-") ? path : "<stdin>";
    char *buf;
    size_t len;
    NmtStatus st = corpus_read_all(path, &buf, &len);
    if (st != NMT_OK) return st;
    int64_t n = 0;
    for (size_t i = 0; i < len; i++) n += buf[i] == '\n';
    if (len && buf[len - 1] != '\n') n++;
    t->lines = nmt_malloc((size_t)(n ? n : 1) * sizeof *t->lines);
    if (!t->lines) {
        nmt_free(buf);
        return nmt_fail_nomem("line index");
    }
    size_t start = 0;
    for (int64_t i = 0; i < n; i++) {
        size_t end = start;
        while (end < len && buf[end] != '\n') end++;
        /* a line is a C string from here on: a NUL inside would end it
         * early, scoring less than sacreBLEU reads (the corpus reader
         * refuses NUL bytes too) */
        const char *nul = memchr(buf + start, '\0', end - start);
        if (nul) {
            nmt_free(buf);
            nmt_free(t->lines);
            t->lines = NULL;
            return nmt_fail(NMT_ERR_FORMAT, "%s:%lld: NUL byte at byte %zu; not scored (sacreBLEU would read it "
                            "as a character, nmt cannot)", t->path, (long long)i + 1, (size_t)(nul - (buf + start)) + 1);
        }
        buf[end] = '\0';
        bleu_rstrip(buf + start);
        t->lines[i] = buf + start;
        start = end + 1;
    }
    t->buf = buf;
    t->n = n;
    return NMT_OK;
}

/* ------------------------------------------------------------------ */
/* Scoring                                                             */
/* ------------------------------------------------------------------ */

typedef struct {
    int bleu, chrf, ter, json, n_bootstrap;
    uint64_t seed;
    BleuOptions bleu_opt;
    ChrfOptions chrf_opt;
    char chrf_name[CHRF_NAME_CAP]; /* chrf_name(&chrf_opt), set once the options are read */
    TerOptions ter_opt;
    int split_len;             /* --split-len N; -1: none */
    const int64_t *src_words;  /* (n_seg) words of each --src line, with --split-len */
} EvalOptions;

enum { SPLIT_SHORT = 0, SPLIT_LONG = 1 }; /* source <= split_len words, > split_len */

/* The metrics, in the order sacreBLEU prints them (sorted by name). */
enum { M_BLEU = 0, M_CHRF = 1, M_TER = 2, N_METRICS = 3 };

/* "BLEU", "chrF2" ("chrF2++" with --chrf-word-order 2, "chrF3" with
 * --chrf-beta 3) or "TER". */
static const char *metric_name(const EvalOptions *o, int m) {
    return m == M_BLEU ? "BLEU" : m == M_CHRF ? o->chrf_name : "TER";
}

typedef struct {
    const char *name;
    TextFile text;
    BleuResult bleu;
    double chrf, ter;
    int64_t *bleu_seg; /* (n_seg, BLEU_N_STATS) when bootstrapping */
    int64_t *chrf_seg; /* (n_seg, CHRF_N_STATS) */
    int64_t *ter_seg;  /* (n_seg, TER_N_STATS) */
    BootstrapResult bs[N_METRICS]; /* paired bootstrap results of each metric */
    int64_t split_n[2];        /* --split-len: sentences of each part */
    BleuResult split_bleu[2];  /* ... their BLEU, chrF and TER (when split_n > 0) */
    double split_chrf[2], split_ter[2];
} System;

static int metric_on(const EvalOptions *o, int m) {
    return m == M_BLEU ? o->bleu : m == M_CHRF ? o->chrf : o->ter;
}

static double metric_score(const System *sys, int m) {
    return m == M_BLEU ? sys->bleu.score : m == M_CHRF ? sys->chrf : sys->ter;
}

static double split_score(const System *sys, int m, int part) {
    return m == M_BLEU ? sys->split_bleu[part].score : m == M_CHRF ? sys->split_chrf[part] : sys->split_ter[part];
}

static NmtStatus score_system(System *sys, const TextFile *refs, int n_refs, const EvalOptions *o) {
    const int64_t n = sys->text.n;
    const char **r = nmt_malloc((size_t)n_refs * sizeof *r);
    if (!r) return nmt_fail_nomem("reference pointers");
    if (o->n_bootstrap > 0) {
        if (o->bleu) sys->bleu_seg = nmt_malloc((size_t)n * BLEU_N_STATS * sizeof(int64_t));
        if (o->chrf) sys->chrf_seg = nmt_malloc((size_t)n * CHRF_N_STATS * sizeof(int64_t));
        if (o->ter) sys->ter_seg = nmt_malloc((size_t)n * TER_N_STATS * sizeof(int64_t));
        if ((o->bleu && !sys->bleu_seg) || (o->chrf && !sys->chrf_seg) || (o->ter && !sys->ter_seg)) {
            nmt_free(r);
            return nmt_fail_nomem("segment statistics");
        }
    }
    BleuStats bs, split_bs[2];
    ChrfStats cs, split_cs[2];
    TerStats ts, split_ts[2];
    bleu_stats_clear(&bs);
    chrf_stats_clear(&cs);
    ter_stats_clear(&ts);
    for (int k = 0; k < 2; k++) {
        bleu_stats_clear(&split_bs[k]);
        chrf_stats_clear(&split_cs[k]);
        ter_stats_clear(&split_ts[k]);
        sys->split_n[k] = 0;
    }
    NmtStatus st = NMT_OK;
    int64_t tokenized_period = 0;
    for (int64_t i = 0; i < n && st == NMT_OK; i++) {
        const char *hyp = sys->text.lines[i];
        int part = o->src_words && o->src_words[i] > o->split_len ? SPLIT_LONG : SPLIT_SHORT;
        if (o->src_words) sys->split_n[part]++;
        for (int k = 0; k < n_refs; k++) r[k] = refs[k].lines[i];
        if (o->bleu) {
            BleuStats s;
            if ((st = bleu_sentence_stats(hyp, r, n_refs, &o->bleu_opt, &s)) != NMT_OK) break;
            bleu_stats_add(&bs, &s);
            bleu_stats_add(&split_bs[part], &s);
            if (sys->bleu_seg) bleu_stats_to_array(&s, sys->bleu_seg + i * BLEU_N_STATS);
            /* sacreBLEU's line.rstrip().endswith(' .'): every Python
             * whitespace character at the end stripped, no-break spaces too */
            size_t hyp_len = strlen(hyp), l = 0;
            for (size_t at = 0, w; at < hyp_len; at += w) {
                size_t space = bleu_space_len(hyp + at, hyp_len - at);
                w = space ? space : bleu_char_len(hyp + at, hyp_len - at);
                if (!space) l = at + w;
            }
            tokenized_period += l >= 2 && hyp[l - 2] == ' ' && hyp[l - 1] == '.';
        }
        if (o->chrf) {
            ChrfStats s;
            if ((st = chrf_sentence_stats(hyp, r, n_refs, &o->chrf_opt, &s)) != NMT_OK) break;
            chrf_stats_add(&cs, &s);
            chrf_stats_add(&split_cs[part], &s);
            if (sys->chrf_seg) chrf_stats_to_array(&s, sys->chrf_seg + i * CHRF_N_STATS);
        }
        if (o->ter) {
            TerStats s;
            if ((st = ter_sentence_stats(hyp, r, n_refs, &o->ter_opt, &s)) != NMT_OK) break;
            ter_stats_add(&ts, &s);
            ter_stats_add(&split_ts[part], &s);
            if (sys->ter_seg) ter_stats_to_array(&s, sys->ter_seg + i * TER_N_STATS);
        }
    }
    nmt_free(r);
    if (st != NMT_OK) return st;
    if (tokenized_period >= 100)
        fprintf(stderr,
                "nmt eval: warning: %s: %lld lines end in a tokenized period (' .'); "
                "BLEU expects detokenized text\n",
                sys->name, (long long)tokenized_period);
    bleu_score(&bs, &sys->bleu);
    sys->chrf = chrf_score_opt(&cs, &o->chrf_opt);
    sys->ter = ter_score(&ts);
    for (int k = 0; k < 2; k++)
        if (sys->split_n[k] > 0) {
            bleu_score(&split_bs[k], &sys->split_bleu[k]);
            sys->split_chrf[k] = chrf_score_opt(&split_cs[k], &o->chrf_opt);
            sys->split_ter[k] = ter_score(&split_ts[k]);
        }
    return NMT_OK;
}

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

/* The signature of each metric: sig[M_BLEU], sig[M_CHRF], sig[M_TER]. */
static void signatures(const EvalOptions *o, int n_refs, int with_bs, char sig[N_METRICS][SIG_CAP]) {
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    int nb = with_bs ? o->n_bootstrap : 0;
    bleu_signature(&o->bleu_opt, n_refs, nb, with_bs ? seed : NULL, sig[M_BLEU], SIG_CAP);
    chrf_signature(&o->chrf_opt, n_refs, nb, with_bs ? seed : NULL, sig[M_CHRF], SIG_CAP);
    ter_signature(&o->ter_opt, n_refs, nb, with_bs ? seed : NULL, sig[M_TER], SIG_CAP);
}

static BootstrapMetric bootstrap_metric(const EvalOptions *o, int m, int n_refs) {
    return m == M_BLEU   ? bootstrap_metric_bleu()
           : m == M_CHRF ? bootstrap_metric_chrf(&o->chrf_opt)
                         : bootstrap_metric_ter(n_refs);
}

static const int64_t *segment_stats(const System *sys, int m) {
    return m == M_BLEU ? sys->bleu_seg : m == M_CHRF ? sys->chrf_seg : sys->ter_seg;
}

static const char *const split_names[2] = {"short", "long"};

/* A score rounded as the CLI prints it (width 1), as a JSON number. */
static void json_rounded(FILE *out, double score) {
    char num[64], tmp[64];
    snprintf(tmp, sizeof tmp, "%.*f", EVAL_WIDTH, score);
    py_repr(strtod(tmp, NULL), num, sizeof num);
    fputs(num, out);
}

/* --split-len in a metric's JSON object (metric: M_BLEU, M_CHRF or M_TER):
 *  "split": {"max_words": N, "short": {"sentences": n, "score": s, ...}, "long": {...}}, */
static void json_split(FILE *out, const System *sys, int split_len, int metric) {
    fprintf(out, " \"split\": {\n  \"max_words\": %d,\n", split_len);
    for (int k = 0; k < 2; k++) {
        fprintf(out, "  \"%s\": {\"sentences\": %lld, \"score\": ", split_names[k], (long long)sys->split_n[k]);
        if (sys->split_n[k] == 0) fputs("null", out);
        else json_rounded(out, split_score(sys, metric, k));
        if (metric == M_BLEU && sys->split_n[k] > 0) {
            char verbose[256];
            bleu_format_verbose(&sys->split_bleu[k], verbose, sizeof verbose);
            fputs(", \"verbose_score\": ", out);
            py_json_string(out, verbose, 0);
        }
        fprintf(out, "}%s\n", k == 0 ? "," : "");
    }
    fputs(" },\n", out);
}

/* The --split-len lines of the text output, after the scores:
 *   short (source <= 25 words): 812 sentences, BLEU = 38.1 69.0/...(...), chrF2 = 61.3, TER = 50.2
 *   long (source > 25 words): 0 sentences */
static void print_split_text(FILE *out, const System *sys, const EvalOptions *o) {
    for (int k = 0; k < 2; k++) {
        fprintf(out, "%s (source %s %d words): %lld sentences", split_names[k], k == SPLIT_SHORT ? "<=" : ">",
                o->split_len, (long long)sys->split_n[k]);
        if (sys->split_n[k] > 0 && o->bleu) {
            char verbose[256];
            bleu_format_verbose(&sys->split_bleu[k], verbose, sizeof verbose);
            fprintf(out, ", BLEU = %.*f %s", EVAL_WIDTH, sys->split_bleu[k].score, verbose);
        }
        if (sys->split_n[k] > 0 && o->chrf)
            fprintf(out, ", %s = %.*f", metric_name(o, M_CHRF), EVAL_WIDTH, sys->split_chrf[k]);
        if (sys->split_n[k] > 0 && o->ter) fprintf(out, ", TER = %.*f", EVAL_WIDTH, sys->split_ter[k]);
        fputc('\n', out);
    }
}

/* One metric of Score.format(is_json=True), indent=1; with `split` (not
 * NULL) the --split-len scores of metric `metric` are added. */
static void json_score(FILE *out, const char *name, double score, const char *sig,
                       const double *mean_ci, const char *verbose, const System *split, int split_len,
                       int metric) {
    char num[64], tmp[64];
    fprintf(out, "{\n \"name\": \"%s\",\n", name);
    snprintf(tmp, sizeof tmp, "%.*f", EVAL_WIDTH, score);
    py_repr(strtod(tmp, NULL), num, sizeof num);
    fprintf(out, " \"score\": %s,\n \"signature\": ", num);
    py_json_string(out, sig, 0);
    fputs(",\n", out);
    if (mean_ci && mean_ci[0] > 0) {
        char m[32], c[32];
        snprintf(m, sizeof m, "%.*f", EVAL_WIDTH, mean_ci[0]);
        snprintf(c, sizeof c, "%.*f", EVAL_WIDTH, mean_ci[1]);
        py_repr(strtod(m, NULL), num, sizeof num);
        fprintf(out, " \"confidence_mean\": %s,\n", num);
        py_repr(strtod(c, NULL), num, sizeof num);
        fprintf(out, " \"confidence_var\": %s,\n", num);
        fprintf(out, " \"confidence\": \"\xce\xbc = %s \xc2\xb1 %s\",\n", m, c);
    }
    if (verbose && *verbose) {
        fputs(" \"verbose_score\": ", out);
        py_json_string(out, verbose, 0);
        fputs(",\n", out);
    }
    if (split) json_split(out, split, split_len, metric);
    /* every key:value of the signature as its own string field */
    const char *p = sig;
    while (*p) {
        size_t l = strcspn(p, "|"), kl = strcspn(p, ":");
        fprintf(out, " \"%.*s\": \"%.*s\"%s\n", (int)kl, p, (int)(l - kl - 1), p + kl + 1,
                p[l] ? "," : "");
        p += l + (p[l] ? 1 : 0);
    }
    fputs("}", out);
}

/* Single-system mode: sacreBLEU's print_single_results. */
static NmtStatus print_single(System *sys, int n_refs, const EvalOptions *o) {
    char sig[N_METRICS][SIG_CAP], lines[N_METRICS][LINE_CAP], verbose[256];
    double mc[N_METRICS][2] = {{0, 0}, {0, 0}, {0, 0}};
    int with_bs = o->n_bootstrap > 0;
    signatures(o, n_refs, with_bs, sig);
    for (int m = 0; m < N_METRICS && with_bs; m++) {
        if (!metric_on(o, m)) continue;
        BootstrapMetric bm = bootstrap_metric(o, m, n_refs);
        NmtStatus st = bootstrap_confidence(&bm, segment_stats(sys, m), sys->text.n, o->n_bootstrap,
                                            o->seed, &mc[m][0], &mc[m][1]);
        if (st != NMT_OK) return st;
    }
    bleu_format_verbose(&sys->bleu, verbose, sizeof verbose);
    int n = 0;
    if (o->json) {
        int several = o->bleu + o->chrf + o->ter > 1;
        if (several) printf("[\n");
        const System *split = o->split_len >= 0 ? sys : NULL;
        for (int m = 0; m < N_METRICS; m++) {
            if (!metric_on(o, m)) continue;
            if (n++) printf(",\n");
            json_score(stdout, metric_name(o, m), metric_score(sys, m), sig[m], mc[m],
                       m == M_BLEU ? verbose : NULL, split, o->split_len, m);
        }
        printf(several ? "\n]\n" : "\n");
        return NMT_OK;
    }
    for (int m = 0; m < N_METRICS; m++)
        if (metric_on(o, m))
            bleu_format_score(metric_name(o, m), sig[m], metric_score(sys, m), EVAL_WIDTH, mc[m],
                              m == M_BLEU ? verbose : NULL, lines[n++], LINE_CAP);
    if (n == 1) {
        printf("%s\n", lines[0]);
        if (o->split_len >= 0) print_split_text(stdout, sys, o);
        return NMT_OK;
    }
    /* Align the lines on their '=' */
    size_t lens[N_METRICS], w = 0;
    for (int i = 0; i < n; i++) {
        lens[i] = (size_t)(strchr(lines[i], '=') - lines[i]) - 1;
        if (lens[i] > w) w = lens[i];
    }
    for (int i = 0; i < n; i++) printf("%*s%.*s%s\n", (int)(w - lens[i]), "", (int)lens[i],
                                       lines[i], lines[i] + lens[i]);
    if (o->split_len >= 0) print_split_text(stdout, sys, o);
    return NMT_OK;
}

static void print_paired_text(int n_samples, const char *baseline) {
    char msg[128];
    int l = snprintf(msg, sizeof msg, "Paired bootstrap resampling test with %d resampling trials",
                     n_samples);
    py_put_repeat(stdout, "-", (size_t)l);
    printf("\n%s\n", msg);
    py_put_repeat(stdout, "-", (size_t)l);
    printf("\n");
    printf(" - Each system is pairwise compared to %s.\n", baseline);
    printf("   Actual system score / bootstrap estimated true mean / 95%% CI are provided for each metric.\n\n");
    printf(" - Null hypothesis: the system and the baseline translations are essentially\n");
    printf("   generated by the same underlying process. For a given system and the baseline,\n");
    printf("   the p-value is roughly the probability of the absolute score difference (delta)\n");
    printf("   or higher occurring due to chance, under the assumption that the null hypothesis is correct.\n\n");
    printf(" - Assuming a significance threshold of 0.05, the null hypothesis can be rejected\n");
    printf("   for p-values < 0.05 (marked with \"*\"). This means that the delta is unlikely to be attributed\n");
    printf("   to chance, hence the system is significantly \"different\" than the baseline.\n");
    printf("   Otherwise, the p-values are highlighted in red.\n\n");
    printf(" - NOTE: Significance does not tell whether a system is \"better\" than the baseline but rather\n");
    printf("   emphasizes the \"difference\" of the systems in terms of the replicability of the delta.\n\n");
}

static void json_result(FILE *out, const char *metric, const BootstrapResult *r, int last) {
    char s[40], p[40], m[40], c[40];
    py_repr(r->score, s, sizeof s);
    if (r->p_value >= 0) py_repr(r->p_value, p, sizeof p);
    else snprintf(p, sizeof p, "null");
    py_repr(r->mean, m, sizeof m);
    py_repr(r->ci, c, sizeof c);
    fprintf(out,
            "        \"%s\": {\n            \"score\": %s,\n            \"p_value\": %s,\n"
            "            \"mean\": %s,\n            \"ci\": %s\n        }%s\n",
            metric, s, p, m, c, last ? "" : ",");
}

/* Multi-system mode: sacreBLEU's print_results_table. */
static NmtStatus print_multi(System *sys, int n_sys, int n_refs, const EvalOptions *o) {
    int paired = o->n_bootstrap > 0;
    char sig[N_METRICS][SIG_CAP];
    NmtStatus st;
    signatures(o, n_refs, paired, sig);
    if (paired) {
        const int64_t **seg = nmt_malloc((size_t)n_sys * sizeof *seg);
        double *scores = nmt_malloc((size_t)n_sys * sizeof *scores);
        BootstrapResult *res = nmt_malloc((size_t)n_sys * sizeof *res);
        if (!seg || !scores || !res) {
            nmt_free(seg);
            nmt_free(scores);
            nmt_free(res);
            return nmt_fail_nomem("bootstrap results");
        }
        st = NMT_OK;
        for (int m = 0; m < N_METRICS && st == NMT_OK; m++) {
            if (!metric_on(o, m)) continue;
            BootstrapMetric bm = bootstrap_metric(o, m, n_refs);
            for (int s = 0; s < n_sys; s++) {
                seg[s] = segment_stats(&sys[s], m);
                scores[s] = metric_score(&sys[s], m);
            }
            st = bootstrap_paired(&bm, seg, scores, n_sys, sys[0].text.n, o->n_bootstrap, o->seed,
                                  res);
            for (int s = 0; s < n_sys && st == NMT_OK; s++) sys[s].bs[m] = res[s];
        }
        nmt_free(seg);
        nmt_free(scores);
        nmt_free(res);
        if (st != NMT_OK) return st;
    }
    int last = -1; /* the last metric printed */
    for (int m = 0; m < N_METRICS; m++)
        if (metric_on(o, m)) last = m;
    char baseline[LINE_CAP];
    snprintf(baseline, sizeof baseline, "%s%s", paired ? "Baseline: " : "", sys[0].name);
    if (o->json) {
        printf("[\n");
        for (int s = 0; s < n_sys; s++) {
            printf("    {\n        \"system\": ");
            py_json_string(stdout, s == 0 ? baseline : sys[s].name, 1);
            printf(",\n");
            for (int m = 0; m < N_METRICS; m++) {
                if (!metric_on(o, m)) continue;
                if (paired) json_result(stdout, metric_name(o, m), &sys[s].bs[m], m == last);
                else printf("        \"%s\": \"%.*f\"%s\n", metric_name(o, m), EVAL_WIDTH,
                            metric_score(&sys[s], m), m == last ? "" : ",");
            }
            printf("    }%s\n", s + 1 < n_sys ? "," : "");
        }
        printf("]\n");
        return NMT_OK;
    }
    const char *headers[1 + N_METRICS];
    char paired_headers[N_METRICS][64]; /* "chrF2 (μ ± 95% CI)" */
    int n_cols = 0;
    headers[n_cols++] = "System";
    for (int m = 0; m < N_METRICS; m++) {
        if (!metric_on(o, m)) continue;
        snprintf(paired_headers[m], sizeof paired_headers[m], "%s (\xce\xbc \xc2\xb1 95%% CI)", metric_name(o, m));
        headers[n_cols++] = paired ? paired_headers[m] : metric_name(o, m);
    }
    char **cells = nmt_calloc((size_t)n_sys * n_cols, sizeof *cells);
    if (!cells) return nmt_fail_nomem("table");
    st = NMT_OK;
    for (int s = 0; s < n_sys && st == NMT_OK; s++) {
        int c = 0;
        cells[s * n_cols + c++] = nmt_strdup(s == 0 ? baseline : sys[s].name);
        for (int m = 0; m < N_METRICS; m++) {
            if (!metric_on(o, m)) continue;
            double score = metric_score(&sys[s], m);
            const BootstrapResult *r = &sys[s].bs[m];
            if (!paired) {
                cells[s * n_cols + c++] = nmt_asprintf("%.*f", EVAL_WIDTH, score);
            } else if (r->p_value < 0) {
                cells[s * n_cols + c++] = nmt_asprintf("%.*f (%.*f \xc2\xb1 %.*f)", EVAL_WIDTH,
                                                       score, EVAL_WIDTH, r->mean, EVAL_WIDTH, r->ci);
            } else {
                cells[s * n_cols + c++] = nmt_asprintf(
                    "%.*f (%.*f \xc2\xb1 %.*f)\n(p = %.4f)%s", EVAL_WIDTH, score, EVAL_WIDTH,
                    r->mean, EVAL_WIDTH, r->ci, r->p_value, r->p_value > 0.05 ? "" : "*");
            }
        }
        for (int k = 0; k < n_cols; k++)
            if (!cells[s * n_cols + k]) st = nmt_fail_nomem("table cell");
    }
    if (st == NMT_OK) {
        py_fancy_grid(stdout, n_cols, n_sys, headers, cells);
        printf("\n");
        if (paired) print_paired_text(o->n_bootstrap, baseline);
        printf("-----------------\nMetric signatures\n-----------------\n");
        for (int m = 0; m < N_METRICS; m++)
            if (metric_on(o, m)) printf(" - %-10s %s\n", metric_name(o, m), sig[m]);
    }
    for (int k = 0; k < n_sys * n_cols; k++) nmt_free(cells[k]);
    nmt_free(cells);
    return st;
}

/* ------------------------------------------------------------------ */
/* Command line                                                        */
/* ------------------------------------------------------------------ */

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "nmt eval: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (try 'nmt eval --help')\n");
    return NMT_EXIT_USAGE;
}

/* sacreBLEU's chrF options (--chrf-*, -cc, -cw) into *opt: 1 when argv[*i]
 * is one and was taken (advancing *i past its value), 0 when it is
 * something else, -1 for a bad or missing value (the message, naming the
 * option, is set). */
static int chrf_take_option(int argc, char **argv, int *i, ChrfOptions *opt) {
    const char *a = argv[*i];
    int took, v;
    if (!strcmp(a, "--chrf-whitespace")) return opt->whitespace = 1;
    if (!strcmp(a, "--chrf-eps-smoothing")) return opt->eps_smoothing = 1;
    if ((took = cli_take_int(argc, argv, i, "--chrf-word-order", 0, CHRF_MAX_WORD_ORDER, &opt->word_order)) ||
        (took = cli_take_int(argc, argv, i, "-cw", 0, CHRF_MAX_WORD_ORDER, &opt->word_order)))
        return took;
    if ((took = cli_take_int(argc, argv, i, "--chrf-char-order", 0, CHRF_MAX_CHAR_ORDER, &v)) ||
        (took = cli_take_int(argc, argv, i, "-cc", 0, CHRF_MAX_CHAR_ORDER, &v))) {
        if (took > 0) chrf_set_char_order(opt, v);
        return took;
    }
    if ((took = cli_take_int(argc, argv, i, "--chrf-beta", 0, CHRF_MAX_BETA, &v)) > 0) chrf_set_beta(opt, v);
    return took;
}

/* --model: the translation of --src, exactly as `nmt translate` writes it. */
static NmtStatus translate_source(const TranslatorOptions *topt, const char *src_path, TextFile *out) {
    Translator *tr = NULL;
    TranslatorLines tl = {0};
    NmtStatus st = translator_open(topt, &tr);
    if (!st) st = translator_translate_file(tr, src_path, NULL, &tl);
    translator_free(tr);
    if (st) {
        translator_lines_free(&tl);
        return st;
    }
    text_from_translation(out, &tl);
    return NMT_OK;
}

/* The combinations of options that make no sense; rc of usage_error or OK. */
static int check_usage(const EvalOptions *o, const TranslatorOptions *topt, int decoding_opts, const char *src_path,
                       int n_refs, int n_hyps) {
    if (n_refs == 0) return usage_error("%s", "no reference: give --ref FILE");
    if (topt->n_models > 0 && !src_path)
        return usage_error("%s", "--model needs --src FILE, the source text to translate");
    if (topt->n_models > 0 && n_hyps > 0)
        return usage_error("%s", "--model translates --src into the hypothesis: give no --hyp with it");
    if (topt->n_models == 0 && decoding_opts > 0)
        return usage_error("%s", "decoding options (--beam, --batch, --device, ...) need --model");
    if (topt->nbest > 1)
        return usage_error("%s", "--nbest does not apply to eval, which scores one translation per source line");
    if (topt->alignment.on || topt->alignment.units_given)
        return usage_error("%s", "--alignment does not apply to eval, which scores the translations alone");
    if (o->split_len >= 0 && !src_path)
        return usage_error("%s", "--split-len needs --src FILE, the source text whose words are counted");
    if (src_path && topt->n_models == 0 && o->split_len < 0)
        return usage_error("%s", "--src is used with --model (to translate it) or --split-len");
    if (o->split_len >= 0 && n_hyps > 1)
        return usage_error("%s", "--split-len scores one hypothesis, not several --hyp files");
    return NMT_EXIT_OK;
}

/* Standard input can be read once: "-" given to --ref, --hyp or --src, or
 * the hypothesis when neither --hyp nor --model gives it. Two readers are a
 * usage error naming both (the second would find stdin empty); so is --src -
 * with --model, which reads --src twice (its line count, then to translate). */
static int check_stdin_once(const char **ref_paths, int n_refs, const char **hyp_paths, int n_hyps,
                            const char *src_path, int n_models) {
    if (n_models > 0 && src_path && !strcmp(src_path, "-"))
        return usage_error("%s", "--src - with --model: the source is read twice (its line count, then "
                                 "to translate it), which standard input cannot be: give a file");
    const char *who[2];
    int n = 0;
    if (n_hyps == 0 && n_models == 0) who[n++] = "the hypothesis (no --hyp: stdin)";
    for (int k = 0; k < n_hyps; k++)
        if (!strcmp(hyp_paths[k], "-") && n < 2) who[n++] = "--hyp -";
    for (int k = 0; k < n_refs; k++)
        if (!strcmp(ref_paths[k], "-") && n < 2) who[n++] = "--ref -";
    if (src_path && !strcmp(src_path, "-") && n < 2) who[n++] = "--src -";
    if (n < 2) return NMT_EXIT_OK;
    char msg[LINE_CAP];
    snprintf(msg, sizeof msg, "%s and %s would both read standard input, which can be read once: "
             "give one of them as a file", who[0], who[1]);
    return usage_error("%s", msg);
}

int cmd_eval(int argc, char **argv) {
    EvalOptions o;
    memset(&o, 0, sizeof o);
    o.seed = BOOTSTRAP_DEFAULT_SEED;
    o.split_len = -1;
    bleu_options_default(&o.bleu_opt);
    TranslatorOptions topt;
    translator_options_init(&topt);
    int decoding_opts = 0; /* decoding options other than --model */
    int seed_given = 0;   /* --seed: the bootstrap's, and --sample's when it translates */
    int ter_opts = 0;     /* a --ter-* option was given */
    const char *chrf_opt_given = NULL; /* the first chrF option (--chrf-*, -cc, -cw), as given */
    const char *src_path = NULL;
    int n_refs = 0, n_hyps = 0;
    const char **ref_paths = nmt_calloc((size_t)argc + 1, sizeof *ref_paths);
    const char **hyp_paths = nmt_calloc((size_t)argc + 1, sizeof *hyp_paths);
    if (!ref_paths || !hyp_paths) {
        nmt_free(ref_paths);
        nmt_free(hyp_paths);
        fprintf(stderr, "nmt eval: out of memory\n");
        return NMT_EXIT_FAILURE;
    }
    int rc = NMT_EXIT_OK;
    for (int i = 1; i < argc && rc == NMT_EXIT_OK; i++) {
        const char *a = argv[i], *v;
        int missing = 0, took, n_models = topt.n_models;
        uint64_t num;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            eval_usage(stdout);
            nmt_free(ref_paths);
            nmt_free(hyp_paths);
            return NMT_EXIT_OK;
        } else if (!strcmp(a, "--bleu")) {
            o.bleu = 1;
        } else if (!strcmp(a, "--chrf")) {
            o.chrf = 1;
        } else if (!strcmp(a, "--ter")) {
            o.ter = 1;
        } else if (!strcmp(a, "--ter-case-sensitive")) {
            o.ter_opt.case_sensitive = ter_opts = 1;
        } else if (!strcmp(a, "--ter-normalized")) {
            o.ter_opt.normalized = ter_opts = 1;
        } else if (!strcmp(a, "--ter-no-punct")) {
            o.ter_opt.no_punct = ter_opts = 1;
        } else if (!strcmp(a, "--ter-asian-support")) {
            o.ter_opt.asian_support = ter_opts = 1;
        } else if (!strcmp(a, "--lowercase") || !strcmp(a, "-lc")) {
            o.bleu_opt.lowercase = o.chrf_opt.lowercase = 1;
        } else if (!strcmp(a, "--json")) {
            o.json = 1;
        } else if ((v = cli_option_value(argc, argv, &i, "--ref", &missing)) || missing) {
            if (missing || !*v) rc = usage_error("%s needs a file name", a);
            else ref_paths[n_refs++] = v;
        } else if ((v = cli_option_value(argc, argv, &i, "--hyp", &missing)) || missing) {
            if (missing || !*v) rc = usage_error("%s needs a file name", a);
            else hyp_paths[n_hyps++] = v;
        } else if ((v = cli_option_value(argc, argv, &i, "--src", &missing)) || missing) {
            if (missing || !*v) rc = usage_error("%s needs a file name", a);
            else src_path = v;
        } else if ((v = cli_option_value(argc, argv, &i, "--tokenize", &missing)) || missing) {
            if (missing) rc = usage_error("%s needs a value (13a or none)", a);
            else if (bleu_tokenize_parse(v, &o.bleu_opt.tokenize) != NMT_OK)
                rc = usage_error("unknown tokenizer '%s' (expected 13a or none)", v);
        } else if ((v = cli_option_value(argc, argv, &i, "--bootstrap", &missing)) || missing) {
            if (missing || !nmt_parse_u64(v, 1000000, &num) || num < 1)
                rc = usage_error("--bootstrap needs a number of resamples in 1..1000000, not '%s'",
                                 missing ? "" : v);
            else o.n_bootstrap = (int)num;
        } else if ((v = cli_option_value(argc, argv, &i, "--seed", &missing)) || missing) {
            if (missing || !nmt_parse_u64(v, UINT64_MAX, &num))
                rc = usage_error("--seed needs an integer in [0, 18446744073709551615], not '%s'", missing ? "" : v);
            else o.seed = num, seed_given = 1;
        } else if ((took = chrf_take_option(argc, argv, &i, &o.chrf_opt))) {
            if (took < 0) rc = usage_error("%s", nmt_error_message());
            else if (!chrf_opt_given) chrf_opt_given = a;
        } else if ((took = cli_take_int(argc, argv, &i, "--split-len", 0, INT_MAX, &o.split_len))) {
            if (took < 0) rc = usage_error("%s", nmt_error_message());
        } else if ((took = translator_take_option(argc, argv, &i, &topt))) {
            if (took < 0) rc = usage_error("%s", nmt_error_message());
            else if (topt.n_models == n_models) decoding_opts++;
        } else if (a[0] == '-' && a[1]) {
            rc = usage_error("unknown option '%s'", a);
        } else {
            rc = usage_error("unexpected argument '%s' (files go after --ref, --hyp or --src)", a);
        }
    }
    if (topt.sample > 0 && seed_given) topt.seed = o.seed; /* --seed is --sample's seed too when it translates */
    if (rc == NMT_EXIT_OK) rc = check_usage(&o, &topt, decoding_opts, src_path, n_refs, n_hyps);
    if (rc == NMT_EXIT_OK && ter_opts && !o.ter)
        rc = usage_error("%s", "the --ter-* options set up TER: add --ter");
    if (rc == NMT_EXIT_OK && chrf_opt_given && !o.chrf) {
        char msg[LINE_CAP];
        snprintf(msg, sizeof msg, "%.*s sets up chrF: add --chrf", (int)strcspn(chrf_opt_given, "="), chrf_opt_given);
        rc = usage_error("%s", msg);
    }
    if (rc == NMT_EXIT_OK && o.chrf && chrf_char_order(&o.chrf_opt) == 0 && o.chrf_opt.word_order == 0)
        rc = usage_error("%s", "--chrf-char-order 0 (-cc 0) needs --chrf-word-order (-cw) 1 or more: with "
                               "neither character nor word n-grams there is nothing to score (sacreBLEU fails on it)");
    chrf_name(&o.chrf_opt, o.chrf_name);
    if (rc == NMT_EXIT_OK) rc = check_stdin_once(ref_paths, n_refs, hyp_paths, n_hyps, src_path, topt.n_models);
    if (rc != NMT_EXIT_OK) {
        nmt_free(ref_paths);
        nmt_free(hyp_paths);
        return rc;
    }
    if (!o.bleu && !o.chrf && !o.ter) o.bleu = 1;

    TextFile *refs = nmt_calloc((size_t)n_refs, sizeof *refs);
    int n_sys = n_hyps ? n_hyps : 1;
    System *sys = nmt_calloc((size_t)n_sys, sizeof *sys);
    int64_t *src_words = NULL, n_src = 0;
    char translated_name[LINE_CAP];
    NmtStatus st = NMT_OK;
    if (!refs || !sys) st = nmt_fail_nomem("eval state");
    for (int k = 0; k < n_refs && st == NMT_OK; k++) st = text_read(ref_paths[k], &refs[k]);
    /* --src: its line count is checked before anything is translated */
    if (st == NMT_OK && src_path) st = source_word_counts(src_path, &src_words, &n_src);
    if (o.split_len >= 0) o.src_words = src_words;
    for (int k = 0; k < n_refs && st == NMT_OK && topt.n_models > 0; k++)
        if (refs[k].n != n_src)
            st = nmt_fail(NMT_ERR_FORMAT,
                          "line counts differ: source '%s' (--src) has %lld lines, reference '%s' has %lld lines",
                          src_path, (long long)n_src, refs[k].path, (long long)refs[k].n);
    int n_read = 0;
    if (st == NMT_OK && topt.n_models > 0) {
        snprintf(translated_name, sizeof translated_name, "%s (translated)", src_path);
        sys[0].name = translated_name;
        st = translate_source(&topt, src_path, &sys[0].text);
        if (st == NMT_OK) n_read = 1;
    }
    for (int s = 0; s < n_sys && st == NMT_OK && topt.n_models == 0; s++) {
        const char *path = n_hyps ? hyp_paths[s] : "-";
        int dup = 0;
        for (int t = 0; t < n_read && !dup; t++)
            if (!strcmp(sys[t].name, path)) dup = t + 1;
        if (dup == 1 && o.n_bootstrap > 0 && n_sys > 1) {
            fprintf(stderr, "nmt eval: ignoring '%s' as it was also given as the baseline\n", path);
            continue;
        }
        if (dup) {
            st = nmt_fail(NMT_ERR_USAGE, "'%s' is given twice as a system", path);
            break;
        }
        sys[n_read].name = strcmp(path, "-") ? path : "<stdin>";
        st = text_read(path, &sys[n_read].text);
        if (st == NMT_OK) n_read++;
    }
    n_sys = n_read;
    for (int s = 0; s < n_sys && st == NMT_OK; s++) {
        if (sys[s].text.n == 0) {
            st = nmt_fail(NMT_ERR_FORMAT, "'%s' has no lines to score", sys[s].name);
            break;
        }
        for (int k = 0; k < n_refs; k++)
            if (refs[k].n != sys[s].text.n) {
                st = nmt_fail(NMT_ERR_FORMAT,
                              "line counts differ: hypothesis '%s' has %lld lines, reference '%s' "
                              "has %lld lines",
                              sys[s].name, (long long)sys[s].text.n, refs[k].path,
                              (long long)refs[k].n);
                break;
            }
        if (st == NMT_OK && o.src_words && n_src != sys[s].text.n)
            st = nmt_fail(NMT_ERR_FORMAT,
                          "line counts differ: source '%s' (--src) has %lld lines, hypothesis '%s' has %lld lines",
                          src_path, (long long)n_src, sys[s].name, (long long)sys[s].text.n);
    }
    if (st == NMT_OK && o.n_bootstrap > 0 && n_hyps > 1 && n_sys < 2)
        st = nmt_fail(NMT_ERR_USAGE, "the paired bootstrap test needs two different systems");
    for (int s = 0; s < n_sys && st == NMT_OK; s++) st = score_system(&sys[s], refs, n_refs, &o);
    if (st == NMT_OK) {
        if (n_hyps > 1) st = print_multi(sys, n_sys, n_refs, &o);
        else st = print_single(&sys[0], n_refs, &o);
    }
    if (st != NMT_OK) {
        fprintf(stderr, "nmt eval: %s\n", nmt_error_message());
        rc = nmt_exit_code(st);
    }
    fflush(stdout);
    for (int k = 0; refs && k < n_refs; k++) text_free(&refs[k]);
    for (int s = 0; sys && s < n_read; s++) {
        text_free(&sys[s].text);
        nmt_free(sys[s].bleu_seg);
        nmt_free(sys[s].chrf_seg);
        nmt_free(sys[s].ter_seg);
    }
    nmt_free(src_words);
    nmt_free(refs);
    nmt_free(sys);
    nmt_free(ref_paths);
    nmt_free(hyp_paths);
    return rc;
}
