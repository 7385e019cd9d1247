/* cmd_score.c: `nmt score`: force-decodes given target sentences with a
 * trained model (or an ensemble) and writes one line per sentence pair, in
 * input order: the sum of the natural-log probabilities of the target
 * tokens and of the end-of-sentence token (docs/scoring.md), to rerank
 * n-best lists or filter corpora. This file parses the options, reads and
 * tokenizes the pairs, groups them by length into batches and writes the
 * scores; the scoring itself is src/model/seq2seq_score.c. The model is
 * named as for `nmt translate` (src/cli_model.c: --model, --config,
 * $NMT_MODEL); the progress line is src/progress_line.c; --alignment's
 * pairs are src/alignment.c's. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alignment.h"
#include "backend.h"
#include "backend_select.h"
#include "cli.h"
#include "cli_model.h"
#include "commands.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "data/tokenizer.h"
#include "model/seq2seq_score.h"
#include "progress_line.h"
#include "translator.h"

static const char score_usage[] =
    "usage: nmt score [--model FILE ...] [--config FILE [--set KEY=VALUE ...]]\n"
    "                 --src FILE --tgt FILE\n"
    "                 [--normalize] [--tokens] [--full-vocab] [--batch N]\n"
    "                 [--alignment hard|soft|P [--alignment-units words|tokens]]\n"
    "                 [--device auto|cpu|cuda] [--gpu N] [--threads N]\n"
    "                 [--progress | --no-progress] > scores.txt\n\n"
    "Scores every pair of --src and --tgt (aligned line by line, plain text or gzip;\n"
    "'-' reads standard input, for one of the two) with the model: one line per pair,\n"
    "in input order, holding log p(target | source), the sum of the natural-log\n"
    "probabilities of the target's tokens and of the end-of-sentence token </s>\n"
    "(no dropout, no label smoothing; each step's softmax leaves out PAD and BOS,\n"
    "as decoding does: `nmt translate --nbest` gives a hypothesis this score when its\n"
    "length and coverage penalties are 0). Both sides are tokenized with the model's\n"
    "own tokenizers; a target token unknown to the vocabulary is scored as <unk>.\n"
    "Long pairs are scored whole, never truncated. An empty source (or one of only\n"
    "spaces) cannot be encoded: its pair scores 0 when the target is empty too and\n"
    "-inf otherwise (nmt translate gives such a line the empty translation), with\n"
    "one warning at the end naming the first such line. An empty target scores </s>\n"
    "alone. Files of different line counts, invalid UTF-8 and NUL bytes are errors\n"
    "naming the file and line (exit 1); for two files this is checked before anything\n"
    "is written, with '-' when the input gets there (the lines before are written).\n"
    "The model is --model, else best.nmt in train.save_dir of --config, else the\n"
    "file named by $NMT_MODEL, as for nmt translate. When stderr is a terminal, it\n"
    "shows a progress line (lines, sentences/s, target tokens/s).\n"
    "See docs/scoring.md.\n\n"
    "options:\n"
    "  --model FILE          a checkpoint; several --model files make an ensemble,\n"
    "                        whose token log-probabilities are the mean of its\n"
    "                        members' (as an ensemble decodes); they must share the\n"
    "                        vocabularies\n"
    "  --config FILE         use train.save_dir/best.nmt of this config (when no\n"
    "                        --model), and the decode.batch and decode.maxi_batch\n"
    "                        its file or --set states (else the model's)\n"
    "  --set KEY=VALUE       change a key of --config (e.g. train.save_dir=runs/b)\n"
    "  --src FILE, --tgt FILE  the source and target sentences ('-': standard input)\n"
    "  --normalize           divide each score by the number of tokens scored: the\n"
    "                        target's tokens plus one for </s>\n"
    "  --tokens              after the score, a tab, the target's tokens as the\n"
    "                        tokenizer's pieces (an unknown one as <unk>) and </s>,\n"
    "                        separated by spaces, then a tab and each token's\n"
    "                        log-probability, separated by spaces, in the same order\n"
    "  --alignment hard|soft|P  last, after a tab: the word alignment of the pair read\n"
    "                        off the attention (as nmt translate --alignment gives\n"
    "                        it: 'source-target' positions from 0; hard: each\n"
    "                        target token to the source token it attends to most;\n"
    "                        P in (0, 1]: to every one weighted >= P; soft: the\n"
    "                        weights, one comma-separated group per target word)\n"
    "  --alignment-units words|tokens  count the words of the two lines (split at\n"
    "                        spaces; the default) or the model's tokens\n"
    "  --full-vocab          each step's softmax over the whole target vocabulary,\n"
    "                        PAD and BOS included, as the training loss and the\n"
    "                        validation perplexity (train.csv's valid_ppl) have it;\n"
    "                        slightly lower scores than decoding's\n"
    "  --batch N             sentences per batch, 1..4096 (default: the model's\n"
    "                        decode.batch); pairs are read decode.maxi_batch batches\n"
    "                        ahead and scored longest first (longer ones in smaller\n"
    "                        batches); the output keeps the input order\n"
    "  --device auto|cpu|cuda  where to score (default auto)\n"
    "  --gpu N               which GPU when one is used, 0-based among those\n"
    "                        CUDA_VISIBLE_DEVICES shows (default 0)\n"
    "  --threads N           CPU threads, 0..1024 (default 0: all cores)\n"
    "  --progress, --no-progress  a progress line on stderr (lines, sentences/s,\n"
    "                        target tokens/s); default: only when stderr is a terminal\n";

typedef struct {
    const char *models[TRANSLATOR_MAX_MODELS];
    int n_models;
    CliConfigArgs config; /* --config, --set */
    const char *src, *tgt;
    int normalize, tokens, full_vocab;
    AlignOptions alignment;  /* --alignment, --alignment-units */
    int batch;      /* 0: the model's decode.batch */
    int maxi_batch; /* --config's decode.maxi_batch; 0: the model's */
    int threads;    /* 0: all cores */
    int device;     /* CfgDevice */
    int gpu;
    int progress;   /* TRANSLATOR_PROGRESS_*: --progress, --no-progress, AUTO */
} ScoreOptions;

