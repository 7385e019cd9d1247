/* extra_corpora.c: data.extra_src/tgt/tag's corpora one by one
 * (extra_corpora.h). */
#include "data/extra_corpora.h"

#include <string.h>

int extra_corpora_count(const Config *cfg) { return config_list_len(cfg->data.extra_src); }

NmtStatus extra_corpus_get(const Config *cfg, int k, ExtraCorpus *out) {
    const DataConfig *d = &cfg->data;
    NMT_ASSERT(k >= 0 && k < extra_corpora_count(cfg) && config_list_len(d->extra_tgt) == extra_corpora_count(cfg));
    memset(out, 0, sizeof *out);
    out->src = config_list_item(d->extra_src, k);
    out->tgt = config_list_item(d->extra_tgt, k);
    int ok = out->src && out->tgt;
    if (ok && config_list_len(d->extra_tag) > k) {
        out->tag = config_list_item(d->extra_tag, k);
        ok = out->tag != NULL;
        if (ok && !out->tag[0]) {
            nmt_free(out->tag);
            out->tag = NULL;
        }
    }
    if (ok) return NMT_OK;
    extra_corpus_free(out);
    return nmt_fail_nomem("reading data.extra_src");
}

void extra_corpus_free(ExtraCorpus *c) {
    if (!c) return;
    nmt_free(c->src);
    nmt_free(c->tgt);
    nmt_free(c->tag);
    memset(c, 0, sizeof *c);
}

NmtStatus extra_corpora_tags(const Config *cfg, char **out) {
    *out = NULL;
    const char *tags = cfg->data.extra_tag;
    char *joined = NULL;
    for (int k = 0; k < config_list_len(tags); k++) {
        char *tag = config_list_item(tags, k);
        if (!tag) {
            nmt_free(joined);
            return nmt_fail_nomem("reading data.extra_tag");
        }
        /* a tag seen before: commas never appear in a tag (config.c) */
        int seen = 0;
        for (const char *at = joined; at && !seen && *at; at += strcspn(at, ",") + (at[strcspn(at, ",")] != 0))
            seen = strcspn(at, ",") == strlen(tag) && !strncmp(at, tag, strlen(tag));
        char *next = tag[0] && !seen ? nmt_asprintf("%s%s%s", joined ? joined : "", joined ? "," : "", tag) : NULL;
        int failed = tag[0] && !seen && !next;
        nmt_free(tag);
        if (failed) {
            nmt_free(joined);
            return nmt_fail_nomem("reading data.extra_tag");
        }
        if (next) {
            nmt_free(joined);
            joined = next;
        }
    }
    *out = joined;
    return NMT_OK;
}
