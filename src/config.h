/* config.h: the JSON configuration of nmt (cJSON): every key, its type,
 * default, range and documentation, declared once in config_keys.h; loading
 * with --set overrides, validation with messages that name the key path,
 * the resolved config as JSON, and the key comparison used on resume.
 *
 * Relative paths in a config file resolve against the file's folder. */
#ifndef NMT_CONFIG_H
#define NMT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include "common.h"

/* Enumerations: one X-list each gives the C enum and the JSON strings. */
#define TOKENIZER_KINDS(X) X(CFG_TOKENIZER_SPM, "spm") X(CFG_TOKENIZER_WORD, "word")
#define SPM_MODEL_TYPES(X) X(CFG_SPM_UNIGRAM, "unigram") X(CFG_SPM_BPE, "bpe")
#define ATTN_STYLES(X) \
    X(ATTN_STYLE_LUONG, "luong") X(ATTN_STYLE_BAHDANAU, "bahdanau") X(ATTN_STYLE_NONE, "none")
#define ATTN_SCORES(X)                                                         \
    X(ATTN_SCORE_DOT, "dot") X(ATTN_SCORE_SCALED_DOT, "scaled_dot")            \
    X(ATTN_SCORE_GENERAL, "general") X(ATTN_SCORE_CONCAT, "concat")            \
    X(ATTN_SCORE_ADDITIVE, "additive") X(ATTN_SCORE_AUTO, "auto")
#define ATTN_MODES(X) \
    X(ATTN_MODE_GLOBAL, "global") X(ATTN_MODE_LOCAL_M, "local-m") X(ATTN_MODE_LOCAL_P, "local-p")
#define BRIDGES(X) X(CFG_BRIDGE_LEARNED, "learned") X(CFG_BRIDGE_ZERO, "zero")
#define DEVICES(X) X(CFG_DEVICE_AUTO, "auto") X(CFG_DEVICE_CPU, "cpu") X(CFG_DEVICE_CUDA, "cuda")
#define OPTIMIZERS(X) X(CFG_OPT_ADAM, "adam") X(CFG_OPT_SGD, "sgd")
#define SAMPLE_SIDES(X) X(CFG_SAMPLE_BOTH, "both") X(CFG_SAMPLE_SRC, "src") X(CFG_SAMPLE_TGT, "tgt")
#define VALID_METRICS(X) X(CFG_METRIC_BLEU, "bleu") X(CFG_METRIC_PPL, "ppl") X(CFG_METRIC_CHRF, "chrf")
#define LR_SCHEDULES(X) X(CFG_LR_CONSTANT, "constant") X(CFG_LR_RSQRT, "rsqrt")
#define GUIDED_COSTS(X) X(CFG_GUIDED_CE, "ce") X(CFG_GUIDED_MSE, "mse")

#define CONFIG_ENUM_MEMBER(name, text) name,
typedef enum { TOKENIZER_KINDS(CONFIG_ENUM_MEMBER) } CfgTokenizer;
typedef enum { SPM_MODEL_TYPES(CONFIG_ENUM_MEMBER) } CfgSpmModelType;
typedef enum { ATTN_STYLES(CONFIG_ENUM_MEMBER) } AttnStyle;
typedef enum { ATTN_SCORES(CONFIG_ENUM_MEMBER) } AttnScore;
typedef enum { ATTN_MODES(CONFIG_ENUM_MEMBER) } AttnMode;
typedef enum { BRIDGES(CONFIG_ENUM_MEMBER) } CfgBridge;
typedef enum { DEVICES(CONFIG_ENUM_MEMBER) } CfgDevice;
typedef enum { OPTIMIZERS(CONFIG_ENUM_MEMBER) } CfgOptimizer;
typedef enum { VALID_METRICS(CONFIG_ENUM_MEMBER) } CfgValidMetric;
typedef enum { SAMPLE_SIDES(CONFIG_ENUM_MEMBER) } CfgSampleSides;
typedef enum { LR_SCHEDULES(CONFIG_ENUM_MEMBER) } CfgLrSchedule;
typedef enum { GUIDED_COSTS(CONFIG_ENUM_MEMBER) } CfgGuidedCost;
#undef CONFIG_ENUM_MEMBER

