/* fuzz_config.c: libFuzzer target for config_load_string (src/config.c).
 *
 * Input: the JSON text, then up to 8 --set overrides, all separated by NUL
 * bytes. An override that starts with '@' names a real key by its next byte
 * (keys[byte % n], the list `nmt config --doc` prints) and the rest is the
 * value, so the fuzzer reaches every key without guessing its path; any
 * other override is used as it is ("KEY=VALUE" or garbage).
 *
 * Properties:
 *   - no crash, leak or undefined behaviour, whatever the bytes;
 *   - a failure has a message; a config error names the origin or the --set;
 *   - a loaded config printed by config_to_json loads again, compares equal
 *     (config_first_fixed_difference) and prints the same text;
 *   - with one allocation failing (fuzz_with_alloc_failure) the loader
 *     returns NMT_ERR_NOMEM (or its normal status) and frees everything. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz_util.h"

enum { MAX_OVERRIDES = 8 };

static char **keys;
static int n_keys;

/* The key paths from the reference table ("| `data.train_src` | ..."). */
static void load_keys(void) {
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) abort();
    config_write_reference(mem);
    fclose(mem);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "| `", 3) != 0) continue;
        char *end = strchr(line + 3, '`');
        if (!end) continue;
        keys = realloc(keys, (size_t)(n_keys + 1) * sizeof *keys);
        keys[n_keys++] = strndup(line + 3, (size_t)(end - line - 3));
    }
    free(text);
    if (n_keys < 10) abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    nmt_log_quiet(1);
    load_keys();
    return 0;
}

typedef struct {
    const char *json;
    const char *const *overrides;
    int n_overrides;
} Input;

static NmtStatus run(void *ctx) {
    const Input *in = ctx;
    Config cfg;
    NmtStatus st = config_load_string(in->json, "fuzz.json", "/fuzz", in->overrides,
                                      in->n_overrides, &cfg);
    if (st != NMT_OK) {
        const char *msg = nmt_error_message();
        FUZZ_CHECK(msg[0] != '\0', "status %s without a message", nmt_status_name(st));
        if (st == NMT_ERR_CONFIG || st == NMT_ERR_USAGE)
            FUZZ_CHECK(strstr(msg, "fuzz.json") || strstr(msg, "--set"),
                       "config error that names neither the file nor the --set: %s", msg);
        return st;
    }
    /* the resolved config round-trips */
    char *text = config_to_json(&cfg);
    if (!text) { /* only when an allocation failed */
        config_free(&cfg);
        return nmt_fail_nomem("printing the config");
    }
    Config again;
    NmtStatus st2 = config_load_string(text, "resolved.json", "/elsewhere", NULL, 0, &again);
    if (st2 == NMT_ERR_NOMEM) {
        nmt_free(text);
        config_free(&cfg);
        return st2;
    }
    FUZZ_CHECK(st2 == NMT_OK, "the resolved config does not load: %s\n%s", nmt_error_message(),
               text);
    const char *diff = config_first_fixed_difference(&cfg, &again);
    FUZZ_CHECK(diff == NULL, "key %s differs after the round trip", diff);
    char *text2 = config_to_json(&again);
    if (text2) FUZZ_CHECK(strcmp(text, text2) == 0, "the resolved config prints differently");
    nmt_free(text2);
    nmt_free(text);
    config_free(&again);
    config_free(&cfg);
    return NMT_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* split into NUL-terminated parts */
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    const char *parts[1 + MAX_OVERRIDES];
    int n_parts = 0;
    size_t start = 0;
    for (size_t i = 0; i <= size && n_parts < 1 + MAX_OVERRIDES; i++) {
        if (i == size || buf[i] == '\0') {
            parts[n_parts++] = buf + start;
            start = i + 1;
        }
    }
    char *made[MAX_OVERRIDES] = {0};
    const char *overrides[MAX_OVERRIDES];
    int n_overrides = 0;
    for (int p = 1; p < n_parts; p++) {
        const char *o = parts[p];
        if (o[0] == '@' && o[1] != '\0') {
            const char *key = keys[(unsigned char)o[1] % (unsigned)n_keys];
            size_t n = strlen(key) + strlen(o + 2) + 2;
            made[n_overrides] = malloc(n);
            if (!made[n_overrides]) break;
            snprintf(made[n_overrides], n, "%s=%s", key, o + 2);
            o = made[n_overrides];
        }
        overrides[n_overrides++] = o;
    }
    Input in = {parts[0], overrides, n_overrides};
    fuzz_with_alloc_failure(run, &in, fuzz_hash(data, size));
    for (int i = 0; i < MAX_OVERRIDES; i++) free(made[i]);
    free(buf);
    return 0;
}