/* One pair of the block being read. */
typedef struct {
    int64_t line;        /* 1-based */
    int32_t *src, *tgt;  /* token ids, no BOS/EOS */
    int src_n, tgt_n, src_cap, tgt_cap;
    float *logp;         /* (tgt_n + 1) the tokens' log-probabilities, </s> last */
    int logp_cap;
    /* --alignment: the lines, where each token came from, and the attention */
    char *src_text, *tgt_text;
    TokenSpan *src_spans, *tgt_spans; /* (src_n), (tgt_n) */
    float *attn;                      /* (tgt_n, src_n) target token t's weights */
} ScorePair;

/* Host arrays of one batch, grown as batches need (data/batch.h layout). */
typedef struct {
    Batch b;
    int32_t *src, *tgt_in, *tgt_out; /* (S, B), (T, B), (T, B) */
    int *src_len, *tgt_len;          /* (B) */
    float *logp;                     /* (T, B) */
    float *attn;                     /* --alignment: (B, T, S) */
    size_t attn_cap;                 /* floats it holds */
    size_t src_cap, tgt_cap;         /* cells held */
    int cols_cap;
} ScoreBatch;

typedef struct {
    ScoreOptions opt;
    CliModel pick; /* the model --config or $NMT_MODEL named */
    Config cfg;    /* the first model's */
    Tokenizer *src_tok, *tgt_tok;
    Checkpoint ck[TRANSLATOR_MAX_MODELS];
    ModelDims dims[TRANSLATOR_MAX_MODELS];
    Backend *be;
    Seq2SeqScorer *sc;
    const char *src_name, *tgt_name; /* in messages */
    int batch, block;                /* sentences a batch; pairs a block */
    ScorePair *pairs;                /* (block) */
    int n;                           /* pairs in the block */
    int *order;                      /* (block) scoring order */
    ScoreBatch sb;
    int64_t empty_src, first_empty_src; /* pairs with an empty source; the first one's line */
    bool right_to_left;                 /* the models' model.right_to_left */
    ProgressLine progress;
    int64_t done, tokens; /* pairs scored, and their target tokens (</s> not counted) */
} ScoreRun;

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

/* Takes argv[*i] when it is an option of `nmt score`: 1, 0 (not one), -1
 * (a bad value; message set). */
