/* prepare.h: the data pipeline behind `nmt prepare` and the start of
 * `nmt train`: train the tokenizers (or word vocabularies) on the training
 * corpora (data.train_* and data.extra_*; or take those of
 * train.init_from's checkpoint: fine-tuning, or data.spm_*_model's files),
 * encode the training and validation corpora, and keep the result in a
 * cache folder (data.cache_dir) that is rebuilt when stale.
 *
 * Cache folder:
 *   manifest.txt            what the cache was built from: every tokenizer
 *                           setting and, per corpus file, path, size and
 *                           mtime; written last, so an interrupted build
 *                           is never taken for a complete one
 *   src.tok, tgt.tok        the tokenizers (.model files of SentencePiece,
 *                           usable with spm_encode; or word vocabularies);
 *                           with data.spm_joint both are the same model
 *   train.bin, valid.bin    the encoded corpora (dataset.h)
 *   train.aln               with data.train_align: the token links of the
 *                           pairs of train.bin (guided_align.h)
 *   extra.bin               with data.extra_src: the encoded pairs of its
 *   extra-2.bin ...         first corpus (second, ...), every source line
 *                           read with the corpus's data.extra_tag and a
 *                           space before it
 *   summary.txt             what was kept and skipped, printed on every use
 * The cache is stale when manifest.txt differs from the one the current
 * config and files give; the log names the first setting that changed.
 * Reading, checking and building it happen under the folder's lock
 * (file_lock_dir): a second process on the same cache_dir waits, saying
 * so, and then finds the first's complete cache (configs may share one
 * cache_dir). */
#ifndef NMT_DATA_PREPARE_H
#define NMT_DATA_PREPARE_H

#include "config.h"
#include "data/corpus.h"
#include "data/dataset.h"
#include "data/guided_align.h"
#include "data/tokenizer.h"

typedef struct {
    Tokenizer *src_tok, *tgt_tok;
    Dataset *train;       /* pairs within data.max_len tokens */
    Dataset *valid;       /* NULL without a validation set; not length-filtered */
    GuidedAlignments *train_align; /* data.train_align's links of train's pairs; NULL without */
    Dataset *extra[CFG_MAX_LIST]; /* extra[0..n_extra): the pairs of data.extra_src/tgt's corpora within
                                     data.max_len (sources begin with their data.extra_tag) */
    int n_extra;                  /* 0 without data.extra_src */
    CorpusStats train_stats, valid_stats; /* counts of this build (zero when cached) */
    CorpusStats extra_stats[CFG_MAX_LIST];
    char extra_name[CFG_MAX_LIST][24];    /* the extra corpora's names in the counts: "extra", "extra 2" */
    int from_cache;       /* 1 when the cache was up to date */
    char *summary;        /* the kept/skipped lines, one per corpus */
} PreparedData;

/* Makes sure the cache of cfg is up to date (building it when missing or
 * stale, or always with `force`) and loads it into *out. Logs the summary
 * lines. Errors name the file and line, or the config key. */
NmtStatus prepare_data(const Config *cfg, int force, PreparedData *out);
void prepared_data_free(PreparedData *p); /* frees the members; NULL-safe */

/* The manifest text for cfg as it is now (nmt_free it); NULL on failure. */
char *prepare_manifest(const Config *cfg);

#endif
