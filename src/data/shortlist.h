/* shortlist.h: the output-vocabulary shortlist of decoding (docs/decoding.md).
 *
 * Built once from the encoded training corpus by `nmt shortlist`: the
 * target tokens ranked by frequency, and for every source token the target
 * tokens that co-occur with it most, ranked by the Dice coefficient over
 * sentence pairs, 2 c(s,t) / (c(s) + c(t)), where c counts the pairs that
 * contain the token(s). For one batch to decode, the shortlist is the union
 * of the n_frequent most frequent target tokens, the per_source best
 * partners of every source token of the batch, EOS and UNK; the decoder
 * then scores only these rows of its output layer.
 *
 * File (UTF-8 text, written atomically; pieces as the tokenizers spell
 * them, so a file fits any model with the same vocabularies):
 *   nmt-shortlist 2 F=<F lines> L=<L lines>
 *   F <TAB> target piece <TAB> pairs containing it       (most frequent first)
 *   L <TAB> source piece <TAB> target piece <TAB> Dice   (per source, best first)
 * every line ending with a newline. Version 1 files (header "nmt-shortlist 1",
 * no counts) still load. Loading checks every line and names the file and
 * line of a problem: an unknown piece, a bad number, a missing or unknown
 * header, a last line without its newline or fewer (more) lines than the
 * header counts: a file cut off. */
#ifndef NMT_DATA_SHORTLIST_H
#define NMT_DATA_SHORTLIST_H

#include <stdint.h>

#include "common.h"
#include "data/dataset.h"
#include "data/tokenizer.h"

typedef struct Shortlist Shortlist;

/* From a training corpus of V_s source and V_t target ids: every target id
 * by frequency and the best `keep_per_source` partners of each source id
 * (pairs seen at least twice). */
NmtStatus shortlist_build(const Dataset *train, int V_s, int V_t, int keep_per_source, Shortlist **out);
NmtStatus shortlist_save(const Shortlist *sl, const Tokenizer *src_tok, const Tokenizer *tgt_tok, const char *path);
NmtStatus shortlist_load(const char *path, const Tokenizer *src_tok, const Tokenizer *tgt_tok, Shortlist **out);
void shortlist_free(Shortlist *sl); /* NULL is a no-op */

/* Sizes stored: frequent target ids, and partners of the best-covered source. */
int shortlist_n_frequent(const Shortlist *sl);
int shortlist_max_per_source(const Shortlist *sl);

/* The shortlist of a batch whose source ids are src[0..n): ascending ids
 * into out (room for V_t), without PAD and BOS, with EOS and UNK; returns
 * their count. */
int shortlist_select(const Shortlist *sl, int n_frequent, int per_source, const int32_t *src, int64_t n,
                     int32_t *out);

#endif
