/* translator.c: checkpoints as a line translator (translator.h): decoding
 * options, model and ensemble loading, batching of input lines, greedy or
 * beam decoding, rendering (UNK replacement, n-best lines), attention
 * output (JSON lines, SVG heatmaps), the progress line on stderr and
 * streaming (decoding what has been read when the input pauses). Used by
 * `nmt translate` (src/cmd_translate.c) and `nmt eval --model`
 * (src/cmd_eval.c). */
#include "translator.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alignment.h"
#include "backend.h"
#include "backend_select.h"
#include "cli.h"
#include "config.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "data/rng.h"
#include "data/shortlist.h"
#include "data/tokenizer.h"
#include "data/word_vocab.h"
#include "fileio.h"
#include "model/seq2seq.h"
#include "plot/attention_svg.h"
#include "progress_line.h"
#include "train/checkpoint.h"

const char translator_options_help[] =
    "  --model FILE          a checkpoint; several --model files make an ensemble\n"
    "                        (log-probabilities averaged at every step)\n"
    "  --beam K              beam search with K hypotheses per sentence, 1..1000\n"
    "                        (default: the model's decode.beam; 1 is greedy)\n"
    "  --nbest N             N > 1: N lines per input line, Moses format\n"
    "                        'i ||| translation ||| score' (N <= K; K is raised to N);\n"
    "                        1 (the default): the translation alone\n"
    "  --length-penalty A    GNMT length penalty alpha >= 0 (default: the model's)\n"
    "  --coverage-penalty B  GNMT coverage penalty beta >= 0 (default: the model's)\n"
    "  --max-len-a A, --max-len-b B  output at most A * source tokens + B tokens,\n"
    "                        at least 1 (default: the model's decode.max_len_a and _b)\n"
    "  --batch N             sentences per decoder batch, 1..4096 (default: decode.batch)\n"
    "  --maxi-batch N        read N batches of lines ahead and decode them longest\n"
    "                        first, so that a batch holds lines of about one length;\n"
    "                        the output keeps the input order (default:\n"
    "                        decode.maxi_batch; 1: batches in input order)\n"
    "  --max-src-len N       longer lines are truncated to N tokens with a warning\n"
    "                        (default: twice the training data.max_len, at least 100)\n"
    "  --device auto|cpu|cuda  where to decode (default auto)\n"
    "  --threads N           CPU threads, 0..1024 (default 0: all cores; not the\n"
    "                        model's train.threads)\n"
    "  --gpu N               which GPU when one is used, 0-based among those\n"
    "                        CUDA_VISIBLE_DEVICES shows (default 0)\n"
    "  --replace-unk         an unknown-word token in the output becomes the source\n"
    "                        token with the highest attention at that step\n"
    "  --unk-dict FILE       ... or its entry in FILE (lines 'source<TAB>target');\n"
    "                        implies --replace-unk\n"
    "  --attention-out FILE  each line's attention matrix as JSON lines (\"line\" from 0)\n"
    "  --attention-svg DIR   one attention heatmap per input line, DIR/line-NNNNNN.svg\n"
    "                        (NNNNNN the line number from 1)\n"
    "  --alignment hard|soft|P  word alignment read off the attention, after the output:\n"
    "                        'translation ||| 0-0 1-2 2-1' (source-output word\n"
    "                        positions from 0, Pharaoh format; with --nbest\n"
    "                        'i ||| translation ||| alignment ||| score'); hard: each\n"
    "                        output token to the source token it attends to most;\n"
    "                        P in (0, 1]: to every source token weighted >= P;\n"
    "                        soft: the weights ('0.9000,0.1000 0.2000,0.8000': per\n"
    "                        output word, its weight on each source word)\n"
    "  --alignment-units words|tokens  count words (the line split at spaces, as\n"
    "                        given and as written; the default) or the model's tokens\n"
    "  --progress, --no-progress  a progress line on stderr (lines, sentences/s,\n"
    "                        target tokens/s); default: only when stderr is a terminal\n"
    "  --shortlist FILE      score only a shortlist of output tokens per batch: the\n"
    "                        most frequent ones and the likeliest translations of\n"
    "                        the batch's source tokens (FILE from `nmt shortlist`)\n"
    "  --shortlist-frequent N  frequent target tokens always in (default 100)\n"
    "  --shortlist-per-source K  partners per source token (default 10)\n"
    "  --sample K            sample instead of searching (e.g. for back-translation):\n"
    "                        each token drawn among the K likeliest, 1..100,\n"
    "                        renormalised; one output per line, no beam (--beam,\n"
    "                        --nbest, ensembles and attention output are refused)\n"
    "  --temperature T       --sample from p^(1/T), T > 0 (default 1: the model's\n"
    "                        distribution; below 1 sharper, above flatter)\n"
    "  --seed N              --sample's seed (default 1): input line n's draws are a\n"
    "                        function of (N, n) alone, whatever the batching (up\n"
    "                        to float rounding; --shortlist is the batch's)\n";

void translator_options_init(TranslatorOptions *o) {
    memset(o, 0, sizeof *o);
    o->length_penalty = o->coverage_penalty = o->max_len_a = NAN;
    o->max_len_b = -1;
    o->device = CFG_DEVICE_AUTO;
    o->progress = TRANSLATOR_PROGRESS_AUTO;
    o->stream = TRANSLATOR_STREAM_AUTO;
    o->shortlist_frequent = 100;
    o->shortlist_per_source = 10;
    o->temperature = NAN;
    o->seed = 1;
}

int translator_take_model(int argc, char **argv, int *i, const char **models, int *n_models) {
    const char *v = NULL;
    int r = cli_take_string(argc, argv, i, "--model", &v);
    if (r > 0 && *n_models == TRANSLATOR_MAX_MODELS) {
        nmt_fail(NMT_ERR_USAGE, "at most %d --model files", TRANSLATOR_MAX_MODELS);
        return -1;
    }
    if (r > 0) models[(*n_models)++] = v;
    return r;
}

