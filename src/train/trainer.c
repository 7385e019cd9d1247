/* trainer.c: the training loop of `nmt train` (trainer.h). */
#include "train/trainer.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "backend_select.h"
#include "data/batch.h"
#include "data/bleu.h"
#include "data/chrf.h"
#include "data/corpus.h"
#include "data/prepare.h"
#include "data/rng.h"
#include "data/given_tokenizers.h"
#include "data/subword_sampling.h"
#include "data/train_mix.h"
#include "fileio.h"
#include "model/seq2seq.h"
#include "train/checkpoint.h"
#include "train/init_from.h"
#include "train/optimizer.h"
#include "train/run_dir.h"
#include "train/train_csv.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

typedef struct {
    const Config *cfg;
    const TrainOptions *opt;
    PreparedData data;
    Backend *be;
    Seq2Seq *model;
    Optimizer *optim;
    Batcher *train_batches, *valid_batches;
    SubwordSampler *sampler; /* data.spm_sample_alpha > 0: each epoch's segmentation, else NULL */
    SubwordSampler *extra_sampler[CFG_MAX_LIST]; /* ... of each data.extra_src corpus's pairs */
    TrainMix *mix; /* data.extra_src or data.train_upsample > 1: the corpora mixed, else NULL */
    TrainMix *epoch_mix; /* ... with subword sampling: each epoch's segmentations mixed */
    bool mix_varies;     /* a data.extra_weight with a fraction: epochs hold different pairs
                            (without subword sampling, `mix` is rebuilt for each epoch) */
    int64_t mix_epoch;   /* the epoch whose pairs `mix` holds (setup builds epoch 0's) */
    double extra_weight[CFG_MAX_LIST]; /* data.extra_weight of each corpus */
    /* the pairs of epoch 0 at the best segmentation, which the batcher was
     * made from: data.train (with its links), or the mix of the corpora */
    const Dataset *train_set;
    const GuidedAlignments *train_set_align; /* NULL without guided alignment */
    TrainState st;
    ValidRecord *history;
    int n_history, cap_history;
    char **valid_refs; /* (valid pairs) reference text of each validation pair */
    FILE *csv;
    int dir_lock; /* train.save_dir's lock (run_dir_lock), or -1 */
    char *config_json;
    size_t n_params;
    double window_loss, window_tokens, window_src, window_tgt, window_norm;
    double window_align; /* guided alignment: the weighted alignment loss summed */
    bool guided;         /* guided alignment is on (data.train_align, weight > 0) */
    int window_steps;
    double window_start;
    int max_decode_T;
    bool tty;
    /* 1-based epoch of the batch trained last, for the log line and train.csv.
     * st.epoch is where the next batch comes from (what resuming needs): past
     * the end of an epoch it is already the next epoch. */
    int64_t shown_epoch;
    int64_t test_poison_step; /* test hook (test_poison_after), 0: none */
    int abandoned_batches; /* batches of an update a signal cut short (run_update_batches) */
    /* (n_params) on the backend: the weights' moving average (train.ema_decay
     * > 0), else NULL. Validation and the checkpoints' weights are this; the
     * model's own parameters are the training weights. */
    float *ema;
    /* --resume: save_dir/last.nmt, loaded and its config checked before
     * the data are prepared (a changed data key is refused before its
     * cache is rebuilt); resume() takes the rest from it and frees it. */
    Checkpoint resume_ck;
    int resume_old_metric; /* the checkpoint's train.valid_metric */
} Trainer;

/* What a validation measured: perplexity, and BLEU and chrF of the decoded
 * validation set. */
typedef struct {
    double ppl, bleu, chrf;
} ValidScores;

/* train.valid_metric of a validation, higher is better (valid_record_score). */
static double valid_metric_value(int metric, const ValidScores *v) {
    return valid_record_score(&(ValidRecord){0, v->ppl, v->bleu, v->chrf}, metric);
}

/* TEST HOOK, for tests/test_train_e2e.sh and test_accumulation.sh only:
 * NMT_TEST_POISON_STEP=N makes every weight NaN after step N's update (as a
 * diverging run would), to check that such a model is never saved and that
 * every later loss is refused. Unset or 0: no effect. */
static void test_poison_after(Trainer *tr, int64_t step) {
    if (step != tr->test_poison_step) return;
    float *nan_values = nmt_malloc(tr->n_params * sizeof(float));
    if (!nan_values) return;
    for (size_t i = 0; i < tr->n_params; i++) nan_values[i] = NAN;
    tr->be->upload(tr->be, seq2seq_params(tr->model), nan_values, tr->n_params * sizeof(float));
    nmt_free(nan_values);
}

/* TEST HOOK, for tests/test_valid_metric.sh only: NMT_TEST_VALID_BLEU
 * "STEP:BLEU,STEP:BLEU,..." puts those BLEU scores in place of what the
 * validations at those steps measured, to steer which validation is the
 * best (real scores of a tiny run cannot be chosen). Unset: no effect. */
static void test_valid_bleu(int64_t step, double *bleu) {
    const char *spec = getenv("NMT_TEST_VALID_BLEU");
    for (const char *p = spec; p && *p;) {
        char *end;
        long long at = strtoll(p, &end, 10);
        if (*end != ':') return;
        double value = strtod(end + 1, &end);
        if (at == step) *bleu = value;
        p = *end == ',' ? end + 1 : "";
    }
}

/* Updates that n batches make, accum_batches to an update (an epoch's last
 * update takes the batches left). */