static int take_option(int argc, char **argv, int *i, ScoreOptions *o) {
    const char *a = argv[*i];
    int r;
    if (!strcmp(a, "--normalize")) return o->normalize = 1;
    if (!strcmp(a, "--tokens")) return o->tokens = 1;
    if (!strcmp(a, "--full-vocab")) return o->full_vocab = 1;
    if (!strcmp(a, "--progress")) return o->progress = TRANSLATOR_PROGRESS_ON, 1; /* the last one wins */
    if (!strcmp(a, "--no-progress")) return o->progress = TRANSLATOR_PROGRESS_OFF, 1;
    if ((r = cli_take_config_arg(argc, argv, i, &o->config))) return r;
    if ((r = translator_take_model(argc, argv, i, o->models, &o->n_models))) return r;
    if ((r = cli_take_string(argc, argv, i, "--src", &o->src))) return r;
    if ((r = cli_take_string(argc, argv, i, "--tgt", &o->tgt))) return r;
    if ((r = cli_take_int(argc, argv, i, "--batch", 1, TRANSLATOR_MAX_BATCH, &o->batch))) return r;
    if ((r = alignment_take_option(argc, argv, i, &o->alignment))) return r;
    if ((r = cli_take_int(argc, argv, i, "--threads", 0, 1024, &o->threads))) return r;
    if ((r = cli_take_choice(argc, argv, i, "--device", device_names, &o->device))) return r;
    return cli_take_int(argc, argv, i, "--gpu", 0, 1023, &o->gpu);
}

/* The model: --model, else --config's best.nmt, else $NMT_MODEL, as nmt
 * translate names it (cli_model.h); a --config also gives the decode.batch
 * and decode.maxi_batch it states, as translate takes them. */
static NmtStatus pick_model(ScoreRun *r) {
    ScoreOptions *o = &r->opt;
    if (o->config.n_sets && !o->config.config_path)
        return nmt_fail(NMT_ERR_USAGE, "--set needs --config (it changes that config's keys)");
    if (!o->config.config_path) return cli_model_pick(NULL, o->models, &o->n_models, &r->pick);
    Config cfg;
    NmtStatus st = cli_load_config(&o->config, &cfg);
    if (st) return st;
    TranslatorOptions t;
    translator_options_init(&t);
    t.batch = o->batch;
    translator_options_from_config(&t, &cfg);
    o->batch = t.batch;
    o->maxi_batch = t.maxi_batch;
    st = cli_model_pick(&cfg, o->models, &o->n_models, &r->pick);
    config_free(&cfg);
    return st;
}

/* The options that must be there, and one standard input at most. */
static NmtStatus check_options(const ScoreOptions *o) {
    if (!o->src || !o->tgt)
        return nmt_fail(NMT_ERR_USAGE, "give the sentences to score with --src FILE and --tgt FILE");
    if (!strcmp(o->src, "-") && !strcmp(o->tgt, "-"))
        return nmt_fail(NMT_ERR_USAGE, "--src - and --tgt - would both read standard input, which holds one "
                        "file: give one of them as a file");
    return alignment_check_options(&o->alignment);
}

/* Two regular files of different line counts (or with a bad line) are
 * refused before anything is scored or written; standard input and pipes,
 * which can be read once, are checked as they are read. */
static NmtStatus check_line_counts(const char *src, const char *tgt) {
    struct stat s1, s2;
    if (!strcmp(src, "-") || !strcmp(tgt, "-") || stat(src, &s1) != 0 || stat(tgt, &s2) != 0 ||
        !S_ISREG(s1.st_mode) || !S_ISREG(s2.st_mode))
        return NMT_OK; /* a missing file is reported when it is opened */
    int64_t n_src, n_tgt;
    NmtStatus st = corpus_count_lines(src, &n_src);
    if (!st) st = corpus_count_lines(tgt, &n_tgt);
    if (st) return st;
    if (n_src != n_tgt)
        return nmt_fail(NMT_ERR_FORMAT, "corpus files differ in length: %s has %lld line%s, %s has %lld line%s", src,
                        (long long)n_src, n_src == 1 ? "" : "s", tgt, (long long)n_tgt, n_tgt == 1 ? "" : "s");
    return NMT_OK;
}

/* ------------------------------------------------------------------ */
/* Models                                                              */
/* ------------------------------------------------------------------ */

