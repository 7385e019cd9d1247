/* cmd_translate.c: `nmt translate`: a Unix filter from a checkpoint: plain
 * text in (one sentence per line), plain text out, exactly one output line
 * per input line, in order. SentencePiece or word tokenization happens
 * inside. Greedy decoding or batched beam search with n-best lists. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "backend_select.h"
#include "cli.h"
#include "commands.h"
#include "data/corpus.h"
#include "data/tokenizer.h"
#include "fileio.h"
#include "plot/attention_svg.h"
#include "model/seq2seq.h"
#include "train/checkpoint.h"

static const char translate_usage[] =
    "usage: nmt translate [--model FILE | --config FILE] [--beam K] [--nbest N]\n"
    "                     [--length-penalty A] [--coverage-penalty B] [--batch N]\n"
    "                     [--replace-unk] [--unk-dict FILE] [--attention-out FILE]\n"
    "                     [--attention-svg DIR] [--device auto|cpu|cuda]\n"
    "                     [--max-src-len N] < input.txt > output.txt\n\n"
    "Translates standard input line by line. The model is --model (several\n"
    "--model files make an ensemble: log-probabilities averaged at each step), else\n"
    "best.nmt in train.save_dir of --config, else the file named by $NMT_MODEL.\n"
    "Exactly one output line per input line, in order: an empty line gives an\n"
    "empty line; a line with invalid UTF-8 gives an empty line and a warning;\n"
    "a line longer than --max-src-len tokens (default: twice the training\n"
    "data.max_len) is truncated with a warning.\n"
    "--beam K: beam search with K hypotheses per sentence (default: the model's\n"
    "decode.beam; 1 is greedy). --nbest N (N <= K): N lines per input line in\n"
    "Moses format 'i ||| translation ||| score', i counting input lines from 0.\n"
    "--length-penalty (GNMT alpha) and --coverage-penalty (beta) default to the\n"
    "model's decode settings.\n"
    "--replace-unk: an unknown-word token in the output becomes the source token\n"
    "with the highest attention at that step, or its entry in --unk-dict FILE\n"
    "(lines 'source<TAB>target'). --attention-out FILE writes each line's\n"
    "attention matrix as JSON lines; --attention-svg DIR one heatmap per line.\n";

typedef struct {
    Config cfg;
    Tokenizer *src_tok, *tgt_tok;
    Backend *be;
    Seq2Seq *model;          /* the first model: its config and tokenizers rule */
    Seq2Seq *models[16];     /* an ensemble: all --model files */
    int n_models;
    int batch, max_src;
    int beam, nbest;
    int device;         /* CfgDevice */
    double alpha, beta; /* NAN: the model's decode settings */
    int64_t line_index; /* input lines written so far (n-best numbering) */
    FILE *attn_out;     /* --attention-out: JSON lines of attention matrices */
    const char *attn_svg_dir; /* --attention-svg: one heatmap per line */
    int replace_unk;    /* --replace-unk */
    char **dict_src, **dict_tgt; /* --unk-dict, sorted by source */
    int dict_n;
} Translator;

static bool wants_attention(const Translator *tr) {
    return tr->attn_out || tr->attn_svg_dir || tr->replace_unk;
}

/* A piece or word as text: SentencePiece's word-start mark U+2581 dropped. */
static const char *piece_text(const Tokenizer *t, int id) {
    const char *p = tokenizer_piece(t, id);
    if (!p) return "";
    return strncmp(p, "\xE2\x96\x81", 3) == 0 ? p + 3 : p;
}

static int dict_cmp(const void *key, const void *item) {
    return strcmp((const char *)key, *(char *const *)item);
}

/* The output text of ids; with --replace-unk every UNK becomes the source
 * token it attends to most (or that token's --unk-dict entry). */
/* The n-th whitespace-separated word of line (the word tokenizer's tokens),
 * copied into buf; "" when there are fewer words. */
static const char *surface_word(const char *line, int n, char *buf, size_t size) {
    const char *p = line;
    for (int k = 0; p && *p; k++) {
        while (*p == ' ' || *p == '\t') p++;
        const char *end = p;
        while (*end && *end != ' ' && *end != '\t') end++;
        if (end == p) break;
        if (k == n) {
            snprintf(buf, size, "%.*s", (int)(end - p), p);
            return buf;
        }
        p = end;
    }
    return "";
}