int translator_take_option(int argc, char **argv, int *i, TranslatorOptions *o) {
    const char *a = argv[*i];
    int r;
    if (!strcmp(a, "--replace-unk")) return o->replace_unk = 1;
    if (!strcmp(a, "--progress")) return o->progress = TRANSLATOR_PROGRESS_ON, 1;
    if (!strcmp(a, "--no-progress")) return o->progress = TRANSLATOR_PROGRESS_OFF, 1;
    if ((r = translator_take_model(argc, argv, i, o->models, &o->n_models))) return r;
    if ((r = cli_take_string(argc, argv, i, "--unk-dict", &o->unk_dict))) {
        if (r > 0) o->replace_unk = 1;
        return r;
    }
    if ((r = cli_take_int(argc, argv, i, "--batch", 1, TRANSLATOR_MAX_BATCH, &o->batch))) return r;
    if ((r = cli_take_int(argc, argv, i, "--maxi-batch", 1, CFG_MAX_MAXI_BATCH, &o->maxi_batch))) return r;
    if ((r = cli_take_int(argc, argv, i, "--max-src-len", 1, 100000, &o->max_src))) return r;
    if ((r = cli_take_int(argc, argv, i, "--beam", 1, 1000, &o->beam))) return r;
    if ((r = cli_take_int(argc, argv, i, "--sample", 1, SEQ2SEQ_MAX_SAMPLE_K, &o->sample))) return r;
    if ((r = cli_take_double(argc, argv, i, "--temperature", 0, 1e6, &o->temperature))) {
        if (r > 0 && !(o->temperature > 0)) {
            nmt_fail(NMT_ERR_USAGE, "--temperature must be above 0, got %g", o->temperature);
            return -1;
        }
        return r;
    }
    if ((r = cli_take_u64(argc, argv, i, "--seed", &o->seed))) {
        if (r > 0) o->seed_given = 1;
        return r;
    }
    if ((r = cli_take_int(argc, argv, i, "--nbest", 1, 1000, &o->nbest))) return r;
    if ((r = cli_take_double(argc, argv, i, "--length-penalty", 0, INFINITY, &o->length_penalty))) return r;
    if ((r = cli_take_double(argc, argv, i, "--coverage-penalty", 0, INFINITY, &o->coverage_penalty))) return r;
    if ((r = cli_take_double(argc, argv, i, "--max-len-a", 0, 1000, &o->max_len_a))) return r;
    if ((r = cli_take_int(argc, argv, i, "--max-len-b", 0, 100000, &o->max_len_b))) return r;
    if ((r = cli_take_int(argc, argv, i, "--threads", 0, 1024, &o->threads))) return r;
    if ((r = cli_take_choice(argc, argv, i, "--device", device_names, &o->device))) return r;
    if ((r = cli_take_int(argc, argv, i, "--gpu", 0, 1023, &o->gpu))) return r;
    if ((r = cli_take_string(argc, argv, i, "--attention-out", &o->attention_out))) return r;
    if ((r = alignment_take_option(argc, argv, i, &o->alignment))) return r;
    if ((r = cli_take_string(argc, argv, i, "--shortlist", &o->shortlist))) return r;
    if ((r = cli_take_int(argc, argv, i, "--shortlist-frequent", 0, INT_MAX, &o->shortlist_frequent)) ||
        (r = cli_take_int(argc, argv, i, "--shortlist-per-source", 0, INT_MAX, &o->shortlist_per_source))) {
        if (r > 0) o->shortlist_tuned = 1;
        return r;
    }
    return cli_take_string(argc, argv, i, "--attention-svg", &o->attention_svg);
}

void translator_options_from_config(TranslatorOptions *o, const Config *cfg) {
    const DecodeConfig *d = &cfg->decode;
#define GIVEN(key) config_is_explicit(cfg, "decode." key)
    if (o->beam == 0 && o->sample == 0 && GIVEN("beam")) o->beam = d->beam; /* sampling searches nothing */
    if (isnan(o->length_penalty) && GIVEN("length_penalty")) o->length_penalty = d->length_penalty;
    if (isnan(o->coverage_penalty) && GIVEN("coverage_penalty")) o->coverage_penalty = d->coverage_penalty;
    if (isnan(o->max_len_a) && GIVEN("max_len_a")) o->max_len_a = d->max_len_a;
    if (o->max_len_b < 0 && GIVEN("max_len_b")) o->max_len_b = d->max_len_b;
    if (o->batch == 0 && GIVEN("batch")) o->batch = d->batch;
    if (o->maxi_batch == 0 && GIVEN("maxi_batch")) o->maxi_batch = d->maxi_batch;
#undef GIVEN
}

void translator_lines_free(TranslatorLines *l) {
    if (!l) return;
    for (int64_t k = 0; k < l->n; k++) nmt_free(l->lines[k]);
    nmt_free(l->lines);
    memset(l, 0, sizeof *l);
}

/* ------------------------------------------------------------------ */
/* State                                                               */
/* ------------------------------------------------------------------ */

struct Translator {
    TranslatorOptions opt;
    Config cfg; /* the first model's: its tokenizers and decode settings rule */
    Tokenizer *src_tok, *tgt_tok;
    Backend *be;
    Seq2Seq *models[TRANSLATOR_MAX_MODELS];
    int n_models;
    /* resolved settings */
    int batch, max_src, beam, nbest, stride;
    double alpha, beta;
    FILE *attn_out;               /* --attention-out */
    Shortlist *shortlist;         /* --shortlist */
    int32_t *shortlist_ids;       /* (V_t) the current batch's list */
    bool attention;               /* the first --model has attention (where
                                     --replace-unk and coverage read it) */
    char **dict_src, **dict_tgt;  /* --unk-dict, sorted by source */
    int dict_n;
    /* the block of lines being filled: maxi batches, decoded longest first
     * (when maxi > 1) and written in input order */
    int maxi, block; /* batches a block, and its lines (batch * maxi) */
    int n;           /* lines in the block */
    int32_t **ids;   /* (block) encoded lines (length 0: output an empty line) */
    int *len;        /* (block) */
    int *cap;        /* (block) */
    char **text;     /* (block) the input lines (--replace-unk: surface words; --alignment) */
    TokenSpan **spans; /* (block) --alignment: where each of ids[i] came from in text[i] */
    int *order;      /* (block) the order in which they are decoded */
    uint64_t *sort_keys; /* (block) scratch of decoding_order */
    char **result;   /* (block) each line's output lines, joined by '\n' */
    int64_t block_done; /* lines of the block decoded, not yet written */
    /* decoder input and output, sized at open */
    int32_t *src;      /* (max_src, batch) */
    int *src_len;      /* (batch) */
    int32_t *out;      /* (batch * nbest, stride) */
    int *out_len;      /* (batch * nbest) */
    double *out_score; /* (batch * nbest) */
    int *out_count;    /* (batch) */
    float *out_attn;   /* (batch * nbest, stride, max_src) when attention is wanted */
    /* the current call */
    FILE *sink_file;
    TranslatorLines *sink_lines;
    int64_t line_index; /* input lines written so far (n-best numbering, heatmap names) */
    int64_t tokens;     /* target tokens of the best hypotheses decoded so far */
    bool stream; /* this call streams (TranslatorOptions.stream) */
    bool folded; /* the models' target embeddings are folded (fold_when_due) */
    ProgressLine progress;  /* progress_line.h */
    int64_t progress_lines; /* the lines it counted */
};

int translator_nbest(const Translator *tr) {
    return tr->nbest;
}

static bool wants_attention(const Translator *tr) {
    return tr->attn_out || tr->opt.attention_svg || tr->opt.replace_unk || tr->opt.alignment.on;
}

/* ------------------------------------------------------------------ */
/* Rendering                                                           */
/* ------------------------------------------------------------------ */

/* A piece or word as text: SentencePiece's word-start mark U+2581 dropped. */
static const char *piece_text(const Tokenizer *t, int id) {
    const char *p = tokenizer_piece(t, id);
    if (!p) return "";
    return strncmp(p, "\xE2\x96\x81", 3) == 0 ? p + 3 : p;
}