/* Reads every --model (translator_read_checkpoint: an ensemble shares the
 * first one's vocabularies), makes the backend and the scorer. */
static NmtStatus open_models(ScoreRun *r) {
    const ScoreOptions *o = &r->opt;
    NmtStatus st = NMT_OK;
    for (int k = 0; k < o->n_models && !st; k++) {
        Config cfg_k;
        st = translator_read_checkpoint(o->models[k], &r->src_tok, &r->tgt_tok, &r->ck[k], k ? &cfg_k : &r->cfg,
                                        &r->dims[k]);
        if (!st && k) {
            if (cfg_k.model.right_to_left != r->cfg.model.right_to_left)
                st = nmt_fail(NMT_ERR_USAGE, "%s: model.right_to_left is %s, the first --model's %s: an ensemble's "
                              "models must read the target in one direction", o->models[k],
                              cfg_k.model.right_to_left ? "true" : "false",
                              r->cfg.model.right_to_left ? "true" : "false");
            config_free(&cfg_k);
        }
    }
    r->right_to_left = !st && r->cfg.model.right_to_left;
    if (st) cli_model_explain(&r->pick, "score");
    if (!st && o->alignment.on && r->dims[0].style == ATTN_STYLE_NONE)
        st = nmt_fail(NMT_ERR_USAGE, "%s has no attention (model.attention.style none): --alignment reads the "
                      "attention of the first --model", o->models[0]);
    if (!st) st = backend_create_for(o->device, o->gpu, o->threads, "--device", "--gpu", &r->be);
    if (st) return st;
    r->batch = o->batch > 0 ? o->batch : r->cfg.decode.batch;
    if (r->batch > TRANSLATOR_MAX_BATCH) r->batch = TRANSLATOR_MAX_BATCH;
    /* a block of maxi batches is scored longest first; a batch of one reads no line ahead */
    r->block = r->batch == 1 ? 1 : r->batch * (o->maxi_batch > 0 ? o->maxi_batch : r->cfg.decode.maxi_batch);
    /* the base shape: a batch of sentences as long as nmt translate's default
     * --max-src-len; batches of longer ones hold fewer (seq2seq_score.h) */
    int len = translator_default_max_src(&r->cfg);
    ScoreShape base = {r->batch, len, len + 1};
    const ModelDims *dims[TRANSLATOR_MAX_MODELS];
    const float *weights[TRANSLATOR_MAX_MODELS];
    for (int k = 0; k < o->n_models; k++) dims[k] = &r->dims[k], weights[k] = r->ck[k].params;
    st = seq2seq_scorer_create(r->be, dims, weights, o->n_models, base, o->full_vocab, &r->sc);
    if (st == NMT_ERR_NOMEM) {
        char hint[128];
        snprintf(hint, sizeof hint, "lower --batch (%d)", r->batch);
        backend_explain_nomem(r->be, hint);
    }
    return st;
}

/* ------------------------------------------------------------------ */
/* Batches                                                             */
/* ------------------------------------------------------------------ */

/* Grows the batch arrays for B sentences of S source and T target cells. */
static NmtStatus batch_reserve(ScoreBatch *sb, int B, int S, int T) {
    size_t src = (size_t)S * B, tgt = (size_t)T * B;
    if (src > sb->src_cap) {
        int32_t *p = nmt_realloc(sb->src, src * sizeof *p);
        if (!p) return nmt_fail_nomem("a batch");
        sb->src = p;
        sb->src_cap = src;
    }
    if (tgt > sb->tgt_cap) {
        int32_t *in = nmt_realloc(sb->tgt_in, tgt * sizeof *in);
        if (in) sb->tgt_in = in;
        int32_t *out = nmt_realloc(sb->tgt_out, tgt * sizeof *out);
        if (out) sb->tgt_out = out;
        float *lp = nmt_realloc(sb->logp, tgt * sizeof *lp);
        if (lp) sb->logp = lp;
        if (!in || !out || !lp) return nmt_fail_nomem("a batch");
        sb->tgt_cap = tgt;
    }
    if (B > sb->cols_cap) {
        int *sl = nmt_realloc(sb->src_len, (size_t)B * sizeof *sl);
        if (sl) sb->src_len = sl;
        int *tl = nmt_realloc(sb->tgt_len, (size_t)B * sizeof *tl);
        if (tl) sb->tgt_len = tl;
        if (!sl || !tl) return nmt_fail_nomem("a batch");
        sb->cols_cap = B;
    }
    return NMT_OK;
}