static NmtStatus render_text(const Translator *tr, const int32_t *ids, int len, const int32_t *src, int src_n,
                             const char *line, const float *attn, int S, char **text) {
    if (!tr->replace_unk) return tokenizer_decode(tr->tgt_tok, ids, len, text);
    char *buf = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    if (!f) return nmt_fail_nomem("replacing unknown words");
    NmtStatus st = NMT_OK;
    int start = 0;
    for (int t = 0; t <= len && !st; t++) {
        if (t < len && ids[t] != NMT_UNK_ID) continue;
        if (t > start) { /* the known stretch before this UNK */
            char *part = NULL;
            st = tokenizer_decode(tr->tgt_tok, ids + start, t - start, &part);
            if (!st) fprintf(f, "%s%s", ftell(f) ? " " : "", part);
            nmt_free(part);
        }
        if (t < len && !st) {
            int best = 0;
            for (int s_ = 1; s_ < src_n; s_++)
                if (attn[(size_t)t * S + s_] > attn[(size_t)t * S + best]) best = s_;
            char surface[1024];
            /* the word itself for the word tokenizer (an unknown source word too); the piece for SentencePiece */
            const char *word = !src_n ? ""
                               : tokenizer_kind(tr->src_tok) == TOKENIZER_WORD && line
                                   ? surface_word(line, best, surface, sizeof surface)
                                   : piece_text(tr->src_tok, src[best]);
            char **hit = tr->dict_n ? bsearch(word, tr->dict_src, (size_t)tr->dict_n, sizeof(char *), dict_cmp) : NULL;
            if (hit) word = tr->dict_tgt[hit - tr->dict_src];
            fprintf(f, "%s%s", ftell(f) ? " " : "", word);
        }
        start = t + 1;
    }
    fclose(f);
    if (st) {
        free(buf);
        return st;
    }
    *text = nmt_strdup(buf ? buf : "");
    free(buf);
    return *text ? NMT_OK : nmt_fail_nomem("replacing unknown words");
}

/* Writes a JSON string (escaped) to f. */
static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* --attention-out and --attention-svg for one input line. */
static NmtStatus write_attention(Translator *tr, const int32_t *src, int src_n, const int32_t *ids, int len,
                                 const float *attn, int S) {
    if (tr->attn_out) {
        fprintf(tr->attn_out, "{\"line\": %lld, \"source\": [", (long long)tr->line_index);
        for (int s_ = 0; s_ < src_n; s_++) {
            if (s_) fputs(", ", tr->attn_out);
            json_string(tr->attn_out, tokenizer_piece(tr->src_tok, src[s_]));
        }
        fputs("], \"target\": [", tr->attn_out);
        for (int t = 0; t < len; t++) {
            if (t) fputs(", ", tr->attn_out);
            json_string(tr->attn_out, tokenizer_piece(tr->tgt_tok, ids[t]));
        }
        fputs("], \"attention\": [", tr->attn_out);
        for (int t = 0; t < len; t++) {
            fputs(t ? ", [" : "[", tr->attn_out);
            for (int s_ = 0; s_ < src_n; s_++) fprintf(tr->attn_out, "%s%.4f", s_ ? ", " : "", attn[(size_t)t * S + s_]);
            fputc(']', tr->attn_out);
        }
        fputs("]}\n", tr->attn_out);
        if (ferror(tr->attn_out)) return nmt_fail(NMT_ERR_IO, "--attention-out: write error");
    }
    if (tr->attn_svg_dir && src_n > 0) {
        const char **sp = nmt_malloc((size_t)(src_n + 1) * sizeof(char *));
        const char **tp = nmt_malloc((size_t)(len + 1) * sizeof(char *));
        float *w = nmt_malloc((size_t)(len * src_n + 1) * sizeof(float));
        char *path = nmt_asprintf("%s/line-%06lld.svg", tr->attn_svg_dir, (long long)tr->line_index + 1);
        char title[64];
        snprintf(title, sizeof title, "line %lld", (long long)tr->line_index + 1);
        NmtStatus st = sp && tp && w && path ? NMT_OK : nmt_fail_nomem("drawing attention");
        if (!st) {
            for (int s_ = 0; s_ < src_n; s_++) sp[s_] = tokenizer_piece(tr->src_tok, src[s_]);
            for (int t = 0; t < len; t++) tp[t] = tokenizer_piece(tr->tgt_tok, ids[t]);
            for (int t = 0; t < len; t++)
                for (int s_ = 0; s_ < src_n; s_++) w[t * src_n + s_] = attn[(size_t)t * S + s_];
            st = attention_svg_write(path, title, sp, src_n, tp, len, w);
        }
        nmt_free(sp);
        nmt_free(tp);
        nmt_free(w);
        nmt_free(path);
        return st;
    }
    return NMT_OK;
}