/* String tables of the enums above (NULL-terminated), e.g. attn_score_names[ATTN_SCORE_DOT]. */
extern const char *const tokenizer_kind_names[];
extern const char *const spm_model_type_names[];
extern const char *const attn_style_names[];
extern const char *const attn_score_names[];
extern const char *const attn_mode_names[];
extern const char *const bridge_names[];
extern const char *const device_names[];
extern const char *const optimizer_names[];
extern const char *const valid_metric_names[];
extern const char *const sample_side_names[];
extern const char *const lr_schedule_names[];
extern const char *const guided_cost_names[];

#define CFG_MAX_LIST 32 /* items of a list key (the data.extra_* corpora) */

/* A number list key's value (data.extra_weight: in JSON a number or an
 * array of numbers; --set KEY=0.5 or KEY='[0.5,2]'): v[0..n). */
typedef struct {
    int n;
    double v[CFG_MAX_LIST];
} ConfigNumbers;

typedef struct {
    char *train_src, *train_tgt, *valid_src, *valid_tgt, *test_src, *test_tgt;
    char *train_align; /* "": no guided alignment */
    /* more training corpora: lists (config_list_len, config_list_item) of
     * as many items each; extra_tag has one item per corpus ("" for none)
     * or none at all */
    char *extra_src, *extra_tgt; /* "": none */
    char *extra_tag;             /* the token before every sentence of that corpus's source */
    int train_upsample;          /* train_src's pairs per epoch, each this many times */
    ConfigNumbers extra_weight;  /* one weight for every extra corpus (n 1), or one per corpus */
    char *spm_src_model, *spm_tgt_model; /* given SentencePiece models ("": trained by nmt prepare) */
    int tokenizer;      /* CfgTokenizer */
    int spm_vocab_size;
    int spm_model_type; /* CfgSpmModelType */
    bool spm_joint;
    double spm_character_coverage;
    int spm_max_sentences; /* 0: train SentencePiece on every sentence */
    int spm_threads;
    int word_vocab_size;
    int word_min_freq;
    int max_len;
    double spm_sample_alpha; /* 0: no subword sampling */
    int spm_sample_sides;    /* CfgSampleSides */
    char *cache_dir;
} DataConfig;

typedef struct {
    int style; /* AttnStyle */
    int score; /* AttnScore; never ATTN_SCORE_AUTO after loading */
    int mode;  /* AttnMode */
    int window;
    int heads;
    double dropout;
} AttentionConfig;

typedef struct {
    int emb_dim, hidden, enc_hidden;
    int enc_layers, dec_layers;
    bool bidirectional, input_feed, tie_embeddings, residual, layer_norm, right_to_left;
    bool share_embeddings; /* source and target embeddings one matrix */
    int bridge; /* CfgBridge */
    double dropout;
    double word_dropout_src, word_dropout_tgt; /* whole embeddings of positions */
    double init_range;
    AttentionConfig attention;
} ModelConfig;

typedef struct {
    int device;    /* CfgDevice */
    int gpu;       /* the CUDA device when one is used (0-based) */
    int threads;   /* 0: all cores */
    int optimizer; /* CfgOptimizer */
    double lr, adam_beta1, adam_beta2, adam_eps;
    int warmup_steps;
    int lr_schedule; /* CfgLrSchedule (0, constant, in a zeroed TrainConfig) */
    int rsqrt_steps; /* N of rsqrt; 0: warmup_steps */
    double lr_decay;
    int decay_start_epoch;
    int batch_sentences, batch_tokens;
    int accum_batches; /* batches per update */
    int epochs, max_steps;
    double clip_norm, label_smoothing;
    double ema_decay; /* 0: no moving average of the weights */
    double guided_alignment_weight; /* used with data.train_align */
    int guided_alignment_cost;      /* CfgGuidedCost */
    int seed;
    char *save_dir;
    char *init_from; /* "" : none (train.init_from) */
    int valid_every, patience, log_every;
    int valid_metric; /* CfgValidMetric */
    int keep_checkpoints;
    int max_bad_steps;
} TrainConfig;