/* The batch of pairs idx[0..B) (non-empty sources), time-major:
 * src (S, B) and PAD; tgt_in BOS, the target, PAD; tgt_out the target,
 * EOS, PAD. */
static NmtStatus fill_batch(ScoreRun *r, const int *idx, int B) {
    int S = 1, T = 1;
    for (int c = 0; c < B; c++) {
        const ScorePair *p = &r->pairs[idx[c]];
        if (p->src_n > S) S = p->src_n;
        if (p->tgt_n + 1 > T) T = p->tgt_n + 1;
    }
    ScoreBatch *sb = &r->sb;
    NmtStatus st = batch_reserve(sb, B, S, T);
    if (st) return st;
    memset(sb->src, 0, (size_t)S * B * sizeof *sb->src); /* NMT_PAD_ID */
    memset(sb->tgt_in, 0, (size_t)T * B * sizeof *sb->tgt_in);
    memset(sb->tgt_out, 0, (size_t)T * B * sizeof *sb->tgt_out);
    for (int c = 0; c < B; c++) {
        const ScorePair *p = &r->pairs[idx[c]];
        for (int s = 0; s < p->src_n; s++) sb->src[(size_t)s * B + c] = p->src[s];
        sb->tgt_in[c] = NMT_BOS_ID;
        for (int t = 0; t < p->tgt_n; t++) { /* a right-to-left model's steps read the target backwards */
            int32_t id = p->tgt[r->right_to_left ? p->tgt_n - 1 - t : t];
            sb->tgt_in[(size_t)(t + 1) * B + c] = id;
            sb->tgt_out[(size_t)t * B + c] = id;
        }
        sb->tgt_out[(size_t)p->tgt_n * B + c] = NMT_EOS_ID;
        sb->src_len[c] = p->src_n;
        sb->tgt_len[c] = p->tgt_n + 1;
    }
    memset(&sb->b, 0, sizeof sb->b);
    sb->b.B = B;
    sb->b.S = S;
    sb->b.T = T;
    sb->b.src = sb->src;
    sb->b.src_len = sb->src_len;
    sb->b.tgt_in = sb->tgt_in;
    sb->b.tgt_out = sb->tgt_out;
    sb->b.tgt_len = sb->tgt_len;
    return NMT_OK;
}

static void batch_free(ScoreBatch *sb) {
    nmt_free(sb->attn);
    nmt_free(sb->src), nmt_free(sb->tgt_in), nmt_free(sb->tgt_out);
    nmt_free(sb->src_len), nmt_free(sb->tgt_len), nmt_free(sb->logp);
}

/* Scores pairs idx[0..B) and keeps each one's log-probabilities. */
static NmtStatus score_chunk(ScoreRun *r, const int *idx, int B) {
    NmtStatus st = fill_batch(r, idx, B);
    ScoreBatch *sb = &r->sb;
    size_t attn_cells = (size_t)B * sb->b.T * sb->b.S;
    if (!st && r->opt.alignment.on && attn_cells > sb->attn_cap) {
        float *a = nmt_realloc(sb->attn, attn_cells * sizeof *a);
        if (!a) st = nmt_fail_nomem("the attention of a batch");
        else sb->attn = a, sb->attn_cap = attn_cells;
    }
    if (!st) st = seq2seq_score_batch(r->sc, &sb->b, sb->logp, r->opt.alignment.on ? sb->attn : NULL);
    const ScorePair *first = &r->pairs[idx[0]]; /* the longest source */
    if (st == NMT_ERR_NOMEM) {
        char hint[128];
        if (B > 1) snprintf(hint, sizeof hint, "lower --batch (%d)", r->batch);
        else snprintf(hint, sizeof hint, "the pair alone does not fit");
        backend_explain_nomem(r->be, hint);
        nmt_error_prefix("%s:%lld (a batch of %d pair%s, sources up to %d tokens, targets up to %d)", r->src_name,
                         (long long)first->line, B, B == 1 ? "" : "s", r->sb.b.S, r->sb.b.T - 1);
    }
    if (st) return st;
    const char *e = backend_error(r->be);
    if (e) return nmt_fail(NMT_ERR_RUNTIME, "the %s device failed: %s", r->be->name, e);
    for (int c = 0; c < B; c++) {
        ScorePair *p = &r->pairs[idx[c]];
        /* in text order: token t was step t, or step tgt_n - 1 - t right to left; </s> is last */
        for (int t = 0; t <= p->tgt_n; t++) {
            int step = r->right_to_left && t < p->tgt_n ? p->tgt_n - 1 - t : t;
            p->logp[t] = sb->logp[(size_t)step * B + c];
            if (r->opt.alignment.on && t < p->tgt_n) /* the target tokens' rows, </s>'s left out */
                memcpy(p->attn + (size_t)t * p->src_n, sb->attn + ((size_t)c * sb->b.T + step) * sb->b.S,
                       (size_t)p->src_n * sizeof(float));
        }
    }
    return NMT_OK;
}