/* Loads one checkpoint; the first sets the config, the tokenizers and the
 * backend; later ones (an ensemble) must share the tokenizers. */
static NmtStatus load_model(const char *path, Translator *tr) {
    if (tr->n_models == (int)NMT_ARRAY_LEN(tr->models))
        return nmt_fail(NMT_ERR_USAGE, "at most %d --model files", (int)NMT_ARRAY_LEN(tr->models));
    Checkpoint ck;
    NmtStatus st = checkpoint_load(path, &ck);
    if (st) return st;
    bool first = tr->n_models == 0;
    Config cfg_k;
    Config *cfg = first ? &tr->cfg : &cfg_k;
    st = config_load_string(ck.config_json, path, "/", NULL, 0, cfg);
    if (!st && first) st = tokenizer_deserialize(ck.src_tok, ck.src_tok_len, &tr->src_tok);
    if (!st && first) st = tokenizer_deserialize(ck.tgt_tok, ck.tgt_tok_len, &tr->tgt_tok);
    if (!st && !first) {
        int same_src = 0, same_tgt = 0;
        st = tokenizer_same_as_serialized(tr->src_tok, ck.src_tok, ck.src_tok_len, &same_src);
        if (!st) st = tokenizer_same_as_serialized(tr->tgt_tok, ck.tgt_tok, ck.tgt_tok_len, &same_tgt);
        if (!st && !(same_src && same_tgt))
            st = nmt_fail(NMT_ERR_USAGE, "%s: its vocabularies differ from the first --model's; an ensemble needs the "
                          "same source and target vocabularies", path);
    }
    ModelDims d;
    if (!st) st = model_dims_from_config(cfg, tokenizer_vocab_size(tr->src_tok), tokenizer_vocab_size(tr->tgt_tok), &d);
    if (!st && first) {
        st = backend_create_for(tr->device, tr->cfg.train.threads, "--device", &tr->be);
        if (!st) {
            if (tr->max_src <= 0) tr->max_src = tr->cfg.data.max_len * 2 > 100 ? tr->cfg.data.max_len * 2 : 100;
            if (tr->batch <= 0) tr->batch = tr->cfg.decode.batch;
            if (tr->beam <= 0) tr->beam = tr->cfg.decode.beam;
            if (tr->nbest <= 0) tr->nbest = 1;
            if (tr->nbest > tr->beam) tr->beam = tr->nbest;
            if (isnan(tr->alpha)) tr->alpha = tr->cfg.decode.length_penalty;
            if (isnan(tr->beta)) tr->beta = tr->cfg.decode.coverage_penalty;
        }
    }
    Seq2Seq *model = NULL;
    if (!st) {
        int max_out = (int)(tr->cfg.decode.max_len_a * tr->max_src) + tr->cfg.decode.max_len_b;
        ModelLimits lim = {tr->batch, tr->max_src, 1, max_out, tr->beam};
        st = seq2seq_create(tr->be, &d, lim, &model);
    }
    if (!st && ck.n_floats != seq2seq_layout(model)->total)
        st = nmt_fail(NMT_ERR_FORMAT, "%s: %zu weights, the model of its config has %zu", path, ck.n_floats,
                      seq2seq_layout(model)->total);
    if (!st) {
        tr->be->upload(tr->be, seq2seq_params(model), ck.params, ck.n_floats * sizeof(float));
        tr->models[tr->n_models++] = model;
        if (first) tr->model = model;
    } else {
        seq2seq_free(model);
    }
    if (!first) config_free(&cfg_k);
    checkpoint_free(&ck);
    return st;
}

