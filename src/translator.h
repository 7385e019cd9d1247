/* translator.h: a checkpoint (or an ensemble of checkpoints) as a line
 * translator, shared by `nmt translate` and `nmt eval --model`: the decoding
 * options and their command-line parsing, model loading, batching, greedy or
 * beam decoding, rendering (detokenization, UNK replacement, n-best lines),
 * attention output and the progress line. Exactly one output line per input
 * line, in input order (nbest lines per input line with --nbest N > 1),
 * although lines are decoded longest first within a block of --maxi-batch
 * batches (not with attention output, written as it is decoded), whatever
 * the line holds: an empty line or invalid UTF-8 gives an empty line (the
 * latter with a warning naming the line), an over-long line is truncated to
 * max_src tokens with a warning.
 *
 *   TranslatorOptions o;
 *   translator_options_init(&o);
 *   ... translator_take_option(argc, argv, &i, &o) in the option loop ...
 *   Translator *tr;
 *   translator_open(&o, &tr);                              // loads the models
 *   translator_translate_file(tr, NULL, stdout, NULL);     // stdin -> stdout
 *   translator_free(tr);
 *
 * A new decoding option is a field of TranslatorOptions, a case in
 * translator_take_option and a line of translator_options_help.
 * `nmt score` (src/cmd_score.c) reads its checkpoints as the translator
 * does, through translator_read_checkpoint. */
#ifndef NMT_TRANSLATOR_H
#define NMT_TRANSLATOR_H

#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "alignment.h"
#include "config.h"
#include "data/tokenizer.h"
#include "model/params.h"
#include "train/checkpoint.h"

/* --model files at most; --batch at most (a config's larger decode.batch is
 * taken as this) */
enum { TRANSLATOR_MAX_MODELS = 16, TRANSLATOR_MAX_BATCH = 4096 };

/* Progress line on stderr (lines, sentences/s, target tokens/s). */
enum { TRANSLATOR_PROGRESS_AUTO = -1, TRANSLATOR_PROGRESS_OFF = 0, TRANSLATOR_PROGRESS_ON = 1 };
/* Streaming: decode what has been read whenever more input would have to be
 * waited for (`nmt translate --stream`). */
enum { TRANSLATOR_STREAM_AUTO = -1, TRANSLATOR_STREAM_OFF = 0, TRANSLATOR_STREAM_ON = 1 };

typedef struct {
    const char *models[TRANSLATOR_MAX_MODELS]; /* --model: several make an ensemble */
    int n_models;
    int batch;               /* --batch: sentences per decoder batch; 0: the model's decode.batch */
    int maxi_batch;          /* --maxi-batch: batches read ahead and decoded longest first;
                                0: the model's decode.maxi_batch */
    int max_src;             /* --max-src-len: 0: twice data.max_len, at least 100 */
    int beam;                /* --beam: 0: the model's decode.beam; 1 is greedy */
    int nbest;               /* --nbest: 0 or 1: one line per input line */
    double length_penalty;   /* --length-penalty (GNMT alpha); NAN: the model's */
    double coverage_penalty; /* --coverage-penalty (beta); NAN: the model's */
    double max_len_a;        /* --max-len-a: output at most a * source length + b tokens;
                                NAN: the model's decode.max_len_a */
    int max_len_b;           /* --max-len-b: -1: the model's decode.max_len_b */
    int threads;             /* --threads: CPU threads for decoding; 0: all cores */
    int device;              /* --device: CfgDevice */
    int gpu;                 /* --gpu: the CUDA device when one is used */
    int replace_unk;         /* --replace-unk (also set by --unk-dict) */
    const char *unk_dict;    /* --unk-dict FILE: lines 'source<TAB>target' */
    const char *attention_out; /* --attention-out FILE: JSON lines of attention matrices */
    const char *attention_svg; /* --attention-svg DIR: one heatmap per input line */
    AlignOptions alignment;  /* --alignment, --alignment-units: each output line gets ' ||| ' and
                                its word alignment (alignment.h) */
    int progress;            /* --progress / --no-progress: TRANSLATOR_PROGRESS_*; default AUTO:
                                on when stderr is a terminal */
    int stream;              /* translate's --stream / --no-stream: TRANSLATOR_STREAM_*; default
                                AUTO: on when standard input is a terminal. Before each read
                                of standard input that would wait, the lines read so far are
                                decoded and their output written and flushed (with a FILE
                                sink only; a named file is read in whole blocks) */
    const char *shortlist;   /* --shortlist FILE (`nmt shortlist`): score only likely output tokens */
    int shortlist_frequent;  /* --shortlist-frequent N: most frequent target tokens always in */
    int shortlist_per_source; /* --shortlist-per-source K: best partners of each source token */
    int shortlist_tuned;      /* either of the two was given (they need --shortlist) */
    int sample;              /* --sample K: draw each token among the K likeliest (top-k
                                sampling, 1..SEQ2SEQ_MAX_SAMPLE_K) instead of searching; 0: search */
    double temperature;      /* --temperature T > 0 of --sample; NAN: not given (1) */
    uint64_t seed;           /* --seed of --sample: line n's draws come from (seed, n) */
    int seed_given;          /* --seed was given (it needs --sample) */
} TranslatorOptions;