static int cmp_pairs_by_length(const void *x, const void *y, void *ctx) {
    const ScorePair *pairs = ctx, *a = &pairs[*(const int *)x], *b = &pairs[*(const int *)y];
    if (a->src_n != b->src_n) return a->src_n > b->src_n ? -1 : 1;
    if (a->tgt_n != b->tgt_n) return a->tgt_n > b->tgt_n ? -1 : 1;
    return (a->line > b->line) - (a->line < b->line);
}

/* Pairs of the block in scoring order, longest source first (then longest
 * target, then input order), the empty sources (not scored) left out;
 * returns their count. */
static int scoring_order(ScoreRun *r) {
    int n = 0;
    for (int i = 0; i < r->n; i++)
        if (r->pairs[i].src_n > 0) r->order[n++] = i;
    qsort_r(r->order, (size_t)n, sizeof *r->order, cmp_pairs_by_length, r->pairs);
    return n;
}

/* How many pairs of order[0..n) the next batch takes: at most --batch,
 * and no more than the scorer's budget of cells (long pairs come in
 * smaller batches); at least one. */
static int next_batch_size(const ScoreRun *r, const int *order, int n) {
    ScoreShape shape = {1, r->pairs[order[0]].src_n, r->pairs[order[0]].tgt_n + 1};
    int B = 1;
    while (B < n && B < r->batch) {
        ScoreShape more = shape;
        more.B = B + 1;
        int T = r->pairs[order[B]].tgt_n + 1;
        if (T > more.T) more.T = T;
        if (!seq2seq_scorer_within_budget(r->sc, more)) break;
        shape = more;
        B++;
    }
    return B;
}

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

/* The pair's line: score [TAB tokens TAB log-probabilities] [TAB alignment]. */
static NmtStatus write_pair(const ScoreRun *r, const ScorePair *p, FILE *out) {
    double sum = 0;
    int n = p->tgt_n + 1; /* the tokens and </s> */
    for (int t = 0; t < n; t++) sum += p->logp[t];
    fprintf(out, "%.6f", r->opt.normalize ? sum / n : sum);
    if (r->opt.tokens) {
        for (int t = 0; t < n; t++)
            fprintf(out, "%s%s", t ? " " : "\t", tokenizer_piece(r->tgt_tok, t < p->tgt_n ? p->tgt[t] : NMT_EOS_ID));
        for (int t = 0; t < n; t++) fprintf(out, "%s%.6f", t ? " " : "\t", p->logp[t]);
    }
    if (r->opt.alignment.on) {
        char *pairs = NULL;
        NmtStatus st = alignment_of_pair(&r->opt.alignment.spec, p->attn, p->tgt_n, p->src_n, p->src_n, p->src_text,
                                         p->src_spans, p->tgt_text, p->tgt_spans, &pairs);
        if (st) return st;
        fprintf(out, "\t%s", pairs);
        nmt_free(pairs);
    }
    fputc('\n', out);
    return NMT_OK;
}

/* An empty source cannot be encoded: the empty translation, as nmt
 * translate gives it, has probability 1 (0 for an empty target, -inf
 * for every other). */
static void score_empty_source(ScoreRun *r, ScorePair *p) {
    for (int t = 0; t <= p->tgt_n; t++) p->logp[t] = p->tgt_n == 0 ? 0.0f : -INFINITY;
    if (r->empty_src++ == 0) r->first_empty_src = p->line;
}

