/* demo_corpus.h: the generated demo translation task (docs/demo-corpus.md).
 *
 * A toy source language is translated into a small English-like target
 * language by fixed rules: a dictionary of a few hundred words, adjectives
 * after the noun in the source and before it (mirrored) in the target,
 * verb-final source clauses against subject-verb-object target clauses,
 * postpositions against prepositions, subordinate clause first in the source
 * and last in the target, plural/past/negation particles that merge into or
 * split from target words, a/an chosen by the next target word, subject-verb
 * agreement across the clause, and numbers copied. Everything is a pure
 * function of the seed: the same spec gives byte-identical text.
 *
 * Splits: test, valid and train are drawn from separate Rng streams of the
 * seed (in that order) and no source sentence occurs twice in the whole
 * corpus, so the splits share nothing, and the test and valid sets do not
 * change when only the train size changes. */
#ifndef NMT_DEMO_CORPUS_H
#define NMT_DEMO_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

enum { DEMO_TRAIN = 0, DEMO_VALID = 1, DEMO_TEST = 2, DEMO_N_SPLITS = 3 };

typedef struct {
    uint64_t seed;
    int64_t n_pairs[DEMO_N_SPLITS]; /* indexed by DEMO_TRAIN/VALID/TEST */
    int min_words, max_words;       /* both sides of every pair lie in this range */
} DemoCorpusSpec;

/* One split: lines of text, each ended by '\n' (exactly the file content).
 * Line i of src is src[src_off[i] .. src_off[i+1] - 1) (without the '\n'). */
typedef struct {
    int64_t n;
    char *src, *tgt;           /* (src_off[n]), (tgt_off[n]) bytes */
    int64_t *src_off, *tgt_off; /* (n + 1) */
} DemoText;

typedef struct {
    DemoText split[DEMO_N_SPLITS];
} DemoCorpus;

/* seed 1, 20000/500/500 pairs, 3..25 words. */
void demo_corpus_spec_default(DemoCorpusSpec *spec);
/* "train", "valid", "test" */
const char *demo_corpus_split_name(int split);

/* Generates the corpus (owned by the caller: demo_corpus_free). Fails with
 * NMT_ERR_CONFIG on a bad spec (negative sizes, min_words < 3, max_words <
 * min_words or > 200), NMT_ERR_RUNTIME when the requested number of distinct
 * sentences cannot be found, NMT_ERR_NOMEM. */
NmtStatus demo_corpus_generate(const DemoCorpusSpec *spec, DemoCorpus **out);
void demo_corpus_free(DemoCorpus *c); /* NULL is a no-op */

/* Writes DIR/{train,valid,test}.{src,tgt} (with ".gz" and gzip-compressed
 * when gzip != 0; the gzip header carries no time stamp, so the bytes are
 * reproducible too). Creates DIR (and missing parents). NMT_ERR_IO names the
 * path that failed. */
NmtStatus demo_corpus_write(const DemoCorpus *c, const char *dir, int gzip);

/* Translates one source sentence (words separated by single spaces, no
 * newline) by parsing it with the source grammar and applying the rules, into
 * out (cap bytes, NUL-terminated). NMT_ERR_FORMAT names the word that does not
 * fit the grammar; NMT_ERR_RUNTIME when out is too small. The generator's
 * targets must equal this function of their sources. */
NmtStatus demo_corpus_translate(const char *src_line, char *out, size_t cap);

/* Concept ids of the content words of a line (source side when
 * target_side == 0), in order of appearance: nouns, adjectives, verbs,
 * adverbs, pre/postpositions, conjunctions and numbers get the same id on
 * both sides whatever their form (plural, past, multi-word); articles,
 * particles and auxiliaries are skipped. Multi-word target forms are matched
 * longest first. Returns the number of ids written (at most cap), or -1 when a
 * word is not in the lexicon. */
int demo_corpus_concepts(const char *line, int target_side, int32_t *out, int cap);

#endif