/* --unk-dict: "source<TAB>target" per line; sorted for lookups. */
static NmtStatus load_dict(const char *path, Translator *tr) {
    LineReader *r;
    NmtStatus st = line_reader_open(path, &r);
    int cap = 0;
    while (!st) {
        const char *line;
        size_t len;
        int got = 0;
        st = line_reader_next(r, &line, &len, &got);
        if (st || !got) break;
        if (len == 0) continue;
        const char *tab = memchr(line, '\t', len);
        if (!tab) {
            st = nmt_fail(NMT_ERR_FORMAT, "%s:%lld: expected 'source<TAB>target'", path, (long long)line_reader_line_no(r));
            break;
        }
        if (tr->dict_n == cap) {
            cap = cap ? cap * 2 : 256;
            char **a = nmt_realloc(tr->dict_src, (size_t)cap * sizeof(char *));
            if (a) tr->dict_src = a;
            char **b = nmt_realloc(tr->dict_tgt, (size_t)cap * sizeof(char *));
            if (b) tr->dict_tgt = b;
            if (!a || !b) {
                st = nmt_fail_nomem("reading --unk-dict");
                break;
            }
        }
        tr->dict_src[tr->dict_n] = nmt_strndup(line, (size_t)(tab - line));
        tr->dict_tgt[tr->dict_n] = nmt_strndup(tab + 1, len - (size_t)(tab - line) - 1);
        if (!tr->dict_src[tr->dict_n] || !tr->dict_tgt[tr->dict_n]) st = nmt_fail_nomem("reading --unk-dict");
        tr->dict_n++;
    }
    line_reader_close(r);
    if (st) return st;
    /* sort pairs by source (insertion order kept for equal keys: first wins) */
    for (int i = 1; i < tr->dict_n; i++)
        for (int j = i; j > 0 && strcmp(tr->dict_src[j - 1], tr->dict_src[j]) > 0; j--) {
            char *a = tr->dict_src[j], *b = tr->dict_tgt[j];
            tr->dict_src[j] = tr->dict_src[j - 1], tr->dict_tgt[j] = tr->dict_tgt[j - 1];
            tr->dict_src[j - 1] = a, tr->dict_tgt[j - 1] = b;
        }
    return NMT_OK;
}

static void translator_free(Translator *tr) {
    for (int k = 0; k < tr->n_models; k++) seq2seq_free(tr->models[k]);
    if (tr->be) tr->be->destroy(tr->be);
    tokenizer_free(tr->src_tok);
    tokenizer_free(tr->tgt_tok);
    config_free(&tr->cfg);
}

typedef struct {
    int n;          /* lines in the batch */
    int32_t **ids;  /* (n) encoded lines (NULL: output an empty line) */
    int *len;       /* (n) */
    int *cap;       /* (n) */
    char **text;    /* (n) the input lines (word tokenizer + --replace-unk: surface words) */
} LineBatch;

/* Decodes the non-empty lines of the batch and prints every line in order:
 * one line each, or nbest lines each in Moses format. out holds
 * (B * nbest) hypotheses of `stride` ids. */