/* Scores the block longest first, batch by batch, then writes every pair's
 * line in input order. */
static NmtStatus flush_block(ScoreRun *r) {
    int n = scoring_order(r);
    for (int i = 0; i < r->n; i++)
        if (r->pairs[i].src_n == 0) score_empty_source(r, &r->pairs[i]);
    int64_t tokens = r->tokens; /* target tokens scored so far, for the progress line */
    for (int k = 0; k < n;) {
        int B = next_batch_size(r, r->order + k, n - k);
        NmtStatus st = score_chunk(r, r->order + k, B);
        if (st) {
            nmt_error_suffix(" (the scores of the lines before %s:%lld were written)", r->src_name,
                             (long long)r->pairs[0].line);
            return st;
        }
        for (int c = 0; c < B; c++) tokens += r->pairs[r->order[k + c]].tgt_n;
        k += B;
        if (k < n) progress_line_show(&r->progress, r->done + (r->n - n) + k, tokens, false);
    }
    for (int i = 0; i < r->n; i++) {
        NmtStatus st = write_pair(r, &r->pairs[i], stdout);
        if (st) return st;
    }
    r->done += r->n;
    r->tokens = tokens;
    r->n = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) return nmt_fail(NMT_ERR_IO, "standard output: write error");
    progress_line_show(&r->progress, r->done, r->tokens, false);
    return NMT_OK;
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

/* Frees what --alignment keeps of a pair. */
static void pair_free_alignment(ScorePair *p) {
    nmt_free(p->src_text), nmt_free(p->tgt_text);
    nmt_free(p->src_spans), nmt_free(p->tgt_spans);
    nmt_free(p->attn);
    p->src_text = p->tgt_text = NULL;
    p->src_spans = p->tgt_spans = NULL;
    p->attn = NULL;
}

/* Tokenizes one pair into the block (scoring it when the block is full). */
static NmtStatus push_pair(ScoreRun *r, int64_t line, const char *src, size_t src_len, const char *tgt,
                           size_t tgt_len) {
    ScorePair *p = &r->pairs[r->n];
    p->line = line;
    NmtStatus st;
    if (r->opt.alignment.on) { /* the lines and where each token came from */
        pair_free_alignment(p);
        nmt_free(p->src), nmt_free(p->tgt);
        p->src = p->tgt = NULL;
        p->src_cap = p->tgt_cap = 0;
        st = tokenizer_encode_spans(r->src_tok, src, src_len, &p->src, &p->src_spans, &p->src_n);
        if (!st) st = (p->src_text = nmt_strndup(src, src_len)) ? NMT_OK : nmt_fail_nomem("the pairs");
    } else {
        st = tokenizer_encode_buf(r->src_tok, src, src_len, &p->src, &p->src_n, &p->src_cap);
    }
    if (st) {
        nmt_error_prefix("%s:%lld", r->src_name, (long long)line);
        return st;
    }
    if (r->opt.alignment.on) {
        st = tokenizer_encode_spans(r->tgt_tok, tgt, tgt_len, &p->tgt, &p->tgt_spans, &p->tgt_n);
        if (!st) st = (p->tgt_text = nmt_strndup(tgt, tgt_len)) ? NMT_OK : nmt_fail_nomem("the pairs");
        if (!st) {
            p->src_cap = p->src_n, p->tgt_cap = p->tgt_n;
            p->attn = nmt_calloc((size_t)p->tgt_n * p->src_n + 1, sizeof *p->attn);
            if (!p->attn) st = nmt_fail_nomem("the attention of the pairs");
        }
    } else {
        st = tokenizer_encode_buf(r->tgt_tok, tgt, tgt_len, &p->tgt, &p->tgt_n, &p->tgt_cap);
    }
    if (!st && p->tgt_n + 1 > p->logp_cap) {
        float *lp = nmt_realloc(p->logp, (size_t)(p->tgt_n + 1) * sizeof *lp);
        if (!lp) st = nmt_fail_nomem("the scores");
        else p->logp = lp, p->logp_cap = p->tgt_n + 1;
    }
    if (st) {
        nmt_error_prefix("%s:%lld", r->tgt_name, (long long)line);
        return st;
    }
    r->n++;
    return r->n == r->block ? flush_block(r) : NMT_OK;
}

