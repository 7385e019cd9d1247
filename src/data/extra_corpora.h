/* extra_corpora.h: the training corpora beside data.train_src, one by one.
 * data.extra_src, data.extra_tgt and data.extra_tag are list keys
 * (config.h: a path or string, or a list of them); corpus k (0-based) is
 * item k of each, its tag NULL when data.extra_tag is not given or its item
 * is "". config.c has checked that the lists agree in length. */
#ifndef NMT_DATA_EXTRA_CORPORA_H
#define NMT_DATA_EXTRA_CORPORA_H

#include "common.h"
#include "config.h"

typedef struct {
    char *src, *tgt; /* the corpus's files */
    char *tag;       /* the token before every source sentence, or NULL */
} ExtraCorpus;

/* How many extra corpora cfg gives (0 to CFG_MAX_LIST). */
int extra_corpora_count(const Config *cfg);

/* Corpus k's files and tag, copied into *out (extra_corpus_free). */
NmtStatus extra_corpus_get(const Config *cfg, int k, ExtraCorpus *out);
void extra_corpus_free(ExtraCorpus *c); /* frees the members; NULL-safe */

/* The distinct tags of data.extra_tag in their first order, joined by
 * commas (SentencePiece's user_defined_symbols list), in *out (nmt_free
 * it); NULL when no corpus has a tag. */
NmtStatus extra_corpora_tags(const Config *cfg, char **out);

#endif
