/* guided_align.h: the word alignments of guided alignment training
 * (data.train_align, docs/model.md "Guided alignment"): reading a line of
 * Pharaoh pairs, mapping word pairs to token pairs, the cache file that
 * holds them beside train.bin, and the rows a batch hands the model.
 *
 * Words are the line split at spaces (word_space_len: ASCII and Unicode
 * spaces), as `nmt translate --alignment` counts them and as fast_align
 * and eflomal see a corpus given to them as it is. A source token and a
 * target token are linked when a word of the one is aligned to a word of
 * the other (the words a token covers: alignment_token_words). */
#ifndef NMT_DATA_GUIDED_ALIGN_H
#define NMT_DATA_GUIDED_ALIGN_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "data/dataset.h"
#include "data/tokenizer.h"

/* Token links of every pair of a dataset: pair i's links are
 * links[2k] (source token), links[2k + 1] (target token, text order) for
 * offset[i] <= k < offset[i + 1], in target then source order, none twice. */
typedef struct {
    int64_t n_pairs;
    int64_t *offset; /* (n_pairs + 1) */
    int32_t *links;  /* (2 * offset[n_pairs]) */
    int64_t capacity_links;
} GuidedAlignments;

NmtStatus guided_alignments_create(GuidedAlignments **out);
void guided_alignments_free(GuidedAlignments *g); /* NULL is a no-op */
/* Appends the next pair's n links (src[k], tgt[k]); copies them. */
NmtStatus guided_alignments_add(GuidedAlignments *g, const int32_t *pairs, int n);

/* Binary file: "NMTALN\0\x01", n_pairs, n_links (int64 little endian),
 * offset, links, then a CRC32 of everything before it; written atomically.
 * Loading checks it all and names the file on any mismatch. */
NmtStatus guided_alignments_save(const GuidedAlignments *g, const char *path);
NmtStatus guided_alignments_load(const char *path, GuidedAlignments **out);

/* Target tokens with at least one link, over all pairs. */
int64_t guided_alignments_aligned_targets(const GuidedAlignments *g);

/* NMT_ERR_FORMAT naming `path` unless g holds d's pairs and every link
 * names a token of its pair (guards a cache that does not belong together). */
NmtStatus guided_alignments_check(const GuidedAlignments *g, const Dataset *d, const char *path);

/* Parses one line of Pharaoh pairs "i-j i-j ..." (0-based source word i,
 * target word j; any spaces between pairs; an empty line has none) into
 * *pairs (2 ints a pair, grown as needed: nmt_free it) and *n pairs. A pair
 * that is not two decimal numbers joined by '-', or names a word past
 * n_src_words or n_tgt_words, is NMT_ERR_FORMAT with a message that names
 * the pair and the counts (the caller adds the file and line). */
NmtStatus guided_align_parse_line(const char *line, size_t len, int n_src_words, int n_tgt_words,
                                  int32_t **pairs, int *n, int *cap);

/* The words of text[0..len), split at spaces. */
int guided_align_count_words(const char *text, size_t len);

/* The token links of one pair: word pairs (n_word_pairs of them, as
 * parsed) through each side's token spans (alignment_token_words) into
 * token pairs, into *links (2 ints a link, grown as needed) and *n_links. */
NmtStatus guided_align_token_links(const int32_t *word_pairs, int n_word_pairs, const char *src, size_t src_len,
                                   const TokenSpan *src_spans, int n_src, const char *tgt, size_t tgt_len,
                                   const TokenSpan *tgt_spans, int n_tgt, int32_t **links, int *n_links, int *cap);

/* The rows of Batch.align (T, B, S) for column b of a batch, pair `pair`:
 * row (t, b) gets 1 / k at each of the k source tokens target token t is
 * linked to (t counted in the batch's order: reversed tokens of a
 * right-to-left target at T_b - 1 - t, T_b its target tokens), 0
 * elsewhere; the caller zeroed the rows first. */
void guided_align_fill_column(const GuidedAlignments *g, int64_t pair, int b, int B, int S, int tgt_tokens,
                              bool reverse, float *rows);

#endif