static int64_t updates_for_batches(int64_t n, int accum_batches) {
    return n > 0 ? (n + accum_batches - 1) / accum_batches : 0;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *save_path(const Trainer *tr, const char *name) {
    return nmt_asprintf("%s/%s", tr->cfg->train.save_dir, name);
}

/* ---- checkpoints ------------------------------------------------------- */

/* NMT_OK while the device works; else the failure (backend_error): the run
 * stops, writing nothing more. Every save checks first, after its
 * downloads, so every checkpoint on disk holds a state from before the
 * failure. The printf-style `fmt` names the moment ("step 12", "saving
 * last.nmt"); it is formatted only on a failure. */
static NmtStatus device_failed(const Trainer *tr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static NmtStatus device_failed(const Trainer *tr, const char *fmt, ...) {
    const char *e = backend_error(tr->be);
    if (!e) return NMT_OK;
    char when[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(when, sizeof when, fmt, ap);
    va_end(ap);
    return nmt_fail(NMT_ERR_RUNTIME,
                    "%s: the %s device failed: %s; stopped without saving (the checkpoints "
                    "already in %s are intact; continue with --resume)",
                    when, tr->be->name, e, tr->cfg->train.save_dir);
}

/* The host address of n floats of backend memory for writing a checkpoint:
 * the memory itself on a host-memory backend, else a copy into *staging
 * (allocated here, freed by the caller). NULL when out of memory. */
static const float *host_view(Backend *be, const float *src, size_t n, float **staging) {
    *staging = NULL;
    if (be->host_memory) return src;
    *staging = nmt_malloc(n * sizeof(float));
    if (*staging) be->download(be, *staging, src, n * sizeof(float));
    return *staging;
}

/* Writes save_dir/name. The parameters and Adam moments are read where they
 * are on the CPU; from a GPU they are copied to the host for the write only,
 * so training holds no host copy of them between checkpoints. */
static NmtStatus save_checkpoint(Trainer *tr, const char *name) {
    Backend *be = tr->be;
    float *staged[4] = {NULL, NULL, NULL, NULL};
    const ParamLayout *layout = seq2seq_layout(tr->model);
    Checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.config_json = tr->config_json;
    NmtStatus st = tokenizer_serialize(tr->data.src_tok, &ck.src_tok, &ck.src_tok_len);
    if (!st) st = tokenizer_serialize(tr->data.tgt_tok, &ck.tgt_tok, &ck.tgt_tok_len);
    CheckpointTensor *tensors = nmt_calloc((size_t)layout->n, sizeof *tensors);
    if (!st && !tensors) st = nmt_fail_nomem("saving a checkpoint");
    if (!st) {
        for (int i = 0; i < layout->n; i++) {
            snprintf(tensors[i].name, sizeof tensors[i].name, "%s", layout->info[i].name);
            tensors[i].count = layout->info[i].count;
            tensors[i].rows = layout->info[i].rows;
            tensors[i].cols = layout->info[i].cols;
        }
        ck.n_tensors = layout->n;
        ck.tensors = tensors;
        ck.n_floats = tr->n_params;
        /* with a moving average, it is the model; training goes on from train_params */
        float *params = seq2seq_params(tr->model);
        ck.params = (float *)host_view(be, tr->ema ? tr->ema : params, tr->n_params, &staged[0]);
        if (tr->ema) ck.train_params = (float *)host_view(be, params, tr->n_params, &staged[3]);
        ck.optimizer = tr->cfg->train.optimizer;
        if (tr->optim->m) {
            ck.adam_m = (float *)host_view(be, tr->optim->m, tr->n_params, &staged[1]);
            ck.adam_v = (float *)host_view(be, tr->optim->v, tr->n_params, &staged[2]);
        }
        if (!ck.params || (tr->ema && !ck.train_params) || (tr->optim->m && (!ck.adam_m || !ck.adam_v)))
            st = nmt_fail_nomem("copying the parameters to the host for a checkpoint");
    }
    /* after a device error the downloads above read void data */
    if (!st) st = device_failed(tr, "saving %s", name);
    /* a diverged model is never saved: the files already there stay the
     * run's last good state (what the stop messages promise) */
    if (!st && checkpoint_check_finite(&ck, name) != NMT_OK) {
        nmt_error_prefix("step %lld: not saved", (long long)tr->st.step);
        nmt_error_suffix("; the checkpoints already in %s are from earlier steps (a smaller train.lr or "
                         "train.clip_norm may keep the run finite)", tr->cfg->train.save_dir);
        st = NMT_ERR_RUNTIME;
    }
    if (!st) {
        ck.state = tr->st;
        ck.n_history = tr->n_history;
        ck.history = tr->history;
        char *path = save_path(tr, name);
        st = path ? checkpoint_save(&ck, path) : nmt_fail_nomem("saving a checkpoint");
        nmt_free(path);
    }
    for (int i = 0; i < 4; i++) nmt_free(staged[i]);
    nmt_free(tensors);
    nmt_free(ck.src_tok);
    nmt_free(ck.tgt_tok);
    return st;
}

/* The weights of a resumed run: training goes on from the checkpoint's
 * training weights (its PARAMS when it kept no moving average), and the
 * moving average, when train.ema_decay asks for one, from its PARAMS (from
 * the training weights when it kept none). */
static void resume_weights(Trainer *tr, const Checkpoint *ck, const char *path) {
    Backend *be = tr->be;
    size_t bytes = tr->n_params * sizeof(float);
    be->upload(be, seq2seq_params(tr->model), ck->train_params ? ck->train_params : ck->params, bytes);
    if (tr->ema) {
        be->upload(be, tr->ema, ck->params, bytes);
        if (!ck->train_params && !tr->opt->quiet)
            nmt_log_info("train: %s kept no moving average of the weights; the average of train.ema_decay "
                         "starts from its weights", path);
    } else if (ck->train_params) {
        nmt_log_warn("train: %s holds a moving average of the weights (train.ema_decay); with "
                     "train.ema_decay 0 the run goes on without it from the training weights", path);
    }
}


/* The corpora of the mix: `train` (with `train_align`) and `extra`, at
 * the run's upsampling, weights and seed. */
static TrainMixParts mix_parts(const Trainer *tr, const Dataset *train, const GuidedAlignments *train_align,
                               const Dataset *const *extra) {
    TrainMixParts p = {train, train_align, tr->cfg->data.train_upsample, extra, tr->extra_weight,
                       tr->data.n_extra, (uint64_t)tr->cfg->train.seed};
    return p;
}

/* Test hook: with NMT_TEST_EPOCH_LINES=FILE, each epoch's pairs as the
 * batcher takes them are appended to FILE, a line "epoch,index,line" per
 * pair (the line of its own corpus), so a test can see what an epoch's
 * data.extra_weight share held. */
static void test_record_epoch(int64_t epoch, const Dataset *d) {
    const char *path = getenv("NMT_TEST_EPOCH_LINES");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    for (int64_t i = 0; i < d->n_pairs; i++)
        fprintf(f, "%lld,%lld,%lld\n", (long long)epoch, (long long)i, (long long)d->line_no[i]);
    fclose(f);
}

/* The batcher takes `epoch`'s own pairs (before any batch of that epoch is
 * planned or taken): with subword sampling the epoch's segmentation of the
 * training pairs, under guided alignment with its own token links; with
 * a data.extra_weight that has a fraction, the epoch's share of those
 * corpora (train_mix.h). Nothing to do without either.
 * NMT_STOPPED when a signal came during the draw (it does not wait for the
 * draw's end): the batcher's dataset is then unusable, so the caller stops
 * training at once. */
static NmtStatus use_epoch_pairs(Trainer *tr, int64_t epoch) {
    if (!tr->sampler && !tr->mix_varies) return NMT_OK;
    if (!tr->sampler && tr->mix_epoch == epoch) {
        /* without sampling an epoch's mix depends on the epoch alone, and
         * the batcher was made from (or last given) this one: setup's
         * epoch 0, which a fresh start or a resume in epoch 1 asks for
         * again */
        test_record_epoch(epoch, tr->train_set);
        return NMT_OK;
    }
    const Dataset *d = tr->data.train, *extra[CFG_MAX_LIST];
    const GuidedAlignments *g = tr->guided ? tr->data.train_align : NULL;
    for (int k = 0; k < tr->data.n_extra; k++) extra[k] = tr->data.extra[k];
    SubwordEpochStats es = {0}, xs;
    NmtStatus st = NMT_OK;
    if (tr->sampler) {
        st = subword_sampler_epoch(tr->sampler, epoch, &d, &es);
        if (!st && tr->guided) g = subword_sampler_alignments(tr->sampler);
    }
    for (int k = 0; !st && tr->sampler && k < tr->data.n_extra; k++) {
        st = subword_sampler_epoch(tr->extra_sampler[k], epoch, &extra[k], &xs);
        if (!st) { /* the log line counts every corpus */
            es.src_tokens += xs.src_tokens, es.tgt_tokens += xs.tgt_tokens;
            es.best_src_tokens += xs.best_src_tokens, es.best_tgt_tokens += xs.best_tgt_tokens;
            es.kept_best += xs.kept_best, es.seconds += xs.seconds;
        }
    }
    TrainMix *mix = tr->sampler ? tr->epoch_mix : tr->mix;
    if (!st && mix) {
        TrainMixParts parts = mix_parts(tr, d, g, extra);
        st = train_mix_build(mix, &parts, epoch, &d, &g);
        if (!st && !tr->sampler) tr->mix_epoch = epoch;
        if (!st && g) { /* the links of the mix, copies included */
            es.links = g->offset[g->n_pairs];
            es.best_links = tr->train_set_align->offset[tr->train_set_align->n_pairs];
        }
    }
    if (!st) st = batcher_set_dataset(tr->train_batches, d, g);
    if (!st) test_record_epoch(epoch, d);
    if (!st && !tr->opt->quiet && tr->sampler) {
        const DataConfig *dc = &tr->cfg->data;
        nmt_log_info("train: epoch %lld: subword sampling (data.spm_sample_alpha %g, %s): %.3fx the source and "
                     "%.3fx the target tokens of the best segmentation, %lld sides kept it (a draw outside "
                     "the corpus's length range), %.2f s",
                     (long long)epoch + 1, dc->spm_sample_alpha, sample_side_names[dc->spm_sample_sides],
                     (double)es.src_tokens / (double)es.best_src_tokens,
                     (double)es.tgt_tokens / (double)es.best_tgt_tokens, (long long)es.kept_best, es.seconds);
        if (tr->guided)
            nmt_log_info("train: epoch %lld: guided alignment on the sampled segmentation: %lld token links, "
                         "%.3fx the best segmentation's", (long long)epoch + 1, (long long)es.links,
                         (double)es.links / (double)(es.best_links ? es.best_links : 1));
    }
    return st;
}

/* The best score in `metric` of the validation history, scheduled
 * validations and those at a stop alike (valid_history_best): false when
 * no record has one. A validation saves best.nmt only when it beats this,
 * so best.nmt keeps the best validation's weights even when a stop's
 * validation beat the scheduled ones. */
static bool history_best(const Trainer *tr, int metric, double *best) {
    int i = valid_history_best(tr->history, tr->n_history, metric);
    if (i >= 0) *best = valid_record_score(&tr->history[i], metric);
    return i >= 0;
}

/* train.valid_metric changed at a resume (a schedule key): the best so far
 * and the validations since it are found again in the new metric from the
 * validation history (perplexity, BLEU and, since checkpoint format 3,
 * chrF); records without a score in it are skipped, and when none has
 * one, the next validation is the first best. */
static void rebase_best(Trainer *tr, int old_metric) {
    int metric = tr->cfg->train.valid_metric;
    if (metric == old_metric) return;
    tr->st.best_step = -1;
    tr->st.best_metric = 0;
    tr->st.evals_since_best = 0;
    for (int i = 0; i < tr->n_history; i++) {
        const ValidRecord *h = &tr->history[i];
        double m = valid_record_score(h, metric);
        if (isnan(m)) continue;
        if (tr->st.best_step < 0 || m > tr->st.best_metric) {
            tr->st.best_metric = m;
            tr->st.best_step = h->step;
            tr->st.evals_since_best = 0;
        } else {
            tr->st.evals_since_best++;
        }
    }
    if (tr->opt->quiet) return;
    if (tr->st.best_step >= 0)
        nmt_log_info("train: train.valid_metric is %s now (it was %s): in it the best so far is step %lld's, "
                     "%lld validations ago (from the validation history)",
                     valid_metric_names[metric], valid_metric_names[old_metric], (long long)tr->st.best_step,
                     (long long)tr->st.evals_since_best);
    else
        nmt_log_info("train: train.valid_metric is %s now (it was %s): the validation history has no %s%s, so "
                     "the next validation is the best so far",
                     valid_metric_names[metric], valid_metric_names[old_metric],
                     metric == CFG_METRIC_CHRF ? "chrF" : "scores",
                     metric == CFG_METRIC_CHRF && tr->n_history ? " (its checkpoint came from an nmt before "
                                                                  "checkpoint format 3)" : "");
}

/* --resume, before the data are prepared: loads save_dir/last.nmt into
 * tr->resume_ck and refuses it when a key other than the schedule keys
 * differs from the config (so that a changed corpus, alignment file or
 * tokenizer setting is refused before prepare rebuilds the cache). */
static NmtStatus load_resume_checkpoint(Trainer *tr) {
    if (!tr->opt->resume) return NMT_OK;
    char *path = save_path(tr, "last.nmt");
    if (!path) return nmt_fail_nomem("resuming");
    Checkpoint *ck = &tr->resume_ck;
    NmtStatus st = checkpoint_load(path, ck);
    if (!st) st = checkpoint_check_finite(ck, path);
    Config old;
    tr->resume_old_metric = tr->cfg->train.valid_metric;
    if (!st) st = config_load_string(ck->config_json, path, "/", NULL, 0, &old);
    if (!st) {
        tr->resume_old_metric = old.train.valid_metric;
        const char *key = config_first_fixed_difference(&old, tr->cfg);
        if (key)
            st = nmt_fail(NMT_ERR_CONFIG, "%s: cannot resume: %s differs from the checkpoint's "
                          "(only schedule keys may change on resume)", key, key);
        char *changes = st ? NULL : config_schedule_changes(&old, tr->cfg);
        if (!st && !changes) st = nmt_fail_nomem("resuming");
        if (changes && changes[0] && !tr->opt->quiet)
            nmt_log_info("train: resuming with schedule keys changed since the checkpoint: %s", changes);
        nmt_free(changes);
        config_free(&old);
    }
    nmt_free(path);
    return st;
}

/* Restores the run from tr->resume_ck (load_resume_checkpoint); refuses a
 * checkpoint whose tokenizers or parameter layout differ from the model's. */
static NmtStatus resume(Trainer *tr) {
    char *path = save_path(tr, "last.nmt");
    if (!path) return nmt_fail_nomem("resuming");
    Checkpoint ck = tr->resume_ck;
    memset(&tr->resume_ck, 0, sizeof tr->resume_ck);
    int old_metric = tr->resume_old_metric;
    int same = 1;
    /* the tokenizers come from the corpus, or from given model files */
    int given = given_tokenizers(tr->cfg);
    NmtStatus st = tokenizer_same_as_serialized(tr->data.src_tok, ck.src_tok, ck.src_tok_len, &same);
    if (!st && !same)
        st = nmt_fail(NMT_ERR_CONFIG, "%s: cannot resume: the source tokenizer differs from the checkpoint's (%s)",
                      given ? "data.spm_src_model" : "data.train_src",
                      given ? "the model file changed" : "the corpus or its cache changed");
    if (!st) st = tokenizer_same_as_serialized(tr->data.tgt_tok, ck.tgt_tok, ck.tgt_tok_len, &same);
    if (!st && !same)
        st = nmt_fail(NMT_ERR_CONFIG, "%s: cannot resume: the target tokenizer differs from the checkpoint's (%s)",
                      given ? "data.spm_tgt_model" : "data.train_tgt",
                      given ? "the model file changed" : "the corpus or its cache changed");
    const ParamLayout *layout = seq2seq_layout(tr->model);
    if (!st && (ck.n_floats != tr->n_params || ck.n_tensors != layout->n))
        st = nmt_fail(NMT_ERR_FORMAT, "%s: parameter layout differs from the model's", path);
    for (int i = 0; !st && i < layout->n; i++)
        if (strcmp(ck.tensors[i].name, layout->info[i].name))
            st = nmt_fail(NMT_ERR_FORMAT, "%s: tensor %d is %s, the model expects %s", path, i,
                          ck.tensors[i].name, layout->info[i].name);
    if (!st) {
        Backend *be = tr->be;
        resume_weights(tr, &ck, path);
        if (tr->optim->m && ck.adam_m) {
            be->upload(be, tr->optim->m, ck.adam_m, tr->n_params * sizeof(float));
            be->upload(be, tr->optim->v, ck.adam_v, tr->n_params * sizeof(float));
        }
        tr->st = ck.state;
        if (ck.n_history > tr->cap_history) {
            ValidRecord *h = nmt_realloc(tr->history, (size_t)ck.n_history * sizeof *h);
            if (!h) st = nmt_fail_nomem("resuming");
            else tr->history = h, tr->cap_history = ck.n_history;
        }
        if (!st) {
            if (ck.n_history) memcpy(tr->history, ck.history, (size_t)ck.n_history * sizeof *ck.history);
            tr->n_history = ck.n_history;
            rebase_best(tr, old_metric);
            BatchPosition pos = {tr->st.epoch, tr->st.batch_index};
            st = use_epoch_pairs(tr, pos.epoch);
            if (!st) st = batcher_seek(tr->train_batches, pos);
        }
    }
    if (!st && !tr->opt->quiet)
        nmt_log_info("train: resumed from %s at step %lld (epoch %lld, batch %lld)", path,
                     (long long)tr->st.step, (long long)tr->st.epoch + 1, (long long)tr->st.batch_index);
    checkpoint_free(&ck);
    nmt_free(path);
    return st;
}

/* ---- validation -------------------------------------------------------- */

/* Reads the reference line of every validation pair (by corpus line). */
static NmtStatus load_valid_refs(Trainer *tr) {
    const Dataset *d = tr->data.valid;
    tr->valid_refs = nmt_calloc((size_t)d->n_pairs, sizeof *tr->valid_refs);
    if (!tr->valid_refs) return nmt_fail_nomem("reading the validation references");
    LineReader *r;
    NmtStatus st = line_reader_open(tr->cfg->data.valid_tgt, &r);
    int64_t next = 0;
    while (!st && next < d->n_pairs) {
        const char *line;
        size_t len;
        int got = 0;
        st = line_reader_next(r, &line, &len, &got);
        if (st || !got) break;
        if (line_reader_line_no(r) == d->line_no[next]) {
            tr->valid_refs[next] = nmt_strndup(line, len);
            if (!tr->valid_refs[next++]) st = nmt_fail_nomem("reading the validation references");
        }
    }
    line_reader_close(r);
    if (!st && next < d->n_pairs)
        st = nmt_fail(NMT_ERR_FORMAT, "%s: shorter than when the cache was built", tr->cfg->data.valid_tgt);
    return st;
}

/* Perplexity, and BLEU and chrF of the decoded validation set (decode.beam;
 * greedy when 1), through the same BLEU and chrF code as `nmt eval`. */
static NmtStatus validate(Trainer *tr, ValidScores *scores_out) {
    const Config *cfg = tr->cfg;
    double nll = 0;
    int64_t tokens = 0;
    BleuOptions bopt;
    bleu_options_default(&bopt);
    BleuStats stats;
    bleu_stats_clear(&stats);
    ChrfOptions copt = {0};
    ChrfStats chrf;
    chrf_stats_clear(&chrf);
    BatchLimits lim = batcher_limits(tr->valid_batches);
    int stride = tr->max_decode_T;
    int32_t *out = nmt_malloc((size_t)lim.max_B * stride * sizeof(int32_t));
    int *out_len = nmt_malloc((size_t)lim.max_B * sizeof(int)), *counts = nmt_malloc((size_t)lim.max_B * sizeof(int));
    double *scores = nmt_malloc((size_t)lim.max_B * sizeof(double));
    NmtStatus st = out && out_len && counts && scores ? NMT_OK : nmt_fail_nomem("validating");
    BatchPosition start = {0, 0};
    if (!st) st = batcher_seek(tr->valid_batches, start);
    while (!st) {
        Batch b;
        int got = 0;
        batcher_next(tr->valid_batches, &b, &got);
        if (!got) break;
        ModelLoss loss;
        seq2seq_forward(tr->model, &b, false, 0, &loss);
        nll += loss.nll_sum;
        tokens += loss.n_tokens;
        if (cfg->decode.beam > 1) {
            BeamSpec spec = {cfg->decode.beam, 1, cfg->decode.length_penalty, cfg->decode.coverage_penalty,
                             cfg->decode.max_len_a, cfg->decode.max_len_b};
            st = seq2seq_beam_search(tr->model, &b, &spec, out, stride, out_len, scores, counts, NULL);
            if (st) break;
        } else {
            st = seq2seq_greedy(tr->model, &b, cfg->decode.max_len_a, cfg->decode.max_len_b, out, stride, out_len);
            if (st) break;
        }
        for (int i = 0; !st && i < b.B; i++) {
            char *hyp = NULL;
            /* a search that kept no hypothesis (every score NaN) output nothing */
            int len = cfg->decode.beam > 1 && counts[i] == 0 ? 0 : out_len[i];
            if (cfg->model.right_to_left) batch_reverse_ids(out + (size_t)i * stride, len); /* to text order */
            st = tokenizer_decode(tr->data.tgt_tok, out + (size_t)i * stride, len, &hyp);
            const char *ref = tr->valid_refs[b.pair_index[i]];
            if (!st) st = bleu_add_sentence(&stats, hyp, &ref, 1, &bopt);
            if (!st) st = chrf_add_sentence(&chrf, hyp, &ref, 1, &copt);
            nmt_free(hyp);
        }
    }
    nmt_free(out);
    nmt_free(out_len);
    nmt_free(counts);
    nmt_free(scores);
    if (st) return st;
    /* capped as the training log's is (exp(700) ~ 1e304, not inf) */
    double mean = tokens ? nll / tokens : NAN;
    scores_out->ppl = isnan(mean) ? NAN : exp(fmin(mean, 700));
    BleuResult r;
    bleu_score(&stats, &r);
    scores_out->bleu = r.score;
    scores_out->chrf = chrf_score(&chrf);
    return NMT_OK;
}

/* Validates the weights the checkpoints hold: the moving average when
 * there is one, put in the model's place for the time of it (the training
 * weights wait in the gradient buffer, free between two updates). */
static NmtStatus validate_weights(Trainer *tr, ValidScores *out) {
    if (!tr->ema) return validate(tr, out);
    Backend *be = tr->be;
    float *params = seq2seq_params(tr->model), *spare = seq2seq_grads(tr->model);
    size_t bytes = tr->n_params * sizeof(float);
    be->copy(be, spare, params, bytes);
    be->copy(be, params, tr->ema, bytes);
    NmtStatus st = validate(tr, out);
    be->copy(be, params, spare, bytes);
    return st;
}

/* ---- logging ----------------------------------------------------------- */

static void csv_train_row(Trainer *tr, double loss, double align, double lr, double norm, double src_s,
                          double tgt_s) {
    TrainCsvRow row;
    train_csv_row_init(&row);
    row.kind = TRAIN_CSV_TRAIN;
    row.step = tr->st.step;
    row.epoch = (double)tr->shown_epoch;
    row.loss = loss;
    row.ppl = exp(fmin(loss, 700));
    row.lr = lr;
    row.grad_norm = norm;
    row.src_tok_s = src_s;
    row.tgt_tok_s = tgt_s;
    row.align_loss = align;
    train_csv_append(tr->csv, &row);
}

static void csv_valid_row(Trainer *tr, const ValidScores *v) {
    TrainCsvRow row;
    train_csv_row_init(&row);
    row.kind = TRAIN_CSV_VALID;
    row.step = tr->st.step;
    row.epoch = (double)tr->shown_epoch;
    row.valid_ppl = v->ppl;
    row.valid_bleu = v->bleu;
    row.valid_chrf = v->chrf;
    train_csv_append(tr->csv, &row);
}

/* A perplexity for the log: `decimals` places below a million, else in
 * scientific notation (a diverged run's exp(700) would be 300 digits). */
static const char *ppl_text(char buf[32], double ppl, int decimals) {
    if (isfinite(ppl) && ppl >= 1e6) snprintf(buf, 32, "%.4g", ppl);
    else snprintf(buf, 32, "%.*f", decimals, ppl);
    return buf;
}

static void log_progress(Trainer *tr, double lr, bool final) {
    if (tr->window_steps == 0) return;
    double elapsed = now_seconds() - tr->window_start;
    double loss = tr->window_loss / fmax(tr->window_tokens, 1);
    double align = tr->guided ? tr->window_align / fmax(tr->window_tokens, 1) : TRAIN_CSV_EMPTY;
    double src_s = tr->window_src / fmax(elapsed, 1e-9), tgt_s = tr->window_tgt / fmax(elapsed, 1e-9);
    double norm = tr->window_norm / tr->window_steps;
    csv_train_row(tr, loss, align, lr, norm, src_s, tgt_s);
    if (!tr->opt->quiet) {
        const TrainConfig *tc = &tr->cfg->train;
        char eta[64] = "";
        /* steps left: to max_steps, or to the end of the last epoch, whichever comes first */
        int64_t per_epoch = batcher_batches_in_epoch(tr->train_batches);
        int k = tc->accum_batches;
        double left_steps = (double)updates_for_batches(per_epoch - tr->st.batch_index, k) +
                            (double)(tc->epochs - tr->st.epoch - 1) * (double)updates_for_batches(per_epoch, k);
        if (tc->max_steps > 0 && tc->max_steps - tr->st.step < left_steps) left_steps = (double)(tc->max_steps - tr->st.step);
        if (left_steps >= 0) {
            double left = left_steps * elapsed / tr->window_steps;
            snprintf(eta, sizeof eta, " eta %dh%02dm%02ds", (int)(left / 3600), (int)fmod(left / 60, 60), (int)fmod(left, 60));
        }
        char ppl[32], align_text[32] = "";
        if (tr->guided) snprintf(align_text, sizeof align_text, " align %.4f", align);
        fprintf(stderr, "%sepoch %lld step %lld loss %.4f ppl %s%s lr %.3g gnorm %.3f src %.0f tok/s tgt %.0f tok/s%s%s",
                tr->tty ? "\r\033[K" : "", (long long)tr->shown_epoch, (long long)tr->st.step, loss,
                ppl_text(ppl, exp(fmin(loss, 700)), 2), align_text, lr, norm, src_s, tgt_s, eta,
                tr->tty && !final ? "" : "\n");
        fflush(stderr);
    }
    tr->window_loss = tr->window_tokens = tr->window_src = tr->window_tgt = tr->window_norm = tr->window_align = 0;
    tr->window_steps = 0;
    tr->window_start = now_seconds();
}

/* Attention statistics of the step just taken (to debug attention that
 * does not learn: weights stuck near uniform have entropy near log S). */
static void log_attention(Trainer *tr, const Batch *b) {
    AttnStats a;
    if (tr->opt->quiet || !seq2seq_attention_stats(tr->model, b, &a)) return;
    char local[64] = "";
    if (!isnan(a.local_p_offset)) snprintf(local, sizeof local, ", local-p |p/S - t/T| %.3f", a.local_p_offset);
    nmt_log_info("%sattention: max %.3f min %.4f entropy %.3f nats (uniform %.3f)%s", tr->tty ? "\r\033[K" : "",
                 a.mean_max, a.mean_min, a.mean_entropy, a.mean_uniform_entropy, local);
}

/* train.keep_checkpoints: writes step-N.nmt of this step, then removes the
 * older ones beyond the last K. The folder is listed for them, not the
 * validation history: without a validation set there is none, and after
 * a --resume the files of the run's earlier part must go as well. A file
 * that cannot be removed is a warning: training goes on. */
static NmtStatus save_step_checkpoint(Trainer *tr) {
    const TrainConfig *tc = &tr->cfg->train;
    char name[64];
    snprintf(name, sizeof name, "step-%lld.nmt", (long long)tr->st.step);
    NmtStatus st = save_checkpoint(tr, name);
    if (st) return st;
    int n_removed = 0;
    if (run_dir_prune_steps(tc->save_dir, tc->keep_checkpoints, tr->st.step, &n_removed) != NMT_OK) {
        nmt_log_warn("train.keep_checkpoints: %s", nmt_error_message());
        nmt_error_clear();
    }
    return NMT_OK;
}

/* Validates, records, saves last/best; returns whether to stop early.
 * on_schedule: a validation of the schedule (every valid_every steps, each
 * epoch end, also at a stop on an epoch's last batch). The one at a stop
 * between those points (train.max_steps) only records and may save
 * best.nmt: it neither decays the rate nor counts towards patience, so a
 * run resumed from there follows the same schedule as one never stopped. */
static NmtStatus validate_and_save(Trainer *tr, bool on_schedule, bool *stop) {
    const TrainConfig *tc = &tr->cfg->train;
    *stop = false;
    ValidScores v = {NAN, TRAIN_CSV_EMPTY, TRAIN_CSV_EMPTY};
    NmtStatus st = NMT_OK;
    if (tr->data.valid) {
        st = validate_weights(tr, &v);
        if (!st) st = device_failed(tr, "validation at step %lld", (long long)tr->st.step);
        if (st) return st;
        test_valid_bleu(tr->st.step, &v.bleu);
        if (tr->n_history == tr->cap_history) {
            int cap = tr->cap_history ? tr->cap_history * 2 : 64;
            ValidRecord *h = nmt_realloc(tr->history, (size_t)cap * sizeof *h);
            if (!h) return nmt_fail_nomem("recording validation");
            tr->history = h;
            tr->cap_history = cap;
        }
        double metric = valid_metric_value(tc->valid_metric, &v), best_saved = 0;
        /* best.nmt: saved when this beats every earlier validation */
        bool save_best = !history_best(tr, tc->valid_metric, &best_saved) || metric > best_saved;
        tr->history[tr->n_history++] = (ValidRecord){tr->st.step, v.ppl, v.bleu, v.chrf};
        csv_valid_row(tr, &v);
        bool improved = tr->st.best_step < 0 || metric > tr->st.best_metric;
        /* Only a scheduled validation moves the best so far, the patience and
         * the rate. The one at a stop between two of them (train.max_steps, a
         * signal) is not one an uninterrupted run makes, so it leaves them as
         * they were and a resumed run goes on as that run would; it still
         * saves best.nmt when it beats every earlier validation, and a
         * later scheduled one that beats the best so far but not it keeps
         * that best.nmt. */
        if (on_schedule && improved) {
            tr->st.best_metric = metric;
            tr->st.best_step = tr->st.step;
            tr->st.evals_since_best = 0;
        } else if (on_schedule) {
            tr->st.evals_since_best++;
            tr->st.lr_scale *= tc->lr_decay; /* decay on plateau (Luong halves SGD; Adam likewise) */
        }
        char ppl_buf[32];
        if (!tr->opt->quiet)
            nmt_log_info("%svalid: step %lld ppl %s BLEU %.2f chrF %.2f%s", tr->tty ? "\r\033[K" : "",
                         (long long)tr->st.step, ppl_text(ppl_buf, v.ppl, 3), v.bleu, v.chrf,
                         save_best                 ? " (best)"
                         : improved && on_schedule ? " (best of the schedule; best.nmt keeps a stop's better "
                                                     "validation)"
                                                   : "");
        if (save_best) st = save_checkpoint(tr, "best.nmt");
        if (!st && tc->patience > 0 && tr->st.evals_since_best >= tc->patience) *stop = true;
    }
    if (!st) st = save_checkpoint(tr, "last.nmt");
    if (!st && tc->keep_checkpoints > 0) st = save_step_checkpoint(tr);
    /* the next log window times training only, not this validation and saving */
    tr->window_start = now_seconds();
    return st;
}

/* ---- setup and the loop ------------------------------------------------ */

/* After the model or the optimizer state did not fit: what the device has,
 * and the settings that size them. */
static void explain_nomem(const Trainer *tr) {
    const Config *cfg = tr->cfg;
    char hint[480];
    snprintf(hint, sizeof hint,
             "lower train.batch_sentences (%d) or train.batch_tokens (%d), data.max_len (%d), "
             "decode.beam (%d) or decode.max_len_a and _b (%g, %d: validation decoding's steps), "
             "or the model's sizes; train.accum_batches (%d) keeps the batch size per update with "
             "smaller batches",
             cfg->train.batch_sentences, cfg->train.batch_tokens, cfg->data.max_len, cfg->decode.beam,
             cfg->decode.max_len_a, cfg->decode.max_len_b, cfg->train.accum_batches);
    backend_explain_nomem(tr->be, hint);
}

/* --resume needs save_dir/last.nmt: said before any work or write (no
 * save_dir made), with what the folder holds instead. */
static NmtStatus refuse_resume_without_last(const Trainer *tr) {
    const char *dir = tr->cfg->train.save_dir;
    char *found = NULL;
    NmtStatus st = run_dir_find_earlier(dir, &found);
    if (!st && (!found || strcmp(found, "last.nmt") != 0)) {
        struct stat sb;
        if (!found && stat(dir, &sb) != 0)
            st = nmt_fail(NMT_ERR_CONFIG,
                          "--resume: train.save_dir %s does not exist: there is no run to resume; "
                          "leave out --resume to start one", dir);
        else if (!found)
            st = nmt_fail(NMT_ERR_CONFIG,
                          "--resume: train.save_dir %s holds no run (no last.nmt): there is nothing to "
                          "resume; leave out --resume to start one", dir);
        else {
            bool ck = strstr(found, ".nmt") != NULL; /* best.nmt or a step-N.nmt: translatable */
            st = nmt_fail(NMT_ERR_CONFIG,
                          "--resume: train.save_dir %s has no last.nmt to resume from (it holds %s of a run "
                          "stopped before its first save, or whose last.nmt was removed); %s%s%s%s%sstart "
                          "afresh there with --overwrite",
                          dir, found, ck ? "translate with " : "", ck ? dir : "", ck ? "/" : "", ck ? found : "",
                          ck ? ", or " : "");
        }
    }
    nmt_free(found);
    return st;
}

/* A fresh run (no --resume, no --overwrite) must not replace an earlier
 * run's checkpoints and log: checked before any work or write. */
static NmtStatus refuse_earlier_run(const Trainer *tr) {
    if (tr->opt->resume) return refuse_resume_without_last(tr);
    if (tr->opt->overwrite) return NMT_OK;
    const char *dir = tr->cfg->train.save_dir;
    char *found = NULL;
    NmtStatus st = run_dir_find_earlier(dir, &found);
    if (!st && found && !strcmp(found, "last.nmt"))
        st = nmt_fail(NMT_ERR_CONFIG,
                      "train.save_dir: %s already holds a run (%s/%s); continue it with --resume, "
                      "or remove it or choose another train.save_dir, or pass --overwrite to start "
                      "afresh (removes its checkpoints and train.csv)", dir, dir, found);
    else if (!st && found) /* stopped before its first last.nmt: nothing to resume */
        st = nmt_fail(NMT_ERR_CONFIG,
                      "train.save_dir: %s holds files of an earlier run (%s/%s) but no last.nmt to "
                      "resume from; remove them or choose another train.save_dir, or pass --overwrite "
                      "to start afresh (removes its checkpoints and train.csv)", dir, dir, found);
    nmt_free(found);
    return st;
}

/* --overwrite: the earlier run's files go before the new run writes any. */
static NmtStatus remove_earlier_run(const Trainer *tr) {
    if (!tr->opt->overwrite) return NMT_OK;
    int n = 0;
    NmtStatus st = run_dir_remove_earlier(tr->cfg->train.save_dir, &n);
    if (!st && n && !tr->opt->quiet)
        nmt_log_info("train: --overwrite: removed %d file%s of the earlier run in %s", n, n == 1 ? "" : "s",
                     tr->cfg->train.save_dir);
    return st;
}

/* Guided alignment (data.train_align with a weight above 0): the batches
 * carry the alignment rows and the model adds their loss. */
static NmtStatus setup_guided_alignment(Trainer *tr) {
    const TrainConfig *tc = &tr->cfg->train;
    const GuidedAlignments *g = tr->train_set_align;
    if (!tr->data.train_align) return NMT_OK;
    if (tc->guided_alignment_weight <= 0) {
        if (!tr->opt->quiet)
            nmt_log_info("train: data.train_align is not used: train.guided_alignment_weight is 0");
        return NMT_OK;
    }
    int cost = model_align_cost_from_config(tr->cfg);
    NmtStatus st = batcher_set_alignments(tr->train_batches, g);
    if (!st) st = seq2seq_set_guided_alignment(tr->model, cost, (float)tc->guided_alignment_weight);
    if (st) return st;
    tr->guided = true;
    int64_t tokens = tr->train_set->tgt_offset[tr->train_set->n_pairs];
    if (!tr->opt->quiet)
        nmt_log_info("train: guided alignment (%s, weight %g, %s): %lld token links; %.1f%% of the %lld target "
                     "tokens aligned", guided_cost_names[tc->guided_alignment_cost], tc->guided_alignment_weight,
                     tr->cfg->data.train_align, (long long)g->offset[g->n_pairs],
                     100.0 * (double)guided_alignments_aligned_targets(g) / (double)(tokens ? tokens : 1),
                     (long long)tokens);
    return NMT_OK;
}

/* The pairs the batcher plans from (tr->train_set): data.train's, or with
 * data.extra_src or data.train_upsample above 1 the corpora's mix of epoch
 * 0 (train_mix.h), which carries token links under guided alignment.
 * With a data.extra_weight that has a fraction, *range (else untouched)
 * gets what every epoch's mix may hold, for the batcher. */
static NmtStatus mix_corpora(Trainer *tr, BatchRange *range) {
    const DataConfig *dc = &tr->cfg->data;
    bool links = tr->data.train_align && tr->cfg->train.guided_alignment_weight > 0; /* setup_guided_alignment's */
    tr->train_set = tr->data.train;
    tr->train_set_align = links ? tr->data.train_align : NULL;
    if (!tr->data.n_extra && dc->train_upsample == 1) return NMT_OK;
    for (int k = 0; k < tr->data.n_extra; k++) tr->extra_weight[k] = config_extra_weight(tr->cfg, k);
    TrainMixParts parts = mix_parts(tr, tr->data.train, tr->train_set_align, (const Dataset *const *)tr->data.extra);
    tr->mix_varies = train_mix_varies(&parts);
    if (tr->mix_varies) {
        BatchRange r = {train_mix_max_pairs(&parts), 0, 0, 0, 0};
        batch_range_add(&r, tr->data.train);
        for (int k = 0; k < tr->data.n_extra; k++) batch_range_add(&r, tr->data.extra[k]);
        *range = r;
    }
    NmtStatus st = train_mix_create(links, &tr->mix);
    if (!st) st = train_mix_build(tr->mix, &parts, 0, &tr->train_set, &tr->train_set_align);
    if (!st) tr->mix_epoch = 0;
    if (!st && !tr->opt->quiet) {
        char extra[2048] = "";
        for (int k = 0; k < tr->data.n_extra; k++) {
            char *tag = k < config_list_len(dc->extra_tag) ? config_list_item(dc->extra_tag, k) : NULL;
            char which[32] = ""; /* data.extra_src[2]: the second corpus */
            if (tr->data.n_extra > 1) snprintf(which, sizeof which, "[%d]", k + 1);
            size_t at = strlen(extra);
            snprintf(extra + at, sizeof extra - at, "%s%lld of data.extra_src%s (%s)",
                     k + 1 == tr->data.n_extra ? " and " : ", ", (long long)tr->data.extra[k]->n_pairs, which,
                     tag && tag[0] ? tag : "untagged");
            nmt_free(tag);
            double w = tr->extra_weight[k];
            int64_t n = tr->data.extra[k]->n_pairs, whole = (int64_t)floor(w) * n;
            at = strlen(extra);
            if (train_mix_weight_varies(w)) /* epoch 0's share; a later epoch's differs by at most one pair */
                snprintf(extra + at, sizeof extra - at, " x %g (data.extra_weight: %lld, a new share every epoch)",
                         w, (long long)(whole + train_mix_share(n, w, 0)));
            else if (w != 1)
                snprintf(extra + at, sizeof extra - at, " x %g (data.extra_weight)", w);
        }
        char times[64] = "";
        if (dc->train_upsample > 1) snprintf(times, sizeof times, " x %d (data.train_upsample)", dc->train_upsample);
        nmt_log_info("train: an epoch's pairs: %lld of data.train_src%s%s", (long long)tr->data.train->n_pairs,
                     times, extra);
    }
    return st;
}

/* model.share_embeddings needs one tokenizer for both sides: refused
 * before any tokenizer is trained when the config makes two (the word
 * tokenizer, SentencePiece not joint), given models and train.init_from's
 * tokenizers being checked once loaded (check_shared_vocabulary). */
static NmtStatus check_shared_vocabulary_config(const Config *cfg) {
    const DataConfig *d = &cfg->data;
    if (!cfg->model.share_embeddings || given_tokenizers(cfg) || cfg->train.init_from[0]) return NMT_OK;
    if (d->tokenizer == CFG_TOKENIZER_WORD)
        return nmt_fail(NMT_ERR_CONFIG, "model.share_embeddings: needs one tokenizer for both sides; the word "
                                        "tokenizer has one a side (use data.tokenizer spm with data.spm_joint true)");
    if (!d->spm_joint)
        return nmt_fail(NMT_ERR_CONFIG, "model.share_embeddings: needs one tokenizer for both sides: set "
                                        "data.spm_joint true (one SentencePiece model for both languages)");
    return NMT_OK;
}

/* The prepared tokenizers are one (byte for byte) when model.share_embeddings. */
static NmtStatus check_shared_vocabulary(const Config *cfg, const PreparedData *data) {
    if (!cfg->model.share_embeddings) return NMT_OK;
    uint8_t *bytes = NULL;
    size_t n = 0;
    int same = 0;
    NmtStatus st = tokenizer_serialize(data->src_tok, &bytes, &n);
    if (!st) st = tokenizer_same_as_serialized(data->tgt_tok, bytes, n, &same);
    nmt_free(bytes);
    if (!st && !same)
        st = nmt_fail(NMT_ERR_CONFIG, "model.share_embeddings: needs one tokenizer for both sides, and the source "
                                      "and target tokenizers differ (%d and %d entries%s)",
                      tokenizer_vocab_size(data->src_tok), tokenizer_vocab_size(data->tgt_tok),
                      cfg->train.init_from[0] ? ", from train.init_from" : "; give the same data.spm_src_model and data.spm_tgt_model");
    return st;
}

static NmtStatus setup(Trainer *tr) {
    const Config *cfg = tr->cfg;
    const TrainConfig *tc = &cfg->train;
    /* another run in the folder now is refused before anything else */
    NmtStatus st = run_dir_lock(tc->save_dir, &tr->dir_lock);
    if (!st) st = refuse_earlier_run(tr);
    if (!st) st = load_resume_checkpoint(tr);
    if (st) return st;
    st = check_shared_vocabulary_config(cfg);
    if (!st) st = prepare_data(cfg, 0, &tr->data);
    if (!st) st = check_shared_vocabulary(cfg, &tr->data);
    if (st) return st;
    st = backend_create_for(tc->device, tc->gpu, tc->threads, "train.device", "train.gpu",
                            &tr->be);
    if (st) return st;
    BatchSpec spec = {tc->batch_sentences, tc->batch_tokens, (uint64_t)tc->seed, 1, cfg->model.right_to_left};
    BatchRange range;
    st = mix_corpora(tr, &range);
    if (!st) st = batcher_create_ranged(tr->train_set, &spec, tr->mix_varies ? &range : NULL, &tr->train_batches);
    if (st) return st;
    BatchLimits lim = batcher_limits(tr->train_batches);
    ModelLimits ml = {lim.max_B, lim.max_S, lim.max_T, 0, 0, 0, 0};
    if (tr->data.valid) {
        BatchSpec vspec = {tc->batch_sentences ? tc->batch_sentences : 64, 0, 0, 0, cfg->model.right_to_left};
        st = batcher_create(tr->data.valid, &vspec, &tr->valid_batches);
        if (st) return st;
        BatchLimits vl = batcher_limits(tr->valid_batches);
        if (vl.max_B > ml.max_B) ml.max_B = vl.max_B;
        if (vl.max_S > ml.max_S) ml.max_S = vl.max_S;
        if (vl.max_T > ml.max_T) ml.max_T = vl.max_T;
        ml.max_decode_T = (int)(cfg->decode.max_len_a * vl.max_S) + cfg->decode.max_len_b;
        if (ml.max_decode_T < 1) ml.max_decode_T = 1; /* a tiny max_len_a rounds down to 0 */
        tr->max_decode_T = ml.max_decode_T;
        ml.max_beam = cfg->decode.beam;
        st = load_valid_refs(tr);
        if (st) return st;
    }
    ModelDims dims;
    st = model_dims_from_config(cfg, tokenizer_vocab_size(tr->data.src_tok), tokenizer_vocab_size(tr->data.tgt_tok), &dims);
    if (!st) {
        st = seq2seq_create(tr->be, &dims, ml, &tr->model);
        if (st == NMT_ERR_NOMEM) explain_nomem(tr);
    }
    if (!st) st = seq2seq_init_params(tr->model, (float)cfg->model.init_range, (uint64_t)tc->seed);
    if (!st && tc->init_from[0] && !tr->opt->resume) { /* fine-tuning: a resumed run has its own weights */
        int64_t from_step = 0;
        st = init_from_weights(tc->init_from, tr->be, seq2seq_layout(tr->model), seq2seq_params(tr->model),
                               &from_step);
        if (!st && !tr->opt->quiet)
            nmt_log_info("train: starting from the model of %s (step %lld of its run), with a new optimizer "
                         "and schedule (train.init_from)", tc->init_from, (long long)from_step);
    }
    if (!st) st = setup_guided_alignment(tr);
    if (st) return st;
    tr->n_params = seq2seq_layout(tr->model)->total;
    st = optimizer_create(tr->be, tc, tr->n_params, &tr->optim);
    if (!st && tc->ema_decay > 0) {
        tr->ema = tr->be->alloc(tr->be, tr->n_params * sizeof(float));
        if (!tr->ema) st = nmt_fail(NMT_ERR_NOMEM, "out of memory on the %s for the weights' moving average "
                                    "(train.ema_decay, %.1f MB)", tr->be->name, tr->n_params * 4 / 1e6);
        else tr->be->copy(tr->be, tr->ema, seq2seq_params(tr->model), tr->n_params * sizeof(float));
    }
    if (st == NMT_ERR_NOMEM) explain_nomem(tr);
    if (st) return st;
    tr->config_json = config_to_json(cfg);
    if (!tr->config_json) return nmt_fail_nomem("setting up training");
    st = file_make_dirs(tc->save_dir);
    if (!st && tr->dir_lock < 0) { /* made just now (or by a run that started and ended meanwhile) */
        st = run_dir_lock(tc->save_dir, &tr->dir_lock);
        if (!st) st = refuse_earlier_run(tr);
    }
    if (!st) st = remove_earlier_run(tr);
    if (st) return st;
    const char *poison = getenv("NMT_TEST_POISON_STEP");
    tr->test_poison_step = poison ? strtoll(poison, NULL, 10) : 0;
    memset(&tr->st, 0, sizeof tr->st);
    /* every epoch from decay_start_epoch on starts decayed: epoch 1 here,
     * the later ones where the loop begins them */
    tr->st.lr_scale = tc->decay_start_epoch == 1 ? tc->lr_decay : 1.0;
    tr->st.best_step = -1;
    Rng rng;
    rng_seed(&rng, (uint64_t)tc->seed, 1);
    tr->st.rng_state = rng.state;
    tr->st.rng_inc = rng.inc;
    if (tr->data.train && tr->cfg->data.spm_sample_alpha > 0) {
        st = subword_sampler_create(cfg, tr->data.src_tok, tr->data.tgt_tok, tr->data.train,
                                    tr->guided ? tr->data.train_align : NULL, &stop_signal, &tr->sampler);
        for (int k = 0; !st && k < tr->data.n_extra; k++)
            st = subword_sampler_create_extra(cfg, tr->data.src_tok, tr->data.tgt_tok, tr->data.extra[k], k,
                                              &stop_signal, &tr->extra_sampler[k]);
        if (!st && tr->mix) st = train_mix_create(tr->train_set_align != NULL, &tr->epoch_mix);
        if (st) return st;
    }
    if (tr->opt->resume) {
        st = resume(tr);
        if (st) return st;
    } else {
        st = use_epoch_pairs(tr, 0);
        if (st) return st;
    }
    /* the batch before the resume point: at a batch index of 0, the last of the epoch before */
    tr->shown_epoch = tr->st.batch_index > 0 || tr->st.epoch == 0 ? tr->st.epoch + 1 : tr->st.epoch;
    char *path = save_path(tr, "config.json");
    if (!path) return nmt_fail_nomem("setting up training");
    st = file_write_atomic(path, tr->config_json, strlen(tr->config_json));
    nmt_free(path);
    if (st) return st;
    path = save_path(tr, "train.csv");
    if (!path) return nmt_fail_nomem("setting up training");
    /* a new run starts a new log; a resumed one appends to it */
    if (!tr->opt->resume && unlink(path) != 0 && errno != ENOENT)
        st = nmt_fail(NMT_ERR_IO, "%s: cannot replace: %s", path, strerror(errno));
    if (!st) st = train_csv_open_append(path, &tr->csv);
    nmt_free(path);
    if (!st && !tr->opt->quiet) {
        ModelDims d = *seq2seq_dims(tr->model);
        int64_t batches = batcher_batches_in_epoch(tr->train_batches);
        char updates[96] = "";
        if (tc->accum_batches > 1)
            snprintf(updates, sizeof updates, " (%lld updates of up to %d, train.accum_batches)",
                     (long long)updates_for_batches(batches, tc->accum_batches), tc->accum_batches);
        nmt_log_info("train: %zu parameters; %lld training pairs, %lld batches per epoch%s; %s attention; device %s",
                     tr->n_params, (long long)tr->train_set->n_pairs, (long long)batches, updates,
                     attn_style_names[d.style], tr->be->name);
        double param_mb = tr->n_params * sizeof(float) / 1e6;
        char device_note[128];
        backend_memory_note(tr->be, device_note, sizeof device_note);
        char ema_note[64] = "";
        if (tr->ema) snprintf(ema_note, sizeof ema_note, "%.1f MB moving average of the weights, ", param_mb);
        nmt_log_info("train: memory on the %s: %.1f MB parameters and gradients, %.1f MB optimizer state, "
                     "%s%.1f MB activations (batches up to %d x %d x %d, decoding up to %d steps)%s",
                     tr->be->name, 2 * param_mb, optimizer_state_bytes(tr->optim) / 1e6, ema_note,
                     seq2seq_arena_bytes(tr->model) / 1e6, ml.max_B, ml.max_S, ml.max_T,
                     ml.max_decode_T, device_note);
    }
    return st;
}

static void teardown(Trainer *tr) {
    if (tr->csv) fclose(tr->csv);
    file_unlock_dir(tr->dir_lock);
    if (tr->valid_refs)
        for (int64_t i = 0; i < tr->data.valid->n_pairs; i++) nmt_free(tr->valid_refs[i]);
    nmt_free(tr->valid_refs);
    nmt_free(tr->history);
    nmt_free(tr->config_json);
    checkpoint_free(&tr->resume_ck);
    optimizer_free(tr->optim);
    if (tr->be && tr->ema) tr->be->release(tr->be, tr->ema);
    seq2seq_free(tr->model);
    batcher_free(tr->train_batches);
    batcher_free(tr->valid_batches);
    subword_sampler_free(tr->sampler);
    for (int k = 0; k < CFG_MAX_LIST; k++) subword_sampler_free(tr->extra_sampler[k]);
    train_mix_free(tr->mix);
    train_mix_free(tr->epoch_mix);
    if (tr->be) {
        backend_log_usage(tr->be, "train");
        tr->be->destroy(tr->be);
    }
    prepared_data_free(&tr->data);
}

/* Dropout seed of update t: depends on (seed, t) only. */
static uint64_t step_seed(const Config *cfg, int64_t t) {
    return rng_mix64(((uint64_t)cfg->train.seed << 32) ^ (uint64_t)t);
}

/* Dropout seed of batch j (from 0) of update t: batch 0's is step_seed,
 * so that accum_batches 1 trains as before accumulation existed. */
static uint64_t batch_seed(const Config *cfg, int64_t t, int j) {
    return j == 0 ? step_seed(cfg, t) : rng_mix64(step_seed(cfg, t) + (uint64_t)j);
}

/* What the batches of one update did. */
typedef struct {
    double loss_sum;        /* the label-smoothed losses of the update's batches, summed */
    double align_sum;       /* their guided alignment losses, summed */
    int64_t n_tokens;       /* their non-pad target tokens */
    int64_t src_tokens, tgt_tokens;
    int n_batches;          /* batches taken from the batcher */
    int bad_batch;          /* 1-based batch whose loss was not finite (the rest were passed over), 0: none */
    Batch last;             /* the last batch, valid until the batcher's next call */
} UpdateBatches;

/* The forward and backward passes of update t: `first` (taken from the
 * batcher already) and up to train.accum_batches - 1 more of the same
 * epoch, their gradients added into seq2seq_grads as the gradient of the
 * mean loss over all their target tokens (zero the gradients first). A
 * batch whose loss is not finite ends the computing; the update's other
 * batches are still taken (the update is skipped whole). Returns false
 * when a signal came between two batches: the update is abandoned, and
 * tr->st still holds the position before its first batch. */
static bool run_update_batches(Trainer *tr, const Batch *first, int64_t t, UpdateBatches *u) {
    int k = tr->cfg->train.accum_batches;
    memset(u, 0, sizeof *u);
    int64_t more_tokens = 0;
    int more = k > 1 ? batcher_peek_tgt_tokens(tr->train_batches, k - 1, &more_tokens) : 0;
    seq2seq_set_grad_tokens(tr->model, more > 0 ? first->n_tgt_tokens + more_tokens : 0);
    Batch b = *first;
    for (int j = 0; j <= more; j++) {
        if (j > 0) {
            if (stop_signal) {
                tr->abandoned_batches = j;
                return false;
            }
            int got = 0;
            batcher_next(tr->train_batches, &b, &got);
            NMT_ASSERT(got); /* batcher_peek_tgt_tokens counted it */
        }
        u->n_batches++;
        u->src_tokens += b.n_src_tokens;
        u->tgt_tokens += b.n_tgt_tokens;
        if (u->bad_batch) continue;
        ModelLoss l;
        seq2seq_forward(tr->model, &b, true, batch_seed(tr->cfg, t, j), &l);
        u->loss_sum += l.loss_sum;
        u->align_sum += l.align_sum;
        u->n_tokens += l.n_tokens;
        if (isfinite(l.loss)) seq2seq_backward(tr->model);
        else u->bad_batch = j + 1;
    }
    u->last = b;
    return true;
}

/* "N epochs completed" (1: "1 epoch completed") after the loop: the
 * epochs whose every batch was trained (one skipped for NaN counts).
 * st.epoch counts those before the current epoch; the current one is
 * complete too when its last batch was the last trained, since the end of
 * an epoch is noticed only when the batch after it is asked for (an early
 * stop, max_steps or a signal can come first). */
static void epochs_completed_text(const Trainer *tr, char buf[48]) {
    int64_t done = tr->st.epoch;
    if (tr->st.batch_index >= batcher_batches_in_epoch(tr->train_batches)) done++;
    snprintf(buf, 48, "%lld epoch%s completed", (long long)done, done == 1 ? "" : "s");
}

static NmtStatus train_loop(Trainer *tr) {
    const TrainConfig *tc = &tr->cfg->train;
    NmtStatus st = NMT_OK;
    tr->window_start = now_seconds();
    double lr = optimizer_rate(tr->optim, tr->st.step + 1, tr->st.lr_scale);
    /* A resumed run goes on as if it had never stopped: a state saved
     * without its validation (a signal's save) is validated at its epoch's
     * end like any other, and a run whose last validation used up the
     * patience stops now, as it would have there. */
    bool stepped_since_save = tr->opt->resume && tr->data.valid && tr->st.step > 0 &&
                              (tr->n_history == 0 || tr->history[tr->n_history - 1].step != tr->st.step);
    bool stop = tr->opt->resume && tc->patience > 0 && tr->st.evals_since_best >= tc->patience;
    if (stop && !tr->opt->quiet)
        nmt_log_info("train: the run had stopped early: no improvement in its last %lld validations "
                     "(train.patience %d); raise train.patience (or set 0) to train on",
                     (long long)tr->st.evals_since_best, tc->patience);
    bool resumed_stopped = stop;
    while (!stop) {
        if (tc->max_steps > 0 && tr->st.step >= tc->max_steps) break;
        if (tr->st.epoch >= tc->epochs) break;
        if (stop_signal) break;
        Batch b;
        int got = 0;
        batcher_next(tr->train_batches, &b, &got);
        if (!got) { /* end of an epoch */
            tr->st.epoch++;
            tr->st.batch_index = 0;
            if (tc->decay_start_epoch > 0 && tr->st.epoch + 1 >= tc->decay_start_epoch)
                tr->st.lr_scale *= tc->lr_decay;
            if (stepped_since_save) {
                log_progress(tr, lr, true);
                st = validate_and_save(tr, true, &stop);
                if (st) return st;
                stepped_since_save = false;
            }
            if (!stop && !stop_signal && tr->st.epoch < tc->epochs) {
                st = use_epoch_pairs(tr, tr->st.epoch);
                if (st == NMT_STOPPED && stop_signal) {
                    nmt_error_clear(); /* saved below at the epoch's start, drawn again at --resume */
                    break;
                }
                if (st) return st;
            }
            continue;
        }
        int64_t t = tr->st.step + 1;
        double t0 = now_seconds();
        seq2seq_zero_grads(tr->model);
        UpdateBatches u;
        if (!run_update_batches(tr, &b, t, &u)) break; /* a signal: saved below, from the update's start */
        BatchPosition pos = batcher_position(tr->train_batches);
        double norm = NAN;
        if (!u.bad_batch) norm = optimizer_grad_norm(tr->optim, seq2seq_grads(tr->model));
        st = device_failed(tr, "step %lld", (long long)t); /* before its loss or update is trusted */
        if (st) return st;
        tr->st.epoch = pos.epoch;
        tr->st.batch_index = pos.batch_index;
        tr->shown_epoch = pos.epoch + 1;
        if (u.bad_batch || !isfinite(norm)) {
            tr->st.bad_steps++;
            char which[64] = "";
            if (u.bad_batch && tc->accum_batches > 1)
                snprintf(which, sizeof which, " (batch %d of the update's %d)", u.bad_batch, u.n_batches);
            nmt_log_warn("train: step %lld: %s%s is not finite; update skipped (%lld in a row)", (long long)t,
                         u.bad_batch ? "loss" : "gradient norm", which, (long long)tr->st.bad_steps);
            if (tr->st.bad_steps >= tc->max_bad_steps)
                return nmt_fail(NMT_ERR_RUNTIME,
                                "%lld updates in a row had NaN or Inf (train.max_bad_steps); stopped, the "
                                "last checkpoint in %s is intact (--resume, perhaps with a lower train.lr, "
                                "continues from it)", (long long)tr->st.bad_steps, tc->save_dir);
            continue;
        }
        tr->st.bad_steps = 0;
        lr = optimizer_rate(tr->optim, t, tr->st.lr_scale);
        optimizer_apply(tr->optim, seq2seq_params(tr->model), seq2seq_grads(tr->model), norm, t, lr);
        if (tr->ema)
            tr->be->ema_update(tr->be, tr->ema, seq2seq_params(tr->model), tr->n_params,
                               (float)optimizer_ema_decay(tc->ema_decay, t));
        tr->st.step = t;
        test_poison_after(tr, t);
        tr->st.tokens_seen += (double)u.n_tokens;
        tr->st.seconds += now_seconds() - t0;
        tr->window_loss += u.loss_sum;
        tr->window_align += u.align_sum;
        tr->window_tokens += (double)u.n_tokens;
        tr->window_src += (double)u.src_tokens;
        tr->window_tgt += (double)u.tgt_tokens;
        tr->window_norm += norm;
        tr->window_steps++;
        stepped_since_save = true;
        if (t % tc->log_every == 0) {
            log_progress(tr, lr, false);
            log_attention(tr, &u.last);
        }
        if (t % tc->valid_every == 0) {
            log_progress(tr, lr, true);
            st = validate_and_save(tr, true, &stop);
            if (st) return st;
            stepped_since_save = false;
        }
    }
    if (stop && !resumed_stopped && !tr->opt->quiet)
        nmt_log_info("train: no improvement in %d validations: stopping early (best at step %lld)", tc->patience,
                     (long long)tr->st.best_step);
    char epochs[48];
    epochs_completed_text(tr, epochs);
    if (stop_signal) {
        /* save at once: no validation between the signal and the exit */
        log_progress(tr, lr, true);
        st = save_checkpoint(tr, "last.nmt");
        if (st) return st;
        char *path = save_path(tr, "last.nmt");
        nmt_note_stop_signal((int)stop_signal);
        char dropped[160] = "";
        if (tr->abandoned_batches > 0)
            snprintf(dropped, sizeof dropped,
                     "; the update under way was dropped after %d of its batches (--resume trains them again)",
                     tr->abandoned_batches);
        st = nmt_fail(NMT_STOPPED, "stopped by signal %d at step %lld (%s); saved %s%s; continue with --resume",
                      (int)stop_signal, (long long)tr->st.step, epochs, path ? path : "last.nmt", dropped);
        nmt_free(path);
        return st;
    }
    if (stepped_since_save) {
        /* a stop (max_steps) on an epoch's last batch: this is the validation
         * of that epoch's end, scheduled (it may decay the rate and counts
         * towards patience), so that a resumed run follows the schedule of
         * one never stopped */
        bool epoch_end = tr->st.batch_index >= batcher_batches_in_epoch(tr->train_batches);
        log_progress(tr, lr, true);
        bool ignored;
        st = validate_and_save(tr, epoch_end, &ignored);
        if (st) return st;
    }
    if (!tr->opt->quiet)
        nmt_log_info("train: done at step %lld (%s); checkpoints in %s", (long long)tr->st.step, epochs,
                     tc->save_dir);
    return NMT_OK;
}

NmtStatus train_run(const Config *cfg, const TrainOptions *opt) {
    Trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.dir_lock = -1;
    tr.mix_epoch = -1; /* no mix built yet */
    tr.cfg = cfg;
    tr.opt = opt;
    tr.tty = isatty(2);
    stop_signal = 0;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    NmtStatus st = setup(&tr);
    if (st && stop_signal) { /* e.g. while waiting for the cache's lock: nothing trained, nothing to save */
        nmt_note_stop_signal((int)stop_signal);
        st = nmt_fail(NMT_STOPPED, "stopped by signal %d while setting up, before the first step (nothing saved)",
                      (int)stop_signal);
    }
    if (!st) st = train_loop(&tr);
    teardown(&tr);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return st;
}