static int dict_cmp(const void *key, const void *item) {
    return strcmp((const char *)key, *(char *const *)item);
}

/* The n-th word of line as the word tokenizer splits it (word_space_len:
 * ASCII and Unicode spaces), newly allocated; "" when there are fewer. */
static char *surface_word(const char *line, int n) {
    size_t len = strlen(line), pos = 0, b, e;
    for (int k = 0; word_next(line, len, &pos, &b, &e); k++)
        if (k == n) return nmt_strndup(line + b, e - b);
    return nmt_strdup("");
}

/* The output text of ids; with --replace-unk every UNK becomes the source
 * token it attends to most (or that token's --unk-dict entry). spans (NULL:
 * not wanted) gets the bytes of *text that each of the len ids became. */
static NmtStatus render_text(const Translator *tr, const int32_t *ids, int len, const int32_t *src, int src_n,
                             const char *line, const float *attn, int S, char **text, TokenSpan *spans) {
    if (!tr->opt.replace_unk || !tr->attention)
        return spans ? tokenizer_decode_spans(tr->tgt_tok, ids, len, text, spans)
                     : tokenizer_decode(tr->tgt_tok, ids, len, text);
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
            st = spans ? tokenizer_decode_spans(tr->tgt_tok, ids + start, t - start, &part, spans + start)
                       : tokenizer_decode(tr->tgt_tok, ids + start, t - start, &part);
            if (!st) {
                if (ftell(f)) fputc(' ', f);
                size_t at = (size_t)ftell(f);
                for (int k = start; spans && k < t; k++) spans[k].begin += at, spans[k].end += at;
                fputs(part, f);
            }
            nmt_free(part);
        }
        if (t < len && !st) {
            int best = 0;
            for (int s_ = 1; s_ < src_n; s_++)
                if (attn[(size_t)t * S + s_] > attn[(size_t)t * S + best]) best = s_;
            /* the word itself for the word tokenizer (an unknown source word too); the piece for SentencePiece */
            bool by_word = src_n && tokenizer_kind(tr->src_tok) == TOKENIZER_WORD && line;
            char *surface = by_word ? surface_word(line, best) : NULL;
            const char *word = surface ? surface : !src_n ? "" : piece_text(tr->src_tok, src[best]);
            char **hit = tr->dict_n ? bsearch(word, tr->dict_src, (size_t)tr->dict_n, sizeof(char *), dict_cmp) : NULL;
            if (hit) word = tr->dict_tgt[hit - tr->dict_src];
            if (by_word && !surface) {
                st = nmt_fail_nomem("replacing unknown words");
            } else {
                if (ftell(f)) fputc(' ', f);
                if (spans) spans[t].begin = (size_t)ftell(f), spans[t].end = spans[t].begin + strlen(word);
                fputs(word, f);
            }
            nmt_free(surface);
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
static NmtStatus write_attention(Translator *tr, int64_t line_no, const int32_t *src, int src_n, const int32_t *ids,
                                 int len, const float *attn, int S) {
    FILE *f = tr->attn_out;
    if (f) {
        fprintf(f, "{\"line\": %lld, \"source\": [", (long long)line_no);
        for (int s_ = 0; s_ < src_n; s_++) {
            if (s_) fputs(", ", f);
            json_string(f, tokenizer_piece(tr->src_tok, src[s_]));
        }
        fputs("], \"target\": [", f);
        for (int t = 0; t < len; t++) {
            if (t) fputs(", ", f);
            json_string(f, tokenizer_piece(tr->tgt_tok, ids[t]));
        }
        fputs("], \"attention\": [", f);
        for (int t = 0; t < len; t++) {
            fputs(t ? ", [" : "[", f);
            for (int s_ = 0; s_ < src_n; s_++) fprintf(f, "%s%.4f", s_ ? ", " : "", attn[(size_t)t * S + s_]);
            fputc(']', f);
        }
        fputs("]}\n", f);
        if (ferror(f)) return nmt_fail(NMT_ERR_IO, "%s: write error (--attention-out)", tr->opt.attention_out);
    }
    if (tr->opt.attention_svg && src_n > 0) {
        const char **sp = nmt_malloc((size_t)(src_n + 1) * sizeof(char *));
        const char **tp = nmt_malloc((size_t)(len + 1) * sizeof(char *));
        float *w = nmt_malloc((size_t)(len * src_n + 1) * sizeof(float));
        char *path = nmt_asprintf("%s/line-%06lld.svg", tr->opt.attention_svg, (long long)line_no + 1);
        char title[64];
        snprintf(title, sizeof title, "line %lld", (long long)line_no + 1);
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

static const char *sink_name(const Translator *tr) {
    return tr->sink_file == stdout ? "standard output" : "output";
}

/* One output line to the file or the array of the current call. */
static NmtStatus emit(Translator *tr, const char *line) {
    if (tr->sink_file) {
        fprintf(tr->sink_file, "%s\n", line);
        return ferror(tr->sink_file) ? nmt_fail(NMT_ERR_IO, "%s: write error", sink_name(tr)) : NMT_OK;
    }
    TranslatorLines *l = tr->sink_lines;
    if (l->n == l->cap) {
        int64_t cap = l->cap ? l->cap * 2 : 256;
        char **a = nmt_realloc(l->lines, (size_t)cap * sizeof *a);
        if (!a) return nmt_fail_nomem("output lines");
        l->lines = a;
        l->cap = cap;
    }
    if (!(l->lines[l->n] = nmt_strdup(line))) return nmt_fail_nomem("output lines");
    l->n++;
    return NMT_OK;
}

/* ------------------------------------------------------------------ */
/* Progress                                                            */
/* ------------------------------------------------------------------ */

/* The progress line (progress_line.h) for the lines decoded so far. */
static void progress_show(Translator *tr, bool final) {
    int64_t lines = tr->line_index + tr->block_done;
    if (progress_line_show(&tr->progress, lines, tr->tokens, final)) tr->progress_lines = lines;
}

/* ------------------------------------------------------------------ */
/* Loading                                                             */
/* ------------------------------------------------------------------ */

/* The options that read the attention do nothing for a model without one
 * (model.attention.style none): said once, naming them. */
static void warn_without_attention(const Translator *tr, const ModelDims *d, const char *path) {
    if (d->style != ATTN_STYLE_NONE) return;
    const TranslatorOptions *o = &tr->opt;
    const char *names[4];
    int n = 0;
    if (o->attention_out) names[n++] = "--attention-out (all weights 0)";
    if (o->attention_svg) names[n++] = "--attention-svg (blank heatmaps)";
    if (o->replace_unk) names[n++] = "--replace-unk (unknown words stay)";
    if (tr->beta > 0) names[n++] = "a coverage penalty (none applied)";
    if (!n) return;
    char list[256] = "";
    for (int k = 0; k < n; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", names[k]);
    nmt_log_warn("%s has no attention (model.attention.style none), so these do nothing: %s", path, list);
}

NmtStatus translator_read_checkpoint(const char *path, Tokenizer **src_tok, Tokenizer **tgt_tok, Checkpoint *ck,
                                     Config *cfg, ModelDims *d) {
    bool first = !*src_tok;
    memset(cfg, 0, sizeof *cfg);
    NmtStatus st = checkpoint_load_model(path, ck);
    if (!st) st = config_load_string(ck->config_json, path, "/", NULL, 0, cfg);
    if (!st && first) st = tokenizer_deserialize(ck->src_tok, ck->src_tok_len, src_tok);
    if (!st && first) st = tokenizer_deserialize(ck->tgt_tok, ck->tgt_tok_len, tgt_tok);
    if (!st && !first) {
        int same_src = 0, same_tgt = 0;
        st = tokenizer_same_as_serialized(*src_tok, ck->src_tok, ck->src_tok_len, &same_src);
        if (!st) st = tokenizer_same_as_serialized(*tgt_tok, ck->tgt_tok, ck->tgt_tok_len, &same_tgt);
        if (!st && !(same_src && same_tgt))
            st = nmt_fail(NMT_ERR_USAGE, "%s: its vocabularies differ from the first --model's; an ensemble needs the "
                          "same source and target vocabularies", path);
    }
    if (!st) st = model_dims_from_config(cfg, tokenizer_vocab_size(*src_tok), tokenizer_vocab_size(*tgt_tok), d);
    ParamLayout *layout = st ? NULL : nmt_malloc(sizeof *layout);
    if (!st && !layout) st = nmt_fail_nomem("the parameter layout");
    if (!st) {
        param_layout_build(d, layout);
        if (ck->n_floats != layout->total)
            st = nmt_fail(NMT_ERR_FORMAT, "%s: %zu weights, the model of its config has %zu", path, ck->n_floats,
                          layout->total);
    }
    nmt_free(layout);
    if (st) {
        checkpoint_free(ck);
        config_free(cfg);
        if (first) {
            tokenizer_free(*src_tok);
            tokenizer_free(*tgt_tok);
            *src_tok = *tgt_tok = NULL;
        }
    }
    return st;
}

int translator_default_max_src(const Config *cfg) {
    int max_len2 = cfg->data.max_len * 2;
    return max_len2 > 100 ? max_len2 : 100;
}

/* Loads one checkpoint; the first sets the config, the tokenizers and the
 * backend; later ones (an ensemble) must share the tokenizers. */
static NmtStatus load_model(const char *path, Translator *tr) {
    Checkpoint ck;
    bool first = tr->n_models == 0;
    Config cfg_k;
    Config *cfg = first ? &tr->cfg : &cfg_k;
    ModelDims d;
    NmtStatus st = translator_read_checkpoint(path, &tr->src_tok, &tr->tgt_tok, &ck, cfg, &d);
    if (st) return st;
    if (first) {
        const TranslatorOptions *o = &tr->opt;
        st = backend_create_for(o->device, o->gpu, o->threads, "--device", "--gpu", &tr->be);
        tr->max_src = o->max_src > 0 ? o->max_src : translator_default_max_src(&tr->cfg);
        tr->batch = o->batch > 0 ? o->batch : tr->cfg.decode.batch;
        if (tr->batch > TRANSLATOR_MAX_BATCH) tr->batch = TRANSLATOR_MAX_BATCH;
        tr->maxi = o->maxi_batch > 0 ? o->maxi_batch : tr->cfg.decode.maxi_batch;
        tr->beam = o->sample > 0 ? 1 : o->beam > 0 ? o->beam : tr->cfg.decode.beam; /* sampling searches nothing */
        tr->nbest = o->nbest > 0 ? o->nbest : 1;
        if (tr->nbest > tr->beam) tr->beam = tr->nbest;
        tr->alpha = isnan(o->length_penalty) ? tr->cfg.decode.length_penalty : o->length_penalty;
        tr->beta = isnan(o->coverage_penalty) ? tr->cfg.decode.coverage_penalty : o->coverage_penalty;
        /* the length limits in effect, where decoding reads them */
        if (!isnan(o->max_len_a)) tr->cfg.decode.max_len_a = o->max_len_a;
        if (o->max_len_b >= 0) tr->cfg.decode.max_len_b = o->max_len_b;
        if (tr->cfg.decode.max_len_a == 0 && tr->cfg.decode.max_len_b == 0)
            st = nmt_fail(NMT_ERR_USAGE, "--max-len-a and --max-len-b are both 0 (with the model's or --config's "
                                         "decode keys): no output token is allowed");
        /* at least a step: a tiny max_len_a * max_src rounds down to 0 */
        tr->stride = (int)(tr->cfg.decode.max_len_a * tr->max_src) + tr->cfg.decode.max_len_b;
        if (tr->stride < 1) tr->stride = 1;
        tr->attention = d.style != ATTN_STYLE_NONE;
        if (!st) warn_without_attention(tr, &d, path);
    }
    Seq2Seq *model = NULL;
    if (!st) {
        ModelLimits lim = {tr->batch, tr->max_src, 1, tr->stride, tr->beam, 0, tr->opt.sample};
        st = seq2seq_create(tr->be, &d, lim, &model);
        if (st == NMT_ERR_NOMEM) {
            char hint[256];
            snprintf(hint, sizeof hint, "%s: lower --batch (%d), --beam (%d) or --max-src-len (%d)", path,
                     tr->batch, tr->beam, tr->max_src);
            backend_explain_nomem(tr->be, hint);
        }
    }
    if (!st) { /* translator_read_checkpoint checked the count against the layout */
        tr->be->upload(tr->be, seq2seq_params(model), ck.params, ck.n_floats * sizeof(float));
        tr->models[tr->n_models++] = model;
    } else {
        seq2seq_free(model);
    }
    if (!st && !first && cfg_k.model.right_to_left != tr->cfg.model.right_to_left)
        st = nmt_fail(NMT_ERR_USAGE, "%s: model.right_to_left is %s, the first --model's %s: an ensemble's models "
                      "must write their targets in one direction (rerank with a right-to-left model instead: "
                      "scripts/rerank.sh)", path, cfg_k.model.right_to_left ? "true" : "false",
                      tr->cfg.model.right_to_left ? "true" : "false");
    if (!first) config_free(&cfg_k);
    checkpoint_free(&ck);
    return st;
}

/* --unk-dict: "source<TAB>target" per line; sorted for lookups. */
typedef struct {
    char *src, *tgt;
    int line; /* order in the file */
} DictEntry;

static int dict_entry_cmp(const void *a, const void *b) {
    const DictEntry *x = a, *y = b;
    int c = strcmp(x->src, y->src);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

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
    /* sorted by source for bsearch; of a source listed more than once the
     * first line wins, the others go (so that bsearch finds that one) */
    DictEntry *e = nmt_malloc((size_t)(tr->dict_n ? tr->dict_n : 1) * sizeof *e);
    if (!e) return nmt_fail_nomem("reading --unk-dict");
    for (int i = 0; i < tr->dict_n; i++) e[i] = (DictEntry){tr->dict_src[i], tr->dict_tgt[i], i};
    qsort(e, (size_t)tr->dict_n, sizeof *e, dict_entry_cmp);
    int kept = 0;
    for (int i = 0; i < tr->dict_n; i++) {
        if (kept && !strcmp(e[i].src, tr->dict_src[kept - 1])) {
            nmt_free(e[i].src);
            nmt_free(e[i].tgt);
            continue;
        }
        tr->dict_src[kept] = e[i].src;
        tr->dict_tgt[kept] = e[i].tgt;
        kept++;
    }
    tr->dict_n = kept;
    nmt_free(e);
    return NMT_OK;
}

/* The batch and decoder buffers, once the sizes are known. */
static NmtStatus alloc_buffers(Translator *tr) {
    size_t B = (size_t)tr->batch, per = (size_t)tr->nbest, stride = (size_t)tr->stride;
    /* attention output is written as lines are decoded, so in input order,
     * one batch at a time; batches of one line gain nothing from sorting,
     * and must not wait for more input (a line at a time from a pipe) */
    if (tr->attn_out || tr->opt.attention_svg || tr->batch == 1) tr->maxi = 1;
    tr->block = tr->batch * tr->maxi;
    size_t L = (size_t)tr->block;
    tr->ids = nmt_calloc(L, sizeof *tr->ids);
    tr->len = nmt_calloc(L, sizeof *tr->len);
    tr->cap = nmt_calloc(L, sizeof *tr->cap);
    tr->text = nmt_calloc(L, sizeof *tr->text);
    tr->spans = nmt_calloc(L, sizeof *tr->spans);
    tr->order = nmt_calloc(L, sizeof *tr->order);
    tr->sort_keys = nmt_calloc(L, sizeof *tr->sort_keys);
    tr->result = nmt_calloc(L, sizeof *tr->result);
    tr->src = nmt_malloc(B * (size_t)tr->max_src * sizeof *tr->src);
    tr->src_len = nmt_malloc(B * sizeof *tr->src_len);
    tr->out = nmt_malloc(B * per * stride * sizeof *tr->out);
    tr->out_len = nmt_malloc(B * per * sizeof *tr->out_len);
    tr->out_score = nmt_malloc(B * per * sizeof *tr->out_score);
    tr->out_count = nmt_malloc(B * sizeof *tr->out_count);
    if (wants_attention(tr)) tr->out_attn = nmt_malloc(B * per * stride * (size_t)tr->max_src * sizeof(float));
    if (!tr->ids || !tr->len || !tr->cap || !tr->text || !tr->spans || !tr->order || !tr->sort_keys || !tr->result ||
        !tr->src || !tr->src_len ||
        !tr->out || !tr->out_len ||
        !tr->out_score || !tr->out_count || (wants_attention(tr) && !tr->out_attn))
        return nmt_fail_nomem("translation buffers");
    return NMT_OK;
}

NmtStatus translator_open(const TranslatorOptions *o, Translator **out) {
    *out = NULL;
    if (o->n_models < 1) return nmt_fail(NMT_ERR_USAGE, "no model given (use --model FILE)");
    if (o->shortlist_tuned && !o->shortlist)
        return nmt_fail(NMT_ERR_USAGE, "--shortlist-frequent and --shortlist-per-source tune a shortlist: "
                        "give its file with --shortlist FILE (nmt shortlist makes one)");
    if (o->sample == 0 && (!isnan(o->temperature) || o->seed_given))
        return nmt_fail(NMT_ERR_USAGE, "%s sets how --sample draws: give --sample K too",
                        !isnan(o->temperature) ? "--temperature" : "--seed");
    if (o->sample > 0) {
        const char *clash = o->beam > 1 ? "--beam" : o->nbest > 1 ? "--nbest" : o->n_models > 1 ? "a second --model"
                          : o->unk_dict ? "--unk-dict" : o->replace_unk ? "--replace-unk"
                          : o->attention_out ? "--attention-out" : o->attention_svg ? "--attention-svg"
                          : o->alignment.on ? "--alignment" : NULL;
        if (clash)
            return nmt_fail(NMT_ERR_USAGE, "--sample draws one translation a line, token by token; it does not go "
                            "with %s (a beam search, n-best lists, ensembles and attention output)", clash);
    }
    if (alignment_check_options(&o->alignment)) return NMT_ERR_USAGE;
    if (o->shortlist && o->shortlist_frequent == 0 && o->shortlist_per_source == 0)
        return nmt_fail(NMT_ERR_USAGE, "--shortlist-frequent 0 with --shortlist-per-source 0 leaves only EOS and UNK "
                        "to choose from; give one of them a value above 0");
    Translator *tr = nmt_calloc(1, sizeof *tr);
    if (!tr) return nmt_fail_nomem("translator");
    tr->opt = *o;
    NmtStatus st = NMT_OK;
    for (int k = 0; !st && k < o->n_models; k++) st = load_model(o->models[k], tr);
    if (!st && o->alignment.on && !tr->attention)
        st = nmt_fail(NMT_ERR_USAGE, "%s has no attention (model.attention.style none): --alignment reads the "
                      "attention of the first --model", o->models[0]);
    if (!st && o->unk_dict) st = load_dict(o->unk_dict, tr);
    if (!st && o->shortlist) {
        st = shortlist_load(o->shortlist, tr->src_tok, tr->tgt_tok, &tr->shortlist);
        tr->shortlist_ids = st ? NULL : nmt_malloc((size_t)tokenizer_vocab_size(tr->tgt_tok) * sizeof(int32_t));
        if (!st && !tr->shortlist_ids) st = nmt_fail_nomem("the shortlist");
    }
    if (!st && o->attention_svg) st = file_make_dirs(o->attention_svg);
    if (!st && o->attention_out && !(tr->attn_out = fopen(o->attention_out, "w")))
        st = nmt_fail(NMT_ERR_IO, "%s: cannot write: %s (--attention-out)", o->attention_out, strerror(errno));
    if (!st) st = alloc_buffers(tr);
    if (st) {
        translator_free(tr);
        return st;
    }
    *out = tr;
    return NMT_OK;
}

void translator_free(Translator *tr) {
    if (!tr) return;
    for (int k = 0; k < tr->n_models; k++) seq2seq_free(tr->models[k]);
    if (tr->be) {
        backend_log_usage(tr->be, "translate");
        tr->be->destroy(tr->be);
    }
    tokenizer_free(tr->src_tok);
    tokenizer_free(tr->tgt_tok);
    config_free(&tr->cfg);
    if (tr->attn_out) fclose(tr->attn_out);
    shortlist_free(tr->shortlist);
    nmt_free(tr->shortlist_ids);
    for (int k = 0; k < tr->dict_n; k++) nmt_free(tr->dict_src[k]), nmt_free(tr->dict_tgt[k]);
    nmt_free(tr->dict_src);
    nmt_free(tr->dict_tgt);
    for (int i = 0; i < tr->block && tr->ids; i++) nmt_free(tr->ids[i]);
    for (int i = 0; i < tr->block && tr->text; i++) nmt_free(tr->text[i]);
    for (int i = 0; i < tr->block && tr->spans; i++) nmt_free(tr->spans[i]);
    for (int i = 0; i < tr->block && tr->result; i++) nmt_free(tr->result[i]);
    nmt_free(tr->ids);
    nmt_free(tr->order);
    nmt_free(tr->sort_keys);
    nmt_free(tr->result);
    nmt_free(tr->len);
    nmt_free(tr->cap);
    nmt_free(tr->text);
    nmt_free(tr->spans);
    nmt_free(tr->src);
    nmt_free(tr->src_len);
    nmt_free(tr->out);
    nmt_free(tr->out_len);
    nmt_free(tr->out_score);
    nmt_free(tr->out_count);
    nmt_free(tr->out_attn);
    nmt_free(tr);
}

/* ------------------------------------------------------------------ */
/* Batches                                                             */
/* ------------------------------------------------------------------ */

/* Appends `line` to *acc as a line of its own ("a" + "b" -> "a\nb"). */
static NmtStatus append_line(char **acc, const char *line) {
    char *joined = *acc ? nmt_asprintf("%s\n%s", *acc, line) : nmt_strdup(line);
    if (!joined) return nmt_fail_nomem("output lines");
    nmt_free(*acc);
    *acc = joined;
    return NMT_OK;
}

/* A right-to-left model's hypotheses (model.right_to_left) in text order:
 * the tokens of each, and their attention rows. */
static void to_text_order(Translator *tr, int cols, int S) {
    int per = tr->nbest, stride = tr->stride;
    for (int c = 0; c < cols; c++)
        for (int h = 0; h < tr->out_count[c]; h++) {
            size_t k = (size_t)c * per + h;
            int len = tr->out_len[k];
            batch_reverse_ids(tr->out + k * stride, len);
            float *a = wants_attention(tr) ? tr->out_attn + k * stride * S : NULL;
            for (int i = 0, j = len - 1; a && i < j; i++, j--)
                for (int s = 0; s < S; s++) {
                    float x = a[(size_t)i * S + s];
                    a[(size_t)i * S + s] = a[(size_t)j * S + s];
                    a[(size_t)j * S + s] = x;
                }
        }
}

/* Decodes lines idx[0..n) of the block (n <= batch; the empty ones take no
 * decoder column) and renders each one's output into tr->result: one line,
 * or nbest lines in Moses format numbered by input line. With attention
 * output, writes each line's attention (then idx ascends: no sorting). */
static NmtStatus decode_chunk(Translator *tr, const int *idx, int n) {
    int cols = 0, S = 1, map[TRANSLATOR_MAX_BATCH];
    for (int k = 0; k < n; k++)
        if (tr->len[idx[k]] > 0) {
            map[cols++] = idx[k];
            if (tr->len[idx[k]] > S) S = tr->len[idx[k]];
        }
    int nbest = tr->nbest, stride = tr->stride;
    if (cols > 0) {
        memset(tr->src, 0, (size_t)S * cols * sizeof *tr->src);
        for (int c = 0; c < cols; c++) {
            int i = map[c];
            tr->src_len[c] = tr->len[i];
            for (int s = 0; s < tr->len[i]; s++) tr->src[s * cols + c] = tr->ids[i][s];
        }
        Batch b;
        memset(&b, 0, sizeof b);
        b.B = cols;
        b.S = S;
        b.src = tr->src;
        b.src_len = tr->src_len;
        if (tr->shortlist) { /* this batch's likely output tokens, for every model */
            int sn = shortlist_select(tr->shortlist, tr->opt.shortlist_frequent, tr->opt.shortlist_per_source, tr->src,
                                      (int64_t)S * cols, tr->shortlist_ids);
            for (int k = 0; k < tr->n_models; k++) {
                NmtStatus st = seq2seq_set_shortlist(tr->models[k], tr->shortlist_ids, sn);
                if (st) return st;
            }
        }
        if (tr->opt.sample > 0) { /* each line's draws keyed by (seed, its line number): batching changes nothing */
            uint64_t keys[TRANSLATOR_MAX_BATCH];
            for (int c = 0; c < cols; c++)
                keys[c] = rng_mix64(tr->opt.seed ^ rng_mix64((uint64_t)(tr->line_index + map[c]) + 1));
            double temperature = isnan(tr->opt.temperature) ? 1.0 : tr->opt.temperature;
            SampleSpec spec = {tr->opt.sample, temperature, keys};
            NmtStatus st = seq2seq_sample(tr->models[0], &b, tr->cfg.decode.max_len_a, tr->cfg.decode.max_len_b, &spec,
                                          tr->out, stride, tr->out_len);
            if (st) return st;
            for (int c = 0; c < cols; c++) tr->out_count[c] = 1, tr->out_score[c] = 0;
        } else if (tr->beam <= 1 && !wants_attention(tr) && tr->n_models == 1) {
            NmtStatus st = seq2seq_greedy(tr->models[0], &b, tr->cfg.decode.max_len_a, tr->cfg.decode.max_len_b,
                                          tr->out, stride, tr->out_len);
            if (st) return st;
            for (int c = 0; c < cols; c++) tr->out_count[c] = 1, tr->out_score[c] = 0;
        } else { /* beam 1 is greedy; the beam path also records attention */
            BeamSpec spec = {tr->beam, nbest, tr->alpha, tr->beta, tr->cfg.decode.max_len_a, tr->cfg.decode.max_len_b};
            NmtStatus st = seq2seq_ensemble_search(tr->models, tr->n_models, &b, &spec, tr->out, stride, tr->out_len,
                                                   tr->out_score, tr->out_count,
                                                   wants_attention(tr) ? tr->out_attn : NULL);
            if (st) return st;
        }
        if (backend_error(tr->be)) return NMT_ERR_RUNTIME; /* the outputs are void; flush_block says so */
        if (tr->cfg.model.right_to_left) to_text_order(tr, cols, S);
    }
    int c = 0;
    int per = nbest; /* hypotheses stored per sentence */
    for (int k = 0; k < n; k++) {
        int i = idx[k];
        int64_t line_no = tr->line_index + i; /* 0-based, in the whole input */
        int n_hyp = tr->len[i] > 0 ? tr->out_count[c] : 0;
        const int32_t *hyp = tr->out + (size_t)c * per * stride;
        const float *attn_c = tr->out_attn + (size_t)c * per * stride * S;
        if (wants_attention(tr)) {
            NmtStatus st = write_attention(tr, line_no, tr->ids[i], tr->len[i], n_hyp ? hyp : NULL,
                                           n_hyp ? tr->out_len[c * per] : 0, attn_c, S);
            if (st) return st;
        }
        if (n_hyp) tr->tokens += tr->out_len[c * per];
        /* exactly nbest lines for every input line: an empty or invalid line
         * (no decoder column) gets the empty hypothesis nbest times (its
         * log-probability 0); a search that found fewer than nbest
         * hypotheses (a tiny vocabulary or length limit) repeats its last,
         * so the list stays best first, and says so */
        if (tr->len[i] > 0 && n_hyp == 0)
            nmt_log_warn("input line %lld: the search kept no hypothesis (every score was NaN); writing an "
                         "empty translation%s", (long long)line_no + 1, nbest > 1 ? " scored -inf" : "");
        else if (tr->len[i] > 0 && n_hyp < nbest)
            nmt_log_warn("input line %lld: the search found %d hypothes%s, fewer than --nbest %d; the last is repeated",
                         (long long)line_no + 1, n_hyp, n_hyp == 1 ? "is" : "es", nbest);
        for (int h = 0; h < nbest; h++) {
            char *text = NULL, *aln = NULL;
            int from = h < n_hyp ? h : n_hyp - 1; /* the hypothesis this line shows, -1: none */
            if (from >= 0) {
                int len = tr->out_len[c * per + from];
                const float *attn = attn_c + (size_t)from * stride * S;
                TokenSpan *spans = tr->opt.alignment.on ? nmt_malloc((size_t)(len + 1) * sizeof *spans) : NULL;
                NmtStatus st = tr->opt.alignment.on && !spans ? nmt_fail_nomem("alignment") : NMT_OK;
                if (!st) st = render_text(tr, hyp + (size_t)from * stride, len, tr->ids[i], tr->len[i], tr->text[i],
                                          attn, S, &text, spans);
                if (!st && tr->opt.alignment.on)
                    st = alignment_of_pair(&tr->opt.alignment.spec, attn, len, S, tr->len[i], tr->text[i],
                                           tr->spans[i], text, spans, &aln);
                nmt_free(spans);
                if (st) {
                    nmt_free(text);
                    return st;
                }
            }
            /* the translation, and --alignment's pairs after ' ||| ' */
            char *shown = tr->opt.alignment.on ? nmt_asprintf("%s ||| %s", text ? text : "", aln ? aln : "")
                                            : nmt_strdup(text ? text : "");
            nmt_free(text);
            nmt_free(aln);
            if (!shown) return nmt_fail_nomem("output line");
            NmtStatus st;
            if (nbest > 1) {
                double score = from >= 0 ? tr->out_score[c * per + from] : tr->len[i] > 0 ? -INFINITY : 0.0;
                char *line = nmt_asprintf("%lld ||| %s ||| %.6f", (long long)line_no, shown, score);
                st = line ? append_line(&tr->result[i], line) : nmt_fail_nomem("n-best line");
                nmt_free(line);
            } else {
                st = append_line(&tr->result[i], shown);
            }
            nmt_free(shown);
            if (st) return st;
        }
        if (tr->len[i] > 0) c++;
    }
    tr->block_done += n;
    return NMT_OK;
}

static int key_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The block's lines in decoding order: longest first (by token count, in
 * input order among equals; empty lines last), so that each batch holds
 * lines of about one length and stops early when they are short; or in
 * input order. */
static void decoding_order(Translator *tr) {
    if (tr->maxi == 1) {
        for (int i = 0; i < tr->n; i++) tr->order[i] = i;
        return;
    }
    /* keys (INT_MAX - length, index): ascending is longest first, stable */
    for (int i = 0; i < tr->n; i++) tr->sort_keys[i] = (uint64_t)(INT_MAX - tr->len[i]) << 32 | (uint32_t)i;
    qsort(tr->sort_keys, (size_t)tr->n, sizeof *tr->sort_keys, key_cmp);
    for (int i = 0; i < tr->n; i++) tr->order[i] = (int)(uint32_t)tr->sort_keys[i];
}

/* Writes the outputs of the block's first `n` lines, in input order. */
static NmtStatus write_results(Translator *tr, int n) {
    for (int i = 0; i < n; i++, tr->line_index++, tr->block_done--) {
        char *rest = tr->result[i];
        for (;;) { /* its output lines */
            char *nl = rest ? strchr(rest, '\n') : NULL;
            if (nl) *nl = '\0';
            NmtStatus st = emit(tr, rest ? rest : "");
            if (st) return st;
            if (!nl) break;
            rest = nl + 1;
        }
        nmt_free(tr->result[i]);
        tr->result[i] = NULL;
    }
    return NMT_OK;
}

/* Folds every model's target embeddings (seq2seq_fold_embeddings; their
 * weights stay as they are from load on) once the lines read so far reach
 * the backend's decode_fold_lines, which pay for making the tables. */
static NmtStatus fold_when_due(Translator *tr) {
    int due = tr->be->decode_fold_lines;
    if (tr->folded || due <= 0 || tr->line_index + tr->n < due) return NMT_OK;
    tr->folded = true;
    for (int k = 0; k < tr->n_models; k++) {
        NmtStatus st = seq2seq_fold_embeddings(tr->models[k], NULL);
        if (st) return st;
    }
    return NMT_OK;
}

/* Decodes the block batch by batch in decoding order, then writes every
 * line's output in input order. When the device fails, the lines decoded
 * before it that come first in input order are written, and the error
 * names the first line not written. */
static NmtStatus flush_block(Translator *tr) {
    NmtStatus fst = fold_when_due(tr);
    if (fst) return fst;
    decoding_order(tr);
    for (int k = 0; k < tr->n; k += tr->batch) {
        NmtStatus st = decode_chunk(tr, tr->order + k, tr->n - k < tr->batch ? tr->n - k : tr->batch);
        const char *e = st ? backend_error(tr->be) : NULL;
        if (e) {
            int done = 0;
            while (done < tr->n && tr->result[done]) done++;
            NmtStatus w = write_results(tr, done);
            if (w) return w;
            return nmt_fail(NMT_ERR_RUNTIME, "the %s device failed: %s; stopped at input line %lld (the "
                            "translations of the lines before it were written and are good)",
                            tr->be->name, e, (long long)tr->line_index + 1);
        }
        if (st) return st;
        if (k + tr->batch < tr->n) progress_show(tr, false);
    }
    NmtStatus st = write_results(tr, tr->n);
    if (st) return st;
    /* streaming: the attention lines are out before the answers they go with */
    if (tr->stream && tr->attn_out && fflush(tr->attn_out) != 0)
        return nmt_fail(NMT_ERR_IO, "%s: write error (--attention-out)", tr->opt.attention_out);
    /* a block's lines reach a pipe now, not when the buffer fills */
    if (tr->sink_file && fflush(tr->sink_file) != 0) return nmt_fail(NMT_ERR_IO, "%s: write error", sink_name(tr));
    tr->n = 0;
    progress_show(tr, false);
    return NMT_OK;
}

/* Adds one input line to the block (decoding it when the block is full). */
static NmtStatus push_line(Translator *tr, const char *name, int64_t line_no, const char *line, size_t len) {
    int i = tr->n++;
    tr->len[i] = 0;
    nmt_free(tr->text[i]);
    tr->text[i] = NULL;
    if ((tr->opt.replace_unk || tr->opt.alignment.on) && !(tr->text[i] = nmt_strndup(line, len)))
        return nmt_fail_nomem("translating");
    size_t bad;
    if (!utf8_validate(line, len, &bad) || memchr(line, '\0', len)) {
        nmt_log_warn("%s:%lld: invalid UTF-8 or NUL byte; writing an empty line", name, (long long)line_no);
    } else {
        /* what is encoded: a line of more than max_src words only up to the
         * words that can give the first max_src + 1 ids (the same first ids;
         * else prefix is len) */
        size_t prefix;
        bool over = tokenizer_min_ids_prefix(tr->src_tok, line, len, tr->max_src + 1, &prefix) > tr->max_src;
        /* and no more bytes than max_src + 1 pieces hold (tokenizer_bytes_cap;
         * a huge word), cut before a UTF-8 character */
        size_t cap = tokenizer_bytes_cap(tr->src_tok, tr->max_src + 1);
        bool cut = prefix > cap;
        if (cut) {
            prefix = cap;
            while (prefix > 0 && ((unsigned char)line[prefix] & 0xC0) == 0x80) prefix--;
        }
        NmtStatus st;
        if (tr->opt.alignment.on) { /* and where each token came from */
            nmt_free(tr->ids[i]);
            nmt_free(tr->spans[i]);
            tr->ids[i] = NULL, tr->spans[i] = NULL;
            st = tokenizer_encode_spans(tr->src_tok, line, prefix, &tr->ids[i], &tr->spans[i], &tr->len[i]);
            tr->cap[i] = tr->len[i];
        } else {
            st = tokenizer_encode_buf(tr->src_tok, line, prefix, &tr->ids[i], &tr->len[i], &tr->cap[i]);
        }
        if (st) return st;
        if (cut && tr->len[i] <= tr->max_src) /* a run of unknown characters: fewer ids */
            nmt_log_warn("%s:%lld: %zu bytes; only its first %zu are translated (--max-src-len %d: at most %d "
                         "bytes a token)", name, (long long)line_no, len, prefix, tr->max_src,
                         TOKENIZER_SPM_PIECE_BYTES);
        if (tr->len[i] > tr->max_src) {
            if (over || cut)
                nmt_log_warn("%s:%lld: more than %d tokens; truncated to %d (--max-src-len)", name,
                             (long long)line_no, tr->max_src, tr->max_src);
            else
                nmt_log_warn("%s:%lld: %d tokens; truncated to %d (--max-src-len)", name, (long long)line_no,
                             tr->len[i], tr->max_src);
            tr->len[i] = tr->max_src;
        }
    }
    return tr->n == tr->block ? flush_block(tr) : NMT_OK;
}

/* Starts a call: the sink, the counters and the progress clock. `stream`:
 * the call streams (the caller reads standard input itself). */
static void start_call(Translator *tr, FILE *out, TranslatorLines *lines, bool stream) {
    NMT_ASSERT(out || lines);
    tr->stream = stream;
    tr->sink_file = out;
    tr->sink_lines = lines;
    tr->n = 0;
    for (int i = 0; i < tr->block; i++) { /* what a failed call left */
        nmt_free(tr->result[i]);
        tr->result[i] = NULL;
    }
    tr->block_done = 0;
    tr->line_index = 0;
    tr->tokens = 0;
    /* by default on a terminal; but not when streaming to or from one: a
     * '\r' line would land between the lines typed and their translations */
    bool term_io = stream && (isatty(0) || (out && fileno(out) >= 0 && isatty(fileno(out))));
    progress_line_start(&tr->progress,
                        tr->opt.progress == TRANSLATOR_PROGRESS_AUTO ? progress_line_default() && !term_io
                                                                     : tr->opt.progress == TRANSLATOR_PROGRESS_ON,
                        "translating", "translated");
    tr->progress_lines = 0;
}

/* Ends a call: the last batch, flushes, the final progress line. */
static NmtStatus finish_call(Translator *tr, NmtStatus st) {
    if (!st && tr->n > 0) st = flush_block(tr);
    tr->n = 0;
    if (!st && tr->sink_file && fflush(tr->sink_file) != 0)
        st = nmt_fail(NMT_ERR_IO, "%s: write error", sink_name(tr));
    if (!st && tr->attn_out && fflush(tr->attn_out) != 0)
        st = nmt_fail(NMT_ERR_IO, "%s: write error (--attention-out)", tr->opt.attention_out);
    if (st) progress_line_abort(&tr->progress); /* keep the last progress line above the error */
    else progress_show(tr, true);
    return st;
}

/* Streaming, before reading a line from r (on fd): when the read would
 * wait (no whole line in the reader's buffer, none arriving on fd:
 * line_reader_ready), decodes the lines read so far (however few) and
 * writes them, flushed (flush_block flushes the output, and the attention
 * lines first), and brings the progress line up to date: an update that
 * its rate limit held back is shown once it is due, unless input comes
 * first. The read that follows waits for input (in the kernel: no CPU).
 * Lines that arrive together are decoded together; docs/decoding.md. */
static NmtStatus stream_before_read(Translator *tr, LineReader *r, int fd) {
    if (line_reader_ready(r)) return NMT_OK;
    NmtStatus st = tr->n > 0 ? flush_block(tr) : NMT_OK;
    if (!st && tr->progress.on && tr->progress_lines != tr->line_index + tr->block_done) {
        double wait_s = progress_line_wait_s(&tr->progress);
        if (wait_s <= 0 || !file_read_ready(fd, (int)(wait_s * 1000) + 1)) progress_show(tr, false);
    }
    return st;
}

NmtStatus translator_translate_file(Translator *tr, const char *path, FILE *out, TranslatorLines *lines) {
    LineReader *r;
    bool is_stdin = !path || !strcmp(path, "-");
    NmtStatus st = is_stdin ? line_reader_open_fd(0, "standard input", &r) : line_reader_open(path, &r);
    if (st) return st;
    line_reader_set_validate(r, 0); /* invalid lines become empty lines, not errors */
    const char *name = is_stdin ? "standard input" : path;
    /* streaming: standard input written to a FILE (an array of lines is
     * read when the call ends); by default when a person types it */
    bool stream = is_stdin && out &&
                  (tr->opt.stream == TRANSLATOR_STREAM_AUTO ? isatty(0) : tr->opt.stream == TRANSLATOR_STREAM_ON);
    start_call(tr, out, lines, stream);
    while (!st) {
        const char *line;
        size_t len;
        int got = 0;
        if (stream && (st = stream_before_read(tr, r, 0)) != NMT_OK) break;
        st = line_reader_next(r, &line, &len, &got);
        if (st || !got) break;
        st = push_line(tr, name, line_reader_line_no(r), line, len);
    }
    st = finish_call(tr, st);
    line_reader_close(r);
    return st;
}

NmtStatus translator_translate_lines(Translator *tr, const char *name, const char *const *in, int64_t n, FILE *out,
                                     TranslatorLines *lines) {
    start_call(tr, out, lines, false);
    NmtStatus st = NMT_OK;
    for (int64_t k = 0; k < n && !st; k++) st = push_line(tr, name, k + 1, in[k], strlen(in[k]));
    return finish_call(tr, st);
}
