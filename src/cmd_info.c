/* cmd_info.c: `nmt info`: describes a checkpoint (docs/checkpoint-format.md)
 * without loading more of it than that needs: checkpoint_load_weights
 * (every check of the loader, but neither the optimizer's moments nor the
 * training weights, which it says are stored or not).
 * Prints one fact a line (text), the stored config as it is (--config),
 * the validation history (--history), or all of it as one JSON object
 * (--json, cJSON; a value that is not known or not finite is null). */
#include "commands.h"

#include <cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "config.h"
#include "data/tokenizer.h"
#include "fileio.h"
#include "train/checkpoint.h"
#include "train/optimizer.h"

static const char info_usage[] =
    "usage: nmt info CHECKPOINT.nmt [--json] [--config] [--history]\n"
    "       nmt info CHECKPOINT.nmt --tokenizers DIR\n\n"
    "Describes a checkpoint, one fact a line: its file, size and format;\n"
    "what it holds (the weights or their moving average, the training\n"
    "weights, the optimizer and whether its moments are stored); the model's\n"
    "sizes and attention from its stored config; its tokenizers and\n"
    "vocabulary sizes; the number of parameters and tensors; the training\n"
    "state (step, epoch, batch, tokens seen, training time, learning-rate\n"
    "scale, the rate of the next update and its schedule, the best\n"
    "scheduled validation so far in train.valid_metric, the\n"
    "best validation of the history, scheduled or at a stop: the one the\n"
    "run's best.nmt holds) and the number of validations. The optimizer's\n"
    "moments are not loaded.\n\n"
    "  --history   also the validation history: step, perplexity, BLEU, chrF\n"
    "              ('-' where a record has none)\n"
    "  --config    the resolved config stored in the checkpoint, as stored\n"
    "              (alone; with --json, its \"config\" member)\n"
    "  --json      everything as one JSON object, the history included\n"
    "              (null where a value is not known)\n"
    "  --tokenizers DIR\n"
    "              writes the tokenizers, alone: SentencePiece models as\n"
    "              DIR/src.model and DIR/tgt.model (spm_encode and spm_decode\n"
    "              take them, and so do data.spm_src_model and\n"
    "              data.spm_tgt_model: a new model on the same vocabularies),\n"
    "              word vocabularies as DIR/src.vocab and DIR/tgt.vocab\n\n"
    "A missing, corrupt or truncated file is refused with the loader's\n"
    "message (exit code 1).\n";

/* What `nmt info` reports of one checkpoint file. */
typedef struct {
    const char *path;
    uint64_t size_bytes;
    Checkpoint ck;            /* checkpoint_load_weights: no moments, no training weights
                                 (ck.moments_stored, ck.train_params_stored say whether stored) */
    Config cfg;               /* ck.config_json, loaded */
    int src_kind, tgt_kind;   /* TokenizerKind; -1: no tokenizer stored */
    const char *src_spm_type, *tgt_spm_type; /* the SentencePiece models' types (tokenizer_spm_type), else NULL */
    int src_vocab, tgt_vocab; /* ids of each tokenizer; 0: none stored */
} CheckpointInfo;

/* Kind, number of ids and SentencePiece model type (NULL for words) of a
 * serialized tokenizer (-1, 0 and NULL: none stored). */
static NmtStatus tokenizer_facts(const CheckpointInfo *info, const uint8_t *bytes, size_t n, const char *side,
                                 int *kind, int *vocab, const char **spm_type) {
    *kind = -1;
    *vocab = 0;
    *spm_type = NULL;
    if (!n) return NMT_OK;
    Tokenizer *t = NULL;
    NmtStatus st = tokenizer_deserialize(bytes, n, &t);
    if (st) {
        nmt_error_prefix("%s: %s tokenizer", info->path, side);
        return st;
    }
    *kind = (int)tokenizer_kind(t);
    *vocab = tokenizer_vocab_size(t);
    *spm_type = tokenizer_spm_type(t);
    tokenizer_free(t);
    return NMT_OK;
}

/* Loads what `nmt info` reports: checkpoint_load_weights, which also says
 * what it did not load (the format, whether the moments and the training
 * weights are stored). need_details: the config and tokenizers too (not
 * for --config alone, which prints the stored text). */