static NmtStatus flush_batch(Translator *tr, LineBatch *lb, int32_t *src, int *src_len, int32_t *out,
                             int *out_len, double *out_score, int *out_count, float *out_attn, int stride) {
    int cols = 0, S = 1, map[4096];
    for (int i = 0; i < lb->n; i++)
        if (lb->len[i] > 0) {
            map[cols++] = i;
            if (lb->len[i] > S) S = lb->len[i];
        }
    int nbest = tr->nbest;
    if (cols > 0) {
        memset(src, 0, (size_t)S * cols * sizeof *src);
        for (int c = 0; c < cols; c++) {
            int i = map[c];
            src_len[c] = lb->len[i];
            for (int s = 0; s < lb->len[i]; s++) src[s * cols + c] = lb->ids[i][s];
        }
        Batch b;
        memset(&b, 0, sizeof b);
        b.B = cols;
        b.S = S;
        b.src = src;
        b.src_len = src_len;
        if (tr->beam <= 1 && !wants_attention(tr) && tr->n_models == 1) {
            seq2seq_greedy(tr->model, &b, tr->cfg.decode.max_len_a, tr->cfg.decode.max_len_b, out, stride, out_len);
            for (int c = 0; c < cols; c++) out_count[c] = 1, out_score[c] = 0;
        } else { /* beam 1 is greedy; the beam path also records attention */
            BeamSpec spec = {tr->beam, nbest, tr->alpha, tr->beta, tr->cfg.decode.max_len_a, tr->cfg.decode.max_len_b};
            NmtStatus st = seq2seq_ensemble_search(tr->models, tr->n_models, &b, &spec, out, stride, out_len,
                                                   out_score, out_count, wants_attention(tr) ? out_attn : NULL);
            if (st) return st;
        }
    }
    int c = 0;
    int per = nbest; /* hypotheses stored per sentence */
    for (int i = 0; i < lb->n; i++, tr->line_index++) {
        int n_hyp = lb->len[i] > 0 ? out_count[c] : 0;
        const float *attn_c = out_attn + (size_t)c * per * stride * S;
        if (wants_attention(tr)) {
            NmtStatus st = write_attention(tr, lb->ids[i], lb->len[i], n_hyp ? out + (size_t)c * per * stride : NULL,
                                           n_hyp ? out_len[c * per] : 0, attn_c, S);
            if (st) return st;
        }
        for (int h = 0; h < (nbest > 1 ? (n_hyp > 0 ? n_hyp : 1) : 1); h++) {
            char *text = NULL;
            if (h < n_hyp) {
                NmtStatus st = render_text(tr, out + (size_t)(c * per + h) * stride, out_len[c * per + h], lb->ids[i],
                                           lb->len[i], lb->text[i], attn_c + (size_t)h * stride * S, S, &text);
                if (st) return st;
            }
            if (nbest > 1)
                printf("%lld ||| %s ||| %.6f\n", (long long)tr->line_index, text ? text : "",
                       h < n_hyp ? out_score[c * per + h] : 0.0);
            else
                printf("%s\n", text ? text : "");
            nmt_free(text);
        }
        if (lb->len[i] > 0) c++;
    }
    lb->n = 0;
    return ferror(stdout) ? nmt_fail(NMT_ERR_IO, "standard output: write error") : NMT_OK;
}