/* The defaults: everything from the model, progress AUTO. */
void translator_options_init(TranslatorOptions *o);
/* If argv[*i] is one of the decoding options above, takes it (advancing *i
 * past its value) and returns 1; returns 0 for any other argument; returns
 * -1 (NMT_ERR_USAGE, message naming the option and the value) on a missing
 * or bad value or too many --model files. */
/* Takes `--model FILE` at argv[*i] into models[(*n_models)++] (at most
 * TRANSLATOR_MAX_MODELS): 1 taken, 0 not this option, -1 an error (set).
 * translate's and score's --model. */
int translator_take_model(int argc, char **argv, int *i, const char **models, int *n_models);
int translator_take_option(int argc, char **argv, int *i, TranslatorOptions *o);
/* The --help lines of the options translator_take_option takes. */
extern const char translator_options_help[];
/* Takes the settings that a config (`nmt translate --config`, with its
 * --set) gives explicitly in its decode section, for those options still at
 * "the model's" (beam, length and coverage penalties, output length limits,
 * batch, maxi-batch): the command line's options first, then what the
 * config file or --set says, then the model's own (the decode section it
 * was trained with; a key the config leaves at its default is the model's). */
void translator_options_from_config(TranslatorOptions *o, const Config *cfg);

/* Output lines gathered in memory (instead of written to a FILE). */
typedef struct {
    char **lines; /* (n) each a NUL-terminated string, no '\n' */
    int64_t n, cap;
} TranslatorLines;
void translator_lines_free(TranslatorLines *l); /* frees the strings and the array; l may be NULL */

typedef struct Translator Translator;

/* Loads o->models (at least one; an ensemble must share the first model's
 * vocabularies), the --unk-dict, creates the --attention-svg directory and
 * opens --attention-out. The options are copied. Errors name the file or the
 * option: NMT_ERR_USAGE (no model, vocabularies differ), NMT_ERR_IO,
 * NMT_ERR_FORMAT (a corrupt checkpoint, a bad dictionary line). */
NmtStatus translator_open(const TranslatorOptions *o, Translator **out);
void translator_free(Translator *tr); /* NULL is a no-op */

/* Translates every line of `path` (NULL or "-": standard input; plain text
 * or gzip), reading in batches and writing as it goes: to `out` when it is
 * not NULL, else appended to `lines`. Warnings name the file and line.
 * Streaming (o->stream) applies to standard input written to `out`: the
 * lines read so far are decoded, written and flushed whenever standard
 * input has no byte waiting, and the call then blocks in the read (no CPU
 * spent while it waits); a line's first part without its newline waits
 * for the rest. Otherwise whole blocks of batch x maxi-batch lines. */
NmtStatus translator_translate_file(Translator *tr, const char *path, FILE *out, TranslatorLines *lines);
/* The same for n lines in memory (NUL-terminated, without '\n'); `name`
 * names them in warnings ("NAME:LINE: ..."). */
NmtStatus translator_translate_lines(Translator *tr, const char *name, const char *const *in, int64_t n, FILE *out,
                                     TranslatorLines *lines);

/* Reads the checkpoint `path` as decoding (and `nmt score`) uses it: its
 * weights (checked finite, and counted against the layout of its config's
 * model) into *ck, its config into *cfg, that model's dimensions into *d.
 * With *src_tok and *tgt_tok NULL (the first --model) its tokenizers are
 * made into them (the caller frees them); otherwise (a later member of an
 * ensemble) its tokenizers must be the same as those, else NMT_ERR_USAGE
 * naming `path`. Errors name the file; on failure *ck and *cfg hold
 * nothing and tokenizers made here are freed (and NULL again). */
NmtStatus translator_read_checkpoint(const char *path, Tokenizer **src_tok, Tokenizer **tgt_tok, Checkpoint *ck,
                                     Config *cfg, ModelDims *d);
/* The default --max-src-len of a model trained with cfg: twice
 * data.max_len, at least 100. */
int translator_default_max_src(const Config *cfg);

/* The n-best size in effect (1: one output line per input line). */
int translator_nbest(const Translator *tr);

#endif
