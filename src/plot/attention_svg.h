/* attention_svg.h: an attention heatmap of one sentence as SVG: source
 * tokens along the top, output tokens down the left side, each weight a
 * shade of blue (white 0, dark 1), with the weight printed in cells >= 0.1. */
#ifndef NMT_PLOT_ATTENTION_SVG_H
#define NMT_PLOT_ATTENTION_SVG_H

#include "common.h"

/* weights (n_tgt, n_src), row t the attention of output token t. Written
 * atomically to path; errors name it. */
NmtStatus attention_svg_write(const char *path, const char *title, const char *const *src, int n_src,
                              const char *const *tgt, int n_tgt, const float *weights);

#endif