static NmtStatus translate_stream(Translator *tr) {
    LineReader *r;
    NmtStatus st = line_reader_open_fd(0, "standard input", &r);
    if (st) return st;
    line_reader_set_validate(r, 0); /* invalid lines become empty lines, not errors */
    int B = tr->batch, stride = (int)(tr->cfg.decode.max_len_a * tr->max_src) + tr->cfg.decode.max_len_b;
    LineBatch lb = {0, nmt_calloc((size_t)B, sizeof(int32_t *)), nmt_calloc((size_t)B, sizeof(int)),
                    nmt_calloc((size_t)B, sizeof(int)), nmt_calloc((size_t)B, sizeof(char *))};
    int32_t *src = nmt_malloc((size_t)B * tr->max_src * sizeof(int32_t));
    int *src_len = nmt_malloc((size_t)B * sizeof(int));
    int per = tr->nbest;
    int32_t *out = nmt_malloc((size_t)B * per * stride * sizeof(int32_t));
    float *out_attn = wants_attention(tr) ? nmt_malloc((size_t)B * per * stride * tr->max_src * sizeof(float)) : NULL;
    int *out_len = nmt_malloc((size_t)B * per * sizeof(int));
    double *out_score = nmt_malloc((size_t)B * per * sizeof(double));
    int *out_count = nmt_malloc((size_t)B * sizeof(int));
    if (!lb.ids || !lb.len || !lb.cap || !lb.text || !src || !src_len || !out || !out_len || !out_score || !out_count ||
        (wants_attention(tr) && !out_attn))
        st = nmt_fail_nomem("translating");
    while (!st) {
        const char *line;
        size_t len;
        int got = 0;
        st = line_reader_next(r, &line, &len, &got);
        if (st || !got) break;
        int64_t line_no = line_reader_line_no(r);
        size_t bad;
        int i = lb.n++;
        lb.len[i] = 0;
        nmt_free(lb.text[i]);
        lb.text[i] = NULL;
        if (tr->replace_unk && !(lb.text[i] = nmt_strndup(line, len))) {
            st = nmt_fail_nomem("translating");
            break;
        }
        if (!utf8_validate(line, len, &bad) || memchr(line, '\0', len)) {
            nmt_log_warn("standard input:%lld: invalid UTF-8 or NUL byte; writing an empty line", (long long)line_no);
        } else {
            st = tokenizer_encode_buf(tr->src_tok, line, len, &lb.ids[i], &lb.len[i], &lb.cap[i]);
            if (!st && lb.len[i] > tr->max_src) {
                nmt_log_warn("standard input:%lld: %d tokens; truncated to %d (--max-src-len)", (long long)line_no,
                             lb.len[i], tr->max_src);
                lb.len[i] = tr->max_src;
            }
        }
        if (!st && lb.n == B) st = flush_batch(tr, &lb, src, src_len, out, out_len, out_score, out_count, out_attn, stride);
    }
    if (!st && lb.n > 0) st = flush_batch(tr, &lb, src, src_len, out, out_len, out_score, out_count, out_attn, stride);
    if (lb.ids)
        for (int i = 0; i < B; i++) nmt_free(lb.ids[i]);
    if (lb.text)
        for (int i = 0; i < B; i++) nmt_free(lb.text[i]);
    nmt_free(lb.text);
    nmt_free(lb.ids);
    nmt_free(lb.len);
    nmt_free(lb.cap);
    nmt_free(src);
    nmt_free(src_len);
    nmt_free(out);
    nmt_free(out_len);
    nmt_free(out_score);
    nmt_free(out_count);
    nmt_free(out_attn);
    line_reader_close(r);
    if (!st && fflush(stdout) != 0) st = nmt_fail(NMT_ERR_IO, "standard output: write error");
    return st;
}