static NmtStatus info_load(const char *path, bool need_details, CheckpointInfo *info) {
    memset(info, 0, sizeof *info);
    info->path = path;
    NmtStatus loaded = checkpoint_load_weights(path, &info->ck); /* the loader's own messages */
    if (loaded) return loaded;
    struct stat file;
    if (stat(path, &file) == 0 && S_ISREG(file.st_mode)) info->size_bytes = (uint64_t)file.st_size;
    if (!need_details) return NMT_OK;
    const Checkpoint *ck = &info->ck;
    NmtStatus st = config_load_string(ck->config_json, path, "/", NULL, 0, &info->cfg);
    if (st) { /* a runtime failure of this file (exit 1), not a usage error */
        char *message = nmt_strdup(nmt_error_message());
        st = message ? nmt_fail(NMT_ERR_FORMAT, "%s", message) : nmt_fail_nomem("reading the stored config");
        nmt_free(message);
        return st;
    }
    st = tokenizer_facts(info, ck->src_tok, ck->src_tok_len, "source", &info->src_kind, &info->src_vocab,
                         &info->src_spm_type);
    if (!st)
        st = tokenizer_facts(info, ck->tgt_tok, ck->tgt_tok_len, "target", &info->tgt_kind, &info->tgt_vocab,
                             &info->tgt_spm_type);
    return st;
}

static void info_free(CheckpointInfo *info) {
    checkpoint_free(&info->ck);
    config_free(&info->cfg);
}

/* ---- derived facts, shared by the text and the JSON ------------------------ */

/* A BLEU below 0 is one that was not computed (docs/checkpoint-format.md). */
static double known_bleu(double bleu) { return bleu < 0 ? NAN : bleu; }

/* A higher-is-better score (the state's best_metric, valid_record_score)
 * in train.valid_metric's own units: a perplexity is kept negated. */
static double metric_units(const CheckpointInfo *info, double higher_better) {
    return info->cfg.train.valid_metric == CFG_METRIC_PPL ? -higher_better : higher_better;
}

/* The best scheduled validation's score (the one patience and the rate
 * decay follow) in train.valid_metric's own units; NaN before any. */
static double best_score(const CheckpointInfo *info) {
    const TrainState *s = &info->ck.state;
    return s->best_step < 0 ? NAN : metric_units(info, s->best_metric);
}

/* The validation history's best record in train.valid_metric, scheduled
 * validations and those at a stop alike (the one best.nmt holds), or NULL;
 * its score in the metric's own units. */
static const ValidRecord *history_best(const CheckpointInfo *info, double *score) {
    int metric = info->cfg.train.valid_metric;
    int i = valid_history_best(info->ck.history, info->ck.n_history, metric);
    if (i < 0) return NULL;
    const ValidRecord *r = &info->ck.history[i];
    *score = metric_units(info, valid_record_score(r, metric));
    return r;
}

static const char *tokenizer_name(int kind) { return kind < 0 ? "none" : tokenizer_kind_names[kind]; }

/* Whether PARAMS holds a moving average of the training weights. */
static bool weights_are_average(const CheckpointInfo *info) {
    return info->ck.train_params_stored || info->cfg.train.ema_decay > 0;
}

/* ---- text ------------------------------------------------------------------ */

/* A number in `decimals` places, or "-" when it is not known (NaN). */
static const char *number_text(char buf[32], double v, int decimals) {
    if (isnan(v)) snprintf(buf, 32, "-");
    else if (isfinite(v) && fabs(v) >= 1e6) snprintf(buf, 32, "%.4g", v); /* a diverged perplexity */
    else snprintf(buf, 32, "%.*f", decimals, v);
    return buf;
}

/* Places of each score, as the training log prints them. */
enum { PPL_DECIMALS = 3, SCORE_DECIMALS = 2 };

static int metric_decimals(int metric) { return metric == CFG_METRIC_PPL ? PPL_DECIMALS : SCORE_DECIMALS; }