/* Reads every pair, scoring block by block. On a bad line or a count that
 * differs (found as the input gets there: standard input, a pipe), the
 * pairs before it are scored and written first, then the error. */
static NmtStatus score_files(ScoreRun *r) {
    ParallelReader *pr;
    NmtStatus st = parallel_reader_open(r->opt.src, r->opt.tgt, &pr);
    if (st) return st;
    bool read_error = false;
    for (;;) {
        const char *src, *tgt;
        size_t src_len, tgt_len;
        int got = 0;
        st = parallel_reader_next(pr, &src, &src_len, &tgt, &tgt_len, &got);
        read_error = st != NMT_OK;
        if (st || !got) break;
        st = push_pair(r, parallel_reader_line_no(pr), src, src_len, tgt, tgt_len);
        if (st) break;
    }
    parallel_reader_close(pr);
    if (r->n > 0 && (!st || read_error)) {
        char *msg = st ? nmt_strdup(nmt_error_message()) : NULL;
        NmtStatus fst = flush_block(r);
        if (fst) st = fst;
        else if (st) nmt_fail(st, "%s", msg ? msg : "reading the input");
        nmt_free(msg);
    }
    return st;
}

static void run_free(ScoreRun *r) {
    seq2seq_scorer_free(r->sc);
    if (r->be) {
        backend_log_usage(r->be, "score");
        r->be->destroy(r->be);
    }
    for (int i = 0; i < r->block && r->pairs; i++) {
        nmt_free(r->pairs[i].src), nmt_free(r->pairs[i].tgt), nmt_free(r->pairs[i].logp);
        pair_free_alignment(&r->pairs[i]);
    }
    nmt_free(r->pairs);
    nmt_free(r->order);
    batch_free(&r->sb);
    for (int k = 0; k < r->opt.n_models; k++) checkpoint_free(&r->ck[k]);
    cli_model_free(&r->pick);
    config_free(&r->cfg);
    tokenizer_free(r->src_tok);
    tokenizer_free(r->tgt_tok);
}

static NmtStatus score_run(ScoreRun *r) {
    NmtStatus st = pick_model(r);
    if (!st) st = check_options(&r->opt);
    if (!st) st = open_models(r);
    if (!st) st = check_line_counts(r->opt.src, r->opt.tgt);
    if (st) return st;
    r->src_name = strcmp(r->opt.src, "-") ? r->opt.src : "<stdin>";
    r->tgt_name = strcmp(r->opt.tgt, "-") ? r->opt.tgt : "<stdin>";
    r->pairs = nmt_calloc((size_t)r->block, sizeof *r->pairs);
    r->order = nmt_calloc((size_t)r->block, sizeof *r->order);
    if (!r->pairs || !r->order) return nmt_fail_nomem("the pairs");
    int mode = r->opt.progress;
    progress_line_start(&r->progress,
                        mode == TRANSLATOR_PROGRESS_AUTO ? progress_line_default() : mode == TRANSLATOR_PROGRESS_ON,
                        "scoring", "scored");
    st = score_files(r);
    if (st) progress_line_abort(&r->progress); /* the error comes below the line */
    else progress_line_show(&r->progress, r->done, r->tokens, true);
    if (r->empty_src)
        nmt_log_warn("%s:%lld: %lld pair%s with an empty source (the first here) scored by convention: 0 when the "
                     "target is empty too, else -inf (nmt translate gives an empty line the empty translation)",
                     r->src_name, (long long)r->first_empty_src, (long long)r->empty_src, r->empty_src == 1 ? "" : "s");
    return st;
}

int cmd_score(int argc, char **argv) {
    ScoreRun r;
    memset(&r, 0, sizeof r);
    r.opt.device = CFG_DEVICE_AUTO;
    r.opt.progress = TRANSLATOR_PROGRESS_AUTO;
    for (int i = 1; i < argc; i++) {
        int took = take_option(argc, argv, &i, &r.opt);
        if (took < 0) return cli_report("score", NMT_ERR_USAGE);
        if (took) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(score_usage, stdout);
            return NMT_EXIT_OK;
        }
        fprintf(stderr, "nmt score: unknown option '%s' (try 'nmt score --help')\n", argv[i]);
        return NMT_EXIT_USAGE;
    }
    NmtStatus st = score_run(&r);
    run_free(&r);
    return cli_report("score", st);
}