int cmd_translate(int argc, char **argv) {
    CliConfigArgs args = {0};
    const char *model_path = NULL, *model_paths[16];
    int n_paths = 0;
    Translator tr;
    memset(&tr, 0, sizeof tr);
    tr.alpha = tr.beta = NAN;
    const char *attn_out_path = NULL, *dict_path = NULL;
    for (int i = 1; i < argc; i++) {
        int took = cli_take_config_arg(argc, argv, &i, &args);
        if (took < 0) return cli_report("translate", NMT_ERR_USAGE);
        if (took) continue;
        int missing = 0;
        const char *v;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(translate_usage, stdout);
            return NMT_EXIT_OK;
        } else if ((v = cli_option_value(argc, argv, &i, "--model", &missing))) {
            if (n_paths == (int)NMT_ARRAY_LEN(model_paths)) {
                fprintf(stderr, "nmt translate: at most %d --model files\n", (int)NMT_ARRAY_LEN(model_paths));
                return NMT_EXIT_USAGE;
            }
            model_paths[n_paths++] = v;
            model_path = model_paths[0];
        } else if ((v = cli_option_value(argc, argv, &i, "--batch", &missing))) {
            tr.batch = atoi(v);
            if (tr.batch < 1 || tr.batch > 4096) {
                fprintf(stderr, "nmt translate: --batch must be in [1, 4096], got '%s'\n", v);
                return NMT_EXIT_USAGE;
            }
        } else if ((v = cli_option_value(argc, argv, &i, "--max-src-len", &missing))) {
            tr.max_src = atoi(v);
            if (tr.max_src < 1) {
                fprintf(stderr, "nmt translate: --max-src-len must be >= 1, got '%s'\n", v);
                return NMT_EXIT_USAGE;
            }
        } else if ((v = cli_option_value(argc, argv, &i, "--beam", &missing))) {
            tr.beam = atoi(v);
            if (tr.beam < 1 || tr.beam > 1000) {
                fprintf(stderr, "nmt translate: --beam must be in [1, 1000], got '%s'\n", v);
                return NMT_EXIT_USAGE;
            }
        } else if ((v = cli_option_value(argc, argv, &i, "--nbest", &missing))) {
            tr.nbest = atoi(v);
            if (tr.nbest < 1 || tr.nbest > 1000) {
                fprintf(stderr, "nmt translate: --nbest must be in [1, 1000], got '%s'\n", v);
                return NMT_EXIT_USAGE;
            }
        } else if ((v = cli_option_value(argc, argv, &i, "--length-penalty", &missing))) {
            char *end;
            tr.alpha = strtod(v, &end);
            if (*end || tr.alpha < 0) {
                fprintf(stderr, "nmt translate: --length-penalty must be a number >= 0, got '%s'\n", v);
                return NMT_EXIT_USAGE;
            }
        } else if ((v = cli_option_value(argc, argv, &i, "--device", &missing))) {
            int found = -1;
            for (int k = 0; device_names[k]; k++)
                if (!strcmp(device_names[k], v)) found = k;
            if (found < 0) {
                fprintf(stderr, "nmt translate: --device must be auto, cpu or cuda, got '%s'\n", v);
                return NMT_EXIT_USAGE;
            }
            tr.device = found;
        } else if ((v = cli_option_value(argc, argv, &i, "--attention-out", &missing))) {
            attn_out_path = v;
        } else if ((v = cli_option_value(argc, argv, &i, "--attention-svg", &missing))) {
            tr.attn_svg_dir = v;
        } else if (!strcmp(argv[i], "--replace-unk")) {
            tr.replace_unk = 1;
        } else if ((v = cli_option_value(argc, argv, &i, "--unk-dict", &missing))) {
            dict_path = v;
            tr.replace_unk = 1;
        } else if ((v = cli_option_value(argc, argv, &i, "--coverage-penalty", &missing))) {
            char *end;
            tr.beta = strtod(v, &end);
            if (*end || tr.beta < 0) {
                fprintf(stderr, "nmt translate: --coverage-penalty must be a number >= 0, got '%s'\n", v);
                return NMT_EXIT_USAGE;
            }
        } else {
            fprintf(stderr, "nmt translate: %s '%s'\n%s", missing ? "missing value for" : "unknown option", argv[i],
                    translate_usage);
            return NMT_EXIT_USAGE;
        }
    }
    char *from_config = NULL;
    if (!model_path && args.config_path) {
        Config cfg;
        NmtStatus st = cli_load_config(&args, &cfg);
        if (st) return cli_report("translate", st);
        from_config = nmt_asprintf("%s/best.nmt", cfg.train.save_dir);
        config_free(&cfg);
        model_path = from_config;
    }
    if (!model_path) model_path = getenv("NMT_MODEL");
    if (!model_path || !model_path[0]) {
        fprintf(stderr, "nmt translate: no model: give --model FILE, or --config FILE (uses its "
                        "train.save_dir/best.nmt), or set NMT_MODEL\n");
        return NMT_EXIT_USAGE;
    }
    NmtStatus st = load_model(model_path, &tr);
    for (int k = 1; !st && k < n_paths; k++) st = load_model(model_paths[k], &tr);
    nmt_free(from_config);
    if (!st && dict_path) st = load_dict(dict_path, &tr);
    if (!st && tr.attn_svg_dir) st = file_make_dirs(tr.attn_svg_dir);
    if (!st && attn_out_path) {
        tr.attn_out = fopen(attn_out_path, "w");
        if (!tr.attn_out) st = nmt_fail(NMT_ERR_IO, "%s: cannot write: %s", attn_out_path, strerror(errno));
    }
    if (!st) st = translate_stream(&tr);
    if (tr.attn_out && fclose(tr.attn_out) != 0 && !st)
        st = nmt_fail(NMT_ERR_IO, "%s: write error", attn_out_path);
    for (int k = 0; k < tr.dict_n; k++) nmt_free(tr.dict_src[k]), nmt_free(tr.dict_tgt[k]);
    nmt_free(tr.dict_src);
    nmt_free(tr.dict_tgt);
    translator_free(&tr);
    return cli_report("translate", st);
}