/* One line of the text: the label in a column, then the fact. */
static void fact(const char *label, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fact(const char *label, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%-19s ", label);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

static void print_model(const CheckpointInfo *info) {
    const ModelConfig *m = &info->cfg.model;
    const AttentionConfig *a = &m->attention;
    fact("emb_dim:", "%d", m->emb_dim);
    fact("hidden:", "%d (decoder); encoder output %d", m->hidden, config_key_size(&info->cfg));
    fact("layers:", "%d encoder, %d decoder%s%s", m->enc_layers, m->dec_layers,
         m->residual ? ", residual connections" : "", m->layer_norm ? ", layer normalisation" : "");
    fact("bidirectional:", "%s", m->bidirectional ? "yes" : "no");
    fact("input_feed:", "%s", m->input_feed ? "yes" : "no");
    if (m->right_to_left) fact("target order:", "right to left (for reranking n-best lists)");
    if (a->style == ATTN_STYLE_NONE)
        fact("attention:", "none");
    else if (a->mode == ATTN_MODE_GLOBAL)
        fact("attention:", "%s, %s, global, %d head%s", attn_style_names[a->style], attn_score_names[a->score],
             a->heads, a->heads == 1 ? "" : "s");
    else
        fact("attention:", "%s, %s, %s (window %d), %d head%s", attn_style_names[a->style],
             attn_score_names[a->score], attn_mode_names[a->mode], a->window, a->heads, a->heads == 1 ? "" : "s");
    fact("tie_embeddings:", "%s", m->tie_embeddings ? "yes" : "no");
    fact("share_embeddings:", "%s", m->share_embeddings ? "yes (source and target)" : "no");
    /* the models' own types (given models may differ from each other) */
    const char *src = tokenizer_name(info->src_kind), *tgt = tokenizer_name(info->tgt_kind);
    const char *src_type = info->src_spm_type ? info->src_spm_type : "", *tgt_type = info->tgt_spm_type ? info->tgt_spm_type : "";
    if (info->src_kind == info->tgt_kind && !strcmp(src_type, tgt_type))
        fact("tokenizer:", "%s%s%s", src, src_type[0] ? " " : "", src_type);
    else
        fact("tokenizer:", "%s%s%s (source), %s%s%s (target)", src, src_type[0] ? " " : "", src_type, tgt,
             tgt_type[0] ? " " : "", tgt_type);
    fact("source vocabulary:", "%d", info->src_vocab);
    fact("target vocabulary:", "%d", info->tgt_vocab);
    fact("parameters:", "%zu in %d tensors", info->ck.n_floats, info->ck.n_tensors);
}

static void print_state(const CheckpointInfo *info) {
    const TrainState *s = &info->ck.state;
    int metric = info->cfg.train.valid_metric;
    char buf[32];
    fact("step:", "%lld", (long long)s->step);
    fact("epoch:", "%lld (from 0: the epoch of the next batch)", (long long)s->epoch);
    fact("batch:", "%lld (from 0: the next batch of that epoch)", (long long)s->batch_index);
    fact("tokens seen:", "%.0f (target tokens)", s->tokens_seen);
    fact("training time:", "%.1f s", s->seconds);
    fact("lr scale:", "%g", s->lr_scale);
    LrSchedule sched = lr_schedule_of(&info->cfg.train);
    char how[96] = "";
    if (sched.schedule == CFG_LR_RSQRT)
        snprintf(how, sizeof how, ", falling as 1/sqrt(t) after update %d", sched.rsqrt_steps);
    if (sched.warmup > 0)
        snprintf(how + strlen(how), sizeof how - strlen(how), ", warmup %d updates", sched.warmup);
    fact("learning rate:", "%g at update %lld (train.lr %g x lr scale %g; %s%s)",
         lr_schedule_rate(&sched, s->step + 1, s->lr_scale), (long long)s->step + 1, sched.lr, s->lr_scale,
         lr_schedule_names[sched.schedule], how);
    fact("valid metric:", "%s (train.valid_metric)", valid_metric_names[metric]);
    if (s->best_step < 0 && !info->ck.n_history)
        fact("best:", "none (no validation yet)");
    else if (s->best_step < 0) /* validations at a stop (train.max_steps, a signal) do not count */
        fact("best:", "none of the scheduled validations yet");
    else
        fact("best:", "step %lld, %s %s", (long long)s->best_step, valid_metric_names[metric],
             number_text(buf, best_score(info), metric_decimals(metric)));
    double top_score;
    const ValidRecord *top = history_best(info, &top_score);
    if (top)
        fact("history best:", "step %lld, %s %s (what the run's best.nmt holds)", (long long)top->step,
             valid_metric_names[metric], number_text(buf, top_score, metric_decimals(metric)));
    fact("validations:", "%d", info->ck.n_history);
}

static void print_history(const CheckpointInfo *info) {
    char ppl[32], bleu[32], chrf[32];
    printf("\nvalidation history ('-': not recorded):\n%10s %12s %8s %8s\n", "step", "ppl", "BLEU", "chrF");
    for (int i = 0; i < info->ck.n_history; i++) {
        const ValidRecord *r = &info->ck.history[i];
        printf("%10lld %12s %8s %8s\n", (long long)r->step, number_text(ppl, r->ppl, PPL_DECIMALS),
               number_text(bleu, known_bleu(r->bleu), SCORE_DECIMALS),
               number_text(chrf, r->chrf, SCORE_DECIMALS));
    }
}

static void print_text(const CheckpointInfo *info, bool history) {
    const Checkpoint *ck = &info->ck;
    fact("file:", "%s", info->path);
    fact("size:", "%llu bytes (%.1f MB)", (unsigned long long)info->size_bytes, info->size_bytes / 1e6);
    fact("format:", "%u", info->ck.format);
    if (weights_are_average(info)) {
        fact("weights:", "moving average of the training weights (train.ema_decay %g)", info->cfg.train.ema_decay);
        fact("training weights:", "%s", info->ck.train_params_stored ? "stored" : "not stored");
    } else {
        fact("weights:", "the training weights");
    }
    fact("optimizer:", "%s, %s", optimizer_names[ck->optimizer],
         info->ck.moments_stored ? "moments stored" : "no moments stored");
    print_model(info);
    print_state(info);
    if (history) print_history(info);
}

/* ---- JSON ------------------------------------------------------------------ */

/* A number, or null when it is not known or not finite (JSON has no NaN). */
static cJSON *json_number(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

static cJSON *json_model(const CheckpointInfo *info) {
    const ModelConfig *m = &info->cfg.model;
    const AttentionConfig *a = &m->attention;
    cJSON *model = cJSON_CreateObject(), *attention = cJSON_CreateObject();
    cJSON_AddNumberToObject(model, "emb_dim", m->emb_dim);
    cJSON_AddNumberToObject(model, "hidden", m->hidden);
    cJSON_AddNumberToObject(model, "encoder_output", config_key_size(&info->cfg));
    cJSON_AddNumberToObject(model, "enc_layers", m->enc_layers);
    cJSON_AddNumberToObject(model, "dec_layers", m->dec_layers);
    cJSON_AddBoolToObject(model, "residual", m->residual);
    cJSON_AddBoolToObject(model, "layer_norm", m->layer_norm);
    cJSON_AddBoolToObject(model, "right_to_left", m->right_to_left);
    cJSON_AddBoolToObject(model, "bidirectional", m->bidirectional);
    cJSON_AddBoolToObject(model, "input_feed", m->input_feed);
    cJSON_AddBoolToObject(model, "tie_embeddings", m->tie_embeddings);
    cJSON_AddBoolToObject(model, "share_embeddings", m->share_embeddings);
    cJSON_AddStringToObject(attention, "style", attn_style_names[a->style]);
    cJSON_AddStringToObject(attention, "score", attn_score_names[a->score]);
    cJSON_AddStringToObject(attention, "mode", attn_mode_names[a->mode]);
    cJSON_AddItemToObject(attention, "window", /* global attention has none */
                          a->mode == ATTN_MODE_GLOBAL ? cJSON_CreateNull() : cJSON_CreateNumber(a->window));
    cJSON_AddNumberToObject(attention, "heads", a->heads);
    cJSON_AddItemToObject(model, "attention", attention);
    return model;
}

static cJSON *json_state(const CheckpointInfo *info) {
    const TrainState *s = &info->ck.state;
    cJSON *state = cJSON_CreateObject();
    cJSON_AddNumberToObject(state, "step", (double)s->step);
    cJSON_AddNumberToObject(state, "epoch", (double)s->epoch);
    cJSON_AddNumberToObject(state, "batch", (double)s->batch_index);
    cJSON_AddNumberToObject(state, "tokens_seen", s->tokens_seen);
    cJSON_AddNumberToObject(state, "seconds", s->seconds);
    cJSON_AddNumberToObject(state, "lr_scale", s->lr_scale);
    LrSchedule sched = lr_schedule_of(&info->cfg.train);
    cJSON_AddStringToObject(state, "lr_schedule", lr_schedule_names[sched.schedule]);
    cJSON_AddNumberToObject(state, "next_lr", lr_schedule_rate(&sched, s->step + 1, s->lr_scale));
    cJSON_AddStringToObject(state, "valid_metric", valid_metric_names[info->cfg.train.valid_metric]);
    cJSON_AddItemToObject(state, "best_step",
                          s->best_step < 0 ? cJSON_CreateNull() : cJSON_CreateNumber((double)s->best_step));
    cJSON_AddItemToObject(state, "best_metric", json_number(best_score(info)));
    double top_score = NAN;
    const ValidRecord *top = history_best(info, &top_score);
    cJSON_AddItemToObject(state, "history_best_step", top ? cJSON_CreateNumber((double)top->step) : cJSON_CreateNull());
    cJSON_AddItemToObject(state, "history_best_metric", json_number(top_score));
    return state;
}

static cJSON *json_history(const CheckpointInfo *info) {
    cJSON *history = cJSON_CreateArray();
    for (int i = 0; i < info->ck.n_history; i++) {
        const ValidRecord *r = &info->ck.history[i];
        cJSON *record = cJSON_CreateObject();
        cJSON_AddNumberToObject(record, "step", (double)r->step);
        cJSON_AddItemToObject(record, "ppl", json_number(r->ppl));
        cJSON_AddItemToObject(record, "bleu", json_number(known_bleu(r->bleu)));
        cJSON_AddItemToObject(record, "chrf", json_number(r->chrf));
        cJSON_AddItemToArray(history, record);
    }
    return history;
}

/* The whole description as one object. cJSON drops an item it cannot
 * allocate, so the caller asks nmt_alloc_failures (cJSON allocates through
 * nmt_malloc) whether it is whole. */
static cJSON *json_info(const CheckpointInfo *info, bool with_config) {
    const Checkpoint *ck = &info->ck;
    cJSON *root = cJSON_CreateObject(), *tokenizer = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "file", info->path);
    cJSON_AddNumberToObject(root, "size_bytes", (double)info->size_bytes);
    cJSON_AddNumberToObject(root, "format", info->ck.format);
    cJSON_AddStringToObject(root, "weights", weights_are_average(info) ? "moving_average" : "training");
    cJSON_AddNumberToObject(root, "ema_decay", info->cfg.train.ema_decay);
    cJSON_AddBoolToObject(root, "training_weights_stored", info->ck.train_params_stored);
    cJSON_AddStringToObject(root, "optimizer", optimizer_names[ck->optimizer]);
    cJSON_AddBoolToObject(root, "moments_stored", info->ck.moments_stored);
    cJSON_AddItemToObject(root, "model", json_model(info));
    cJSON_AddStringToObject(tokenizer, "src_kind", tokenizer_name(info->src_kind));
    cJSON_AddStringToObject(tokenizer, "tgt_kind", tokenizer_name(info->tgt_kind));
    bool spm = info->src_kind == TOKENIZER_SPM || info->tgt_kind == TOKENIZER_SPM;
    const char *spm_type = spm_model_type_names[info->cfg.data.spm_model_type];
    cJSON_AddItemToObject(tokenizer, "spm_model_type", spm ? cJSON_CreateString(spm_type) : cJSON_CreateNull());
    cJSON_AddNumberToObject(tokenizer, "src_vocab_size", info->src_vocab);
    cJSON_AddNumberToObject(tokenizer, "tgt_vocab_size", info->tgt_vocab);
    cJSON_AddItemToObject(root, "tokenizer", tokenizer);
    cJSON_AddNumberToObject(root, "parameters", (double)ck->n_floats);
    cJSON_AddNumberToObject(root, "tensors", ck->n_tensors);
    cJSON_AddItemToObject(root, "state", json_state(info));
    cJSON_AddNumberToObject(root, "validations", ck->n_history);
    cJSON_AddItemToObject(root, "history", json_history(info));
    if (with_config) cJSON_AddItemToObject(root, "config", cJSON_Parse(ck->config_json));
    return root;
}

static NmtStatus print_json(const CheckpointInfo *info, bool with_config) {
    long failures = nmt_alloc_failures();
    cJSON *root = json_info(info, with_config);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    bool whole = text && nmt_alloc_failures() == failures;
    if (whole) printf("%s\n", text);
    cJSON_free(text);
    return whole ? NMT_OK : nmt_fail_nomem("writing the JSON description");
}

/* ---- the command ------------------------------------------------------------ */

/* The stored config text, as stored, and a newline if it has none. */
static void print_config(const CheckpointInfo *info) {
    const char *text = info->ck.config_json;
    size_t n = strlen(text);
    fputs(text, stdout);
    if (!n || text[n - 1] != '\n') putchar('\n');
}

/* "nmt info: " and the message on stderr, then the usage: exit code 2. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("nmt info: ", stderr);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n%s", info_usage);
    va_end(ap);
    return NMT_EXIT_USAGE;
}

/* --tokenizers DIR: the checkpoint's tokenizers as files: SentencePiece
 * models as DIR/src.model and DIR/tgt.model (spm_encode and spm_decode
 * take them, and so do data.spm_src_model and data.spm_tgt_model), word
 * vocabularies as DIR/src.vocab and DIR/tgt.vocab; one line per file. */
static NmtStatus export_tokenizers(const CheckpointInfo *info, const char *dir) {
    NmtStatus st = file_make_dirs(dir);
    const uint8_t *bytes[2] = {info->ck.src_tok, info->ck.tgt_tok};
    size_t len[2] = {info->ck.src_tok_len, info->ck.tgt_tok_len};
    const char *side[2] = {"src", "tgt"}, *ext[2] = {"model", "vocab"};
    /* no file is written over another */
    for (int k = 0; k < 4 && !st; k++) {
        char *out = nmt_asprintf("%s/%s.%s", dir, side[k / 2], ext[k % 2]);
        struct stat there;
        if (!out) st = nmt_fail_nomem("writing the tokenizers");
        else if (lstat(out, &there) == 0)
            st = nmt_fail(NMT_ERR_IO, "%s: exists; nmt info --tokenizers writes into a folder without "
                          "src.model, tgt.model, src.vocab and tgt.vocab", out);
        nmt_free(out);
    }
    for (int k = 0; k < 2 && !st; k++) {
        if (!len[k]) {
            st = nmt_fail(NMT_ERR_FORMAT, "%s: holds no %s tokenizer", info->path, k ? "target" : "source");
            break;
        }
        Tokenizer *t = NULL;
        st = tokenizer_deserialize(bytes[k], len[k], &t);
        if (st) {
            nmt_error_prefix("%s: %s tokenizer", info->path, k ? "target" : "source");
            break;
        }
        bool spm = tokenizer_kind(t) == TOKENIZER_SPM;
        char *out = nmt_asprintf("%s/%s.%s", dir, side[k], spm ? "model" : "vocab");
        st = out ? tokenizer_save(t, out) : nmt_fail_nomem("writing the tokenizers");
        if (!st && spm)
            printf("%s: SentencePiece %s model, %d pieces\n", out, tokenizer_spm_type(t), tokenizer_vocab_size(t));
        else if (!st)
            printf("%s: word vocabulary, %d entries\n", out, tokenizer_vocab_size(t));
        nmt_free(out);
        tokenizer_free(t);
    }
    return st;
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL, *tokenizers_dir = NULL;
    bool json = false, config = false, history = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(info_usage, stdout);
            return NMT_EXIT_OK;
        }
        if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--config")) config = true;
        else if (!strcmp(a, "--history")) history = true;
        else if (!strcmp(a, "--tokenizers")) {
            if (i + 1 >= argc || !argv[i + 1][0]) return usage_error("--tokenizers needs a folder");
            tokenizers_dir = argv[++i];
        }
        else if (a[0] == '-' && a[1]) return usage_error("unknown option '%s'", a);
        else if (path) return usage_error("one checkpoint at a time ('%s' and '%s' given)", path, a);
        else path = a;
    }
    if (!path) return usage_error("no checkpoint given");
    if (config && history && !json)
        return usage_error("--config prints the stored config alone; --json holds it with the history");
    if (tokenizers_dir && (json || config || history))
        return usage_error("--tokenizers writes the tokenizers alone; give --json, --config and --history without it");
    CheckpointInfo info;
    NmtStatus st = info_load(path, json || !config, &info);
    if (!st) {
        if (tokenizers_dir) st = export_tokenizers(&info, tokenizers_dir);
        else if (json) st = print_json(&info, config);
        else if (config) print_config(&info);
        else print_text(&info, history);
    }
    info_free(&info);
    return cli_report("info", st);
}