/* decode.maxi_batch (and nmt translate --maxi-batch) at most */
#define CFG_MAX_MAXI_BATCH 1000
#define CFG_MAX_EXTRA_TAG 64 /* bytes of a data.extra_tag */

typedef struct {
    int beam;
    double length_penalty, coverage_penalty;
    double max_len_a;
    int max_len_b;
    int batch;
    int maxi_batch;
} DecodeConfig;

typedef struct {
    DataConfig data;
    ModelConfig model;
    TrainConfig train;
    DecodeConfig decode;
    char *config_path; /* the file it was loaded from, or NULL */
    char *base_dir;    /* the folder relative paths resolved against */
    /* which keys the file or an override gave explicitly (by key index) */
    unsigned char *explicit_keys;
} Config;

/* A list key's value (data.extra_src, data.extra_tgt, data.extra_tag: in
 * JSON a string or an array of strings; --set KEY='["a","b"]') holds its
 * items joined by '\n': config_list_len counts them (0 for NULL or ""),
 * config_list_item copies item i (nmt_free it; NULL on no memory). */
int config_list_len(const char *list);
char *config_list_item(const char *list, int i);

/* data.extra_weight of extra corpus k (0-based): the one weight given for
 * all, or the corpus's own. */
double config_extra_weight(const Config *cfg, int k);

/* Defaults for every key; paths resolve against base_dir ("." when NULL). */
NmtStatus config_init_defaults(Config *cfg, const char *base_dir);

/* The contradictions of data.spm_sample_alpha with the tokenizer keys:
 * checked at loading, or with train.init_from once its checkpoint has set
 * them (cli_load_training_config; the message then names train.init_from). */
NmtStatus config_check_subword_sampling(const Config *cfg);

/* Loads `path`, applies `overrides` ("key.path=value", as --set gives them,
 * value parsed as JSON when it parses, else taken as a string), validates.
 * Errors name the file and the key path (or line and column for syntax). */
NmtStatus config_load(const char *path, const char *const *overrides, int n_overrides,
                      Config *cfg);
/* 1 when the file or an override gave `path` ("decode.beam") explicitly,
 * 0 when it holds the default (or is not a key). */
int config_is_explicit(const Config *cfg, const char *path);
/* The same from JSON text in memory (`origin` names it in messages). */
NmtStatus config_load_string(const char *json, const char *origin, const char *base_dir,
                             const char *const *overrides, int n_overrides, Config *cfg);
void config_free(Config *cfg); /* frees the strings; the struct itself is the caller's */

/* The fully resolved config as pretty JSON (nmt_free it), NULL on no memory. */
char *config_to_json(const Config *cfg);
/* First key, other than the schedule keys that may change on resume, whose
 * value differs between a and b (its path), or NULL when none does. */
const char *config_first_fixed_difference(const Config *a, const Config *b);
/* The schedule keys whose values differ from a to b, as a new string
 * "train.lr 0.003 -> 0.001, train.max_steps 8 -> 16" (values as JSON;
 * "" when none); NULL on no memory. */
char *config_schedule_changes(const Config *a, const Config *b);
/* train.init_from's model: copies every model.* key that dst's file and
 * --set do not state from src (the checkpoint's config); of those stated,
 * one that differs from src's is returned (its path; NULL: none), unless
 * only training uses it (dropout, init_range: CFG_TRAINING_ONLY, which stay
 * dst's) or it is the window of global attention (which has none). The
 * keys before a returned one may have been copied. */
const char *config_take_model_keys(Config *dst, const Config *src);
/* Copies the keys that shape the tokenizers (data.tokenizer and its
 * settings: CFG_TOKENIZER) from src into dst; returns the first that
 * differed, or NULL. */
const char *config_take_tokenizer_keys(Config *dst, const Config *src);
/* Writes the key reference (markdown table: key, type, default, meaning). */
void config_write_reference(FILE *out);

/* Size of the attention key (encoder output) and query (decoder state). */
int config_key_size(const Config *cfg);
int config_query_size(const Config *cfg);

#endif
