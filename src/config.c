/* config.c: loading, validating and printing the JSON config. The keys are
 * the rows of config_keys.h; this file holds the machinery that reads them:
 * type and range checks, unknown-key detection with a suggestion, --set
 * overrides, path resolution, cross-key checks, JSON output and the
 * markdown reference. */
#include "config.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config_keys.h"

#define CONFIG_ENUM_NAME(name, text) text,
const char *const tokenizer_kind_names[] = {TOKENIZER_KINDS(CONFIG_ENUM_NAME) NULL};
const char *const spm_model_type_names[] = {SPM_MODEL_TYPES(CONFIG_ENUM_NAME) NULL};
const char *const attn_style_names[] = {ATTN_STYLES(CONFIG_ENUM_NAME) NULL};
const char *const attn_score_names[] = {ATTN_SCORES(CONFIG_ENUM_NAME) NULL};
const char *const attn_mode_names[] = {ATTN_MODES(CONFIG_ENUM_NAME) NULL};
const char *const bridge_names[] = {BRIDGES(CONFIG_ENUM_NAME) NULL};
const char *const device_names[] = {DEVICES(CONFIG_ENUM_NAME) NULL};
const char *const optimizer_names[] = {OPTIMIZERS(CONFIG_ENUM_NAME) NULL};
const char *const valid_metric_names[] = {VALID_METRICS(CONFIG_ENUM_NAME) NULL};
const char *const lr_schedule_names[] = {LR_SCHEDULES(CONFIG_ENUM_NAME) NULL};
const char *const guided_cost_names[] = {GUIDED_COSTS(CONFIG_ENUM_NAME) NULL};
const char *const sample_side_names[] = {SAMPLE_SIDES(CONFIG_ENUM_NAME) NULL};
#undef CONFIG_ENUM_NAME

typedef enum { CFG_INT, CFG_FLOAT, CFG_BOOL, CFG_STRING, CFG_PATH, CFG_ENUM } ConfigType;
enum { CFG_LO_OPEN = 1, CFG_HI_OPEN = 2 };
enum { CFG_SCHEDULE = 1, CFG_OPTIONAL = 2, CFG_SINGLE = 4, CFG_TOKENIZER = 8, CFG_TRAINING_ONLY = 16, CFG_LIST = 32 };
#define NOLIMIT NAN

typedef struct {
    const char *path;
    size_t offset;
    ConfigType type;
    const char *default_json;
    double lo, hi;
    int range_flags;
    const char *const *choices;
    int flags;
    const char *doc;
} ConfigKey;

#define CONFIG_KEY_ROW(path, field, type, def, lo, hi, rflags, choices, flags, doc) \
    {path, offsetof(Config, field), type, def, lo, hi, rflags, choices, flags, doc},
static const ConfigKey config_keys[] = {CONFIG_KEYS(CONFIG_KEY_ROW)};
#undef CONFIG_KEY_ROW
enum { N_CONFIG_KEYS = NMT_ARRAY_LEN(config_keys) };

/* Objects that hold keys rather than values. */
static const char *const config_sections[] = {"data", "model", "model.attention", "train", "decode"};

static const char *type_name(const ConfigKey *key) {
    if (key->flags & CFG_LIST)
        return key->type == CFG_PATH    ? "path or list of paths"
               : key->type == CFG_FLOAT ? "number or list of numbers"
                                        : "string or list of strings";
    switch (key->type) {
    case CFG_INT: return "integer";
    case CFG_FLOAT: return "number";
    case CFG_BOOL: return "boolean";
    case CFG_STRING: return "string";
    case CFG_PATH: return "path";
    case CFG_ENUM: return "string";
    }
    return "?";
}

static const char *json_kind(const cJSON *item) {
    if (cJSON_IsNumber(item)) return "a number";
    if (cJSON_IsString(item)) return "a string";
    if (cJSON_IsBool(item)) return "a boolean";
    if (cJSON_IsNull(item)) return "null";
    if (cJSON_IsArray(item)) return "an array";
    if (cJSON_IsObject(item)) return "an object";
    return "an invalid value";
}

static void *field_ptr(Config *cfg, const ConfigKey *key) { return (char *)cfg + key->offset; }
static const void *field_cptr(const Config *cfg, const ConfigKey *key) {
    return (const char *)cfg + key->offset;
}

static const ConfigKey *find_key(const char *path) {
    for (int i = 0; i < N_CONFIG_KEYS; i++)
        if (!strcmp(config_keys[i].path, path)) return &config_keys[i];
    return NULL;
}

static int is_section(const char *path) {
    for (size_t i = 0; i < NMT_ARRAY_LEN(config_sections); i++)
        if (!strcmp(config_sections[i], path)) return 1;
    return 0;
}

/* Edit distance, for "did you mean" suggestions. */
static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

/* The known key or section closest to `path`, when it is close enough. */
static const char *suggest(const char *path) {
    const char *best = NULL;
    int best_d = 4;
    for (int i = 0; i < N_CONFIG_KEYS; i++) {
        int d = edit_distance(path, config_keys[i].path);
        if (d < best_d) best_d = d, best = config_keys[i].path;
    }
    for (size_t i = 0; i < NMT_ARRAY_LEN(config_sections); i++) {
        int d = edit_distance(path, config_sections[i]);
        if (d < best_d) best_d = d, best = config_sections[i];
    }
    return best;
}

static NmtStatus unknown_key(const char *path) {
    const char *hint = suggest(path);
    if (hint) return nmt_fail(NMT_ERR_CONFIG, "%s: unknown key (did you mean %s?)", path, hint);
    return nmt_fail(NMT_ERR_CONFIG, "%s: unknown key (`nmt config --doc` lists the keys)", path);
}

/* v as the shortest text that reads back as v (not rounded as %g would:
 * 2147483648, not 2.14748e+09) */
static void format_number(char *buf, size_t n, double v) {
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(buf, n, "%.0f", v);
        return;
    }
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, n, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
}

/* The bounds of an integer key: its table's, and the int's where the table
 * has none (NOLIMIT). */
static double int_lo(const ConfigKey *key) { return isnan(key->lo) ? -(double)INT_MAX : key->lo; }
static double int_hi(const ConfigKey *key) { return isnan(key->hi) ? (double)INT_MAX : key->hi; }

/* "must be >= 1", "must be in [0, 1)" ... for a key's range. With
 * int_bounds, an integer key's missing bound is the int's ("must be in
 * [0, 2147483647]"). */
static void range_text(const ConfigKey *key, int int_bounds, char *buf, size_t n) {
    char lo[32], hi[32];
    double key_lo = key->lo, key_hi = key->hi;
    if (int_bounds && key->type == CFG_INT) key_lo = int_lo(key), key_hi = int_hi(key);
    format_number(lo, sizeof lo, key_lo);
    format_number(hi, sizeof hi, key_hi);
    int lo_open = key->range_flags & CFG_LO_OPEN, hi_open = key->range_flags & CFG_HI_OPEN;
    if (!isnan(key_lo) && !isnan(key_hi))
        snprintf(buf, n, "must be in %c%s, %s%c", lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']');
    else if (!isnan(key_lo))
        snprintf(buf, n, "must be %s %s", lo_open ? ">" : ">=", lo);
    else if (!isnan(key_hi))
        snprintf(buf, n, "must be %s %s", hi_open ? "<" : "<=", hi);
    else
        buf[0] = '\0';
}

static int in_range(const ConfigKey *key, double v) {
    if (!isnan(key->lo) && (key->range_flags & CFG_LO_OPEN ? v <= key->lo : v < key->lo)) return 0;
    if (!isnan(key->hi) && (key->range_flags & CFG_HI_OPEN ? v >= key->hi : v > key->hi)) return 0;
    return 1;
}

/* Removes "." parts and "name/.." pairs from a path, in place (lexically:
 * the folders need not exist). Leading ".." of a relative path stay. */
static void normalize_path(char *path) {
    size_t capacity = strlen(path) + 1; /* strtok_r below cuts the string */
    int absolute = path[0] == '/';
    char *parts[512];
    int n = 0;
    for (char *save = NULL, *part = strtok_r(path, "/", &save); part;
         part = strtok_r(NULL, "/", &save)) {
        if (!strcmp(part, ".")) continue;
        if (!strcmp(part, "..") && n > 0 && strcmp(parts[n - 1], "..")) {
            n--;
            continue;
        }
        if (!strcmp(part, "..") && absolute) continue; /* "/.." is "/" */
        if (n < (int)NMT_ARRAY_LEN(parts)) parts[n++] = part;
    }
    char out[4096];
    size_t len = 0;
    out[0] = '\0';
    if (absolute) {
        out[len++] = '/';
        out[len] = '\0';
    }
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(out + len, sizeof out - len, "%s%s", i ? "/" : "", parts[i]);
    if (len == 0) snprintf(out, sizeof out, ".");
    snprintf(path, capacity, "%s", out); /* fits: never longer than the input, but "" -> "." is cut */
}

/* `value` made absolute against `base_dir` and normalized (newly allocated). */
static char *resolve_path(const char *value, const char *base_dir) {
    char *path;
    if (value[0] == '/' || !base_dir || !base_dir[0] || !strcmp(base_dir, "."))
        path = nmt_strdup(value);
    else
        path = nmt_asprintf("%s/%s", base_dir, value);
    if (path && strlen(path) < 4096) normalize_path(path);
    return path;
}

/* A list key's JSON array of strings into its field: the items (each path
 * resolved) joined by '\n' (config_list_len). Paths must not be empty,
 * strings may ("" in data.extra_tag: that corpus has no tag); neither may
 * hold a line break. */
static NmtStatus assign_list(Config *cfg, const ConfigKey *key, const cJSON *array) {
    int n = cJSON_GetArraySize(array);
    if (n < 1 || n > CFG_MAX_LIST)
        return nmt_fail(NMT_ERR_CONFIG, "%s: a list of 1 to %d items, got %d", key->path, CFG_MAX_LIST, n);
    char *joined = nmt_strdup("");
    int i = 0;
    for (const cJSON *item = array->child; joined && item; item = item->next, i++) {
        if (!cJSON_IsString(item)) {
            nmt_free(joined);
            return nmt_fail(NMT_ERR_CONFIG, "%s: item %d: expected a string, got %s", key->path, i + 1,
                            json_kind(item));
        }
        const char *v = item->valuestring;
        if ((!v[0] && key->type == CFG_PATH) || strpbrk(v, "\n\r")) {
            nmt_free(joined);
            return nmt_fail(NMT_ERR_CONFIG, "%s: item %d: %s", key->path, i + 1,
                            v[0] ? "must not hold a line break" : "must not be empty");
        }
        char *copy = key->type == CFG_PATH ? resolve_path(v, cfg->base_dir) : nmt_strdup(v);
        char *next = copy ? nmt_asprintf("%s%s%s", joined, i ? "\n" : "", copy) : NULL;
        nmt_free(copy);
        nmt_free(joined);
        joined = next;
    }
    if (!joined) return nmt_fail_nomem("reading the config");
    char **field = field_ptr(cfg, key);
    nmt_free(*field);
    *field = joined;
    return NMT_OK;
}

int config_list_len(const char *list) {
    if (!list || !list[0]) return 0;
    int n = 1;
    for (const char *c = list; *c; c++) n += *c == '\n';
    return n;
}

char *config_list_item(const char *list, int i) {
    NMT_ASSERT(i >= 0 && i < config_list_len(list));
    const char *start = list;
    for (int k = 0; k < i; k++) start = strchr(start, '\n') + 1;
    return nmt_strndup(start, strcspn(start, "\n"));
}

/* One number of a CFG_FLOAT key (`where`: "" or " item N" of a list),
 * checked for type and range, into *out. */
static NmtStatus read_float(const ConfigKey *key, const cJSON *item, const char *where, double *out) {
    char range[96], value[40];
    if (!cJSON_IsNumber(item))
        return nmt_fail(NMT_ERR_CONFIG, "%s%s: expected a number, got %s", key->path, where, json_kind(item));
    double v = item->valuedouble;
    if (!isfinite(v)) /* JSON's 1e309 */
        return nmt_fail(NMT_ERR_CONFIG, "%s%s: must be a finite number, got %s", key->path, where,
                        v > 0 ? "one above the largest double" : "one below the most negative double");
    range_text(key, 0, range, sizeof range);
    format_number(value, sizeof value, v);
    if (!in_range(key, v)) return nmt_fail(NMT_ERR_CONFIG, "%s%s: %s, got %s", key->path, where, range, value);
    /* a key the model computes with in single precision (CFG_SINGLE): a
     * value that rounds onto an open bound (adam_beta1 0.99999999 -> 1,
     * adam_eps 1e-50 -> 0) would give NaN weights or a zero rate */
    float single = (float)v;
    if ((key->flags & CFG_SINGLE) && (!in_range(key, (double)single) || !isfinite(single))) {
        char rounded[40];
        format_number(rounded, sizeof rounded, (double)single);
        return nmt_fail(NMT_ERR_CONFIG, "%s%s: %s, got %s, which is %s in single precision (what nmt computes in)",
                        key->path, where, range, value, rounded);
    }
    *out = v;
    return NMT_OK;
}

/* A number list key (CFG_FLOAT with CFG_LIST): a number or an array of
 * 1 to CFG_MAX_LIST numbers into its ConfigNumbers; nothing changes on
 * an error. */
static NmtStatus assign_numbers(const ConfigKey *key, const cJSON *item, ConfigNumbers *field) {
    ConfigNumbers got = {0};
    if (!cJSON_IsArray(item)) {
        if (!cJSON_IsNumber(item))
            return nmt_fail(NMT_ERR_CONFIG, "%s: expected a number or a list of numbers, got %s", key->path,
                            json_kind(item));
        got.n = 1;
        NmtStatus st = read_float(key, item, "", &got.v[0]);
        if (st) return st;
    } else {
        int n = cJSON_GetArraySize(item);
        if (n < 1 || n > CFG_MAX_LIST)
            return nmt_fail(NMT_ERR_CONFIG, "%s: a list of 1 to %d numbers, got %d", key->path, CFG_MAX_LIST, n);
        for (const cJSON *one = item->child; one; one = one->next) {
            char where[32];
            snprintf(where, sizeof where, ": item %d", got.n + 1);
            NmtStatus st = read_float(key, one, where, &got.v[got.n]);
            if (st) return st;
            got.n++;
        }
    }
    *field = got;
    return NMT_OK;
}

double config_extra_weight(const Config *cfg, int k) {
    const ConfigNumbers *w = &cfg->data.extra_weight;
    NMT_ASSERT(w->n >= 1 && k >= 0 && (w->n == 1 || k < w->n));
    return w->v[w->n == 1 ? 0 : k];
}

/* Stores one JSON value into the field of `key`, checking type and range. */
static NmtStatus assign_key(Config *cfg, const ConfigKey *key, const cJSON *item) {
    void *field = field_ptr(cfg, key);
    char range[96], value[40];
    switch (key->type) {
    case CFG_INT: {
        if (!cJSON_IsNumber(item))
            return nmt_fail(NMT_ERR_CONFIG, "%s: expected an integer, got %s", key->path, json_kind(item));
        double v = item->valuedouble;
        format_number(value, sizeof value, v);
        if (v != floor(v))
            return nmt_fail(NMT_ERR_CONFIG, "%s: expected an integer, got %s", key->path, value);
        if (fabs(v) > INT_MAX) { /* a whole number beyond an int: the key's range, with the int's bounds */
            range_text(key, 1, range, sizeof range);
            return nmt_fail(NMT_ERR_CONFIG, "%s: %s, got %s", key->path, range, value);
        }
        if (!in_range(key, v)) {
            range_text(key, 0, range, sizeof range);
            return nmt_fail(NMT_ERR_CONFIG, "%s: %s, got %s", key->path, range, value);
        }
        *(int *)field = (int)v;
        return NMT_OK;
    }
    case CFG_FLOAT: {
        if (key->flags & CFG_LIST) return assign_numbers(key, item, field);
        return read_float(key, item, "", (double *)field);
    }
    case CFG_BOOL:
        if (!cJSON_IsBool(item))
            return nmt_fail(NMT_ERR_CONFIG, "%s: expected true or false, got %s", key->path, json_kind(item));
        *(bool *)field = cJSON_IsTrue(item);
        return NMT_OK;
    case CFG_ENUM: {
        if (!cJSON_IsString(item))
            return nmt_fail(NMT_ERR_CONFIG, "%s: expected a string, got %s", key->path, json_kind(item));
        for (int i = 0; key->choices[i]; i++)
            if (!strcmp(key->choices[i], item->valuestring)) {
                *(int *)field = i;
                return NMT_OK;
            }
        char list[256] = "";
        for (int i = 0; key->choices[i]; i++) {
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, key->choices[i], sizeof list - strlen(list) - 1);
        }
        return nmt_fail(NMT_ERR_CONFIG, "%s: must be one of %s, got \"%s\"", key->path, list,
                        item->valuestring);
    }
    case CFG_STRING:
    case CFG_PATH: {
        if ((key->flags & CFG_LIST) && cJSON_IsArray(item)) return assign_list(cfg, key, item);
        if (!cJSON_IsString(item))
            return nmt_fail(NMT_ERR_CONFIG, "%s: expected a string%s, got %s", key->path,
                            key->flags & CFG_LIST ? " or a list of strings" : "", json_kind(item));
        const char *v = item->valuestring;
        if (!v[0] && !(key->flags & CFG_OPTIONAL))
            return nmt_fail(NMT_ERR_CONFIG, "%s: must not be empty", key->path);
        if ((key->flags & CFG_LIST) && strpbrk(v, "\n\r"))
            return nmt_fail(NMT_ERR_CONFIG, "%s: must not hold a line break", key->path);
        char *copy = (key->type == CFG_PATH && v[0]) ? resolve_path(v, cfg->base_dir) : nmt_strdup(v);
        if (!copy) return nmt_fail_nomem("reading the config");
        nmt_free(*(char **)field);
        *(char **)field = copy;
        return NMT_OK;
    }
    }
    NMT_ASSERT(0);
    return NMT_ERR_RUNTIME;
}

static void config_free_strings(Config *cfg) {
    for (int i = 0; i < N_CONFIG_KEYS; i++)
        if (config_keys[i].type == CFG_STRING || config_keys[i].type == CFG_PATH) {
            char **s = field_ptr(cfg, &config_keys[i]);
            nmt_free(*s);
            *s = NULL;
        }
}

void config_free(Config *cfg) {
    if (!cfg) return;
    config_free_strings(cfg);
    nmt_free(cfg->config_path);
    nmt_free(cfg->base_dir);
    nmt_free(cfg->explicit_keys);
    memset(cfg, 0, sizeof *cfg);
}

static void use_cjson_allocator(void) {
    static cJSON_Hooks hooks = {nmt_malloc, nmt_free};
    cJSON_InitHooks(&hooks);
}

NmtStatus config_init_defaults(Config *cfg, const char *base_dir) {
    use_cjson_allocator();
    memset(cfg, 0, sizeof *cfg);
    cfg->base_dir = nmt_strdup(base_dir ? base_dir : ".");
    cfg->explicit_keys = nmt_calloc(N_CONFIG_KEYS, 1);
    if (!cfg->base_dir || !cfg->explicit_keys) {
        config_free(cfg);
        return nmt_fail_nomem("setting config defaults");
    }
    for (int i = 0; i < N_CONFIG_KEYS; i++) {
        cJSON *value = cJSON_Parse(config_keys[i].default_json);
        if (!value) {
            config_free(cfg);
            return nmt_fail_nomem("setting config defaults");
        }
        NmtStatus st = assign_key(cfg, &config_keys[i], value);
        cJSON_Delete(value);
        NMT_ASSERT(st == NMT_OK || st == NMT_ERR_NOMEM); /* the table's defaults are valid */
        if (st) {
            config_free(cfg);
            return st;
        }
    }
    return NMT_OK;
}

/* Reads the members of the JSON object `obj` found at `prefix` ("" at top). */
static NmtStatus read_object(Config *cfg, const cJSON *obj, const char *prefix) {
    for (const cJSON *item = obj->child; item; item = item->next) {
        char path[256];
        snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", item->string);
        for (const cJSON *other = item->next; other; other = other->next)
            if (!strcmp(other->string, item->string))
                return nmt_fail(NMT_ERR_CONFIG, "%s: duplicate key", path);
        if (is_section(path)) {
            if (!cJSON_IsObject(item))
                return nmt_fail(NMT_ERR_CONFIG, "%s: expected an object, got %s", path, json_kind(item));
            NmtStatus st = read_object(cfg, item, path);
            if (st) return st;
            continue;
        }
        const ConfigKey *key = find_key(path);
        if (!key) return unknown_key(path);
        NmtStatus st = assign_key(cfg, key, item);
        if (st) return st;
        cfg->explicit_keys[key - config_keys] = 1;
    }
    return NMT_OK;
}

/* Puts `value` at the dotted `path` of `root`, making sections as needed. */
static NmtStatus tree_set(cJSON *root, const char *path, cJSON *value) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    cJSON *node = root;
    char *part = buf;
    for (char *dot; (dot = strchr(part, '.')); part = dot + 1) {
        *dot = '\0';
        cJSON *child = cJSON_GetObjectItemCaseSensitive(node, part);
        if (!child || !cJSON_IsObject(child)) {
            if (child) cJSON_DeleteItemFromObjectCaseSensitive(node, part);
            child = cJSON_AddObjectToObject(node, part);
            if (!child) {
                cJSON_Delete(value);
                return nmt_fail_nomem("applying --set");
            }
        }
        node = child;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(node, part);
    if (!cJSON_AddItemToObject(node, part, value)) {
        cJSON_Delete(value);
        return nmt_fail_nomem("applying --set");
    }
    return NMT_OK;
}

/* Removes the key named by the override "key.path=value" from `root`. */
static void tree_remove(cJSON *root, const char *override) {
    char buf[256];
    const char *eq = strchr(override, '=');
    snprintf(buf, sizeof buf, "%.*s", eq ? (int)(eq - override) : (int)strlen(override), override);
    cJSON *node = root;
    char *part = buf;
    for (char *dot; node && (dot = strchr(part, '.')); part = dot + 1) {
        *dot = '\0';
        node = cJSON_GetObjectItemCaseSensitive(node, part);
        if (node && !cJSON_IsObject(node)) return;
    }
    if (node) cJSON_DeleteItemFromObjectCaseSensitive(node, part);
}

/* The offset of the first JSON number in `text` (outside strings) whose
 * digits are not all zero but that reads as 0 in a double (1e-400: strtod
 * and cJSON underflow to 0, which would turn e.g. data.spm_sample_alpha
 * off without a word); -1 if none. Numbers past the largest double read as
 * infinity, which the key checks refuse. */
static long underflowing_number(const char *text) {
    for (const char *p = text; *p;) {
        if (*p == '"') { /* a string: to its closing quote */
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1]) p++;
            if (*p) p++;
        } else if (*p == '-' || isdigit((unsigned char)*p)) {
            char *end;
            double v = strtod(p, &end);
            if (end == p) {
                p++;
                continue;
            }
            int nonzero = 0;
            for (const char *q = p; q < end && *q != 'e' && *q != 'E'; q++) nonzero |= *q >= '1' && *q <= '9';
            if (v == 0 && nonzero) return (long)(p - text);
            p = end;
        } else if (isalpha((unsigned char)*p)) { /* true, false, null: no digits in them */
            while (isalnum((unsigned char)*p)) p++;
        } else {
            p++;
        }
    }
    return -1;
}

/* The message for the number at `text + at` that reads as 0. */
static NmtStatus underflow_fail(const char *where, const char *text, long at) {
    int n = 0;
    while (text[at + n] && (isalnum((unsigned char)text[at + n]) || strchr("+-.", text[at + n]))) n++;
    return nmt_fail(NMT_ERR_CONFIG, "%s: %.*s is nearer 0 than the smallest double, so it would read as 0; "
                    "write 0, or a number of at least 5e-324", where, n > 40 ? 40 : n, text + at);
}

/* Applies one "key.path=value" override to the parsed tree. */
static NmtStatus apply_override(cJSON *root, const char *text) {
    const char *eq = strchr(text, '=');
    if (!eq || eq == text)
        return nmt_fail(NMT_ERR_USAGE, "--set %s: expected KEY=VALUE, e.g. --set model.hidden=256", text);
    char path[256];
    snprintf(path, sizeof path, "%.*s", (int)(eq - text), text);
    const ConfigKey *key = find_key(path);
    if (!key && is_section(path)) {
        NmtStatus st = nmt_fail(NMT_ERR_CONFIG,
                                "%s: is a section (an object), not a value; set %s.KEY=VALUE "
                                "(`nmt config --doc` lists the keys)",
                                path, path);
        nmt_error_prefix("--set %s", text);
        return st;
    }
    if (!key) {
        NmtStatus st = unknown_key(path);
        nmt_error_prefix("--set %s", text);
        return st;
    }
    const char *raw = eq + 1;
    cJSON *value = NULL;
    int wants_string = key->type == CFG_STRING || key->type == CFG_PATH || key->type == CFG_ENUM;
    long tiny = wants_string ? -1 : underflowing_number(raw);
    if (tiny >= 0) {
        NmtStatus st = underflow_fail(path, raw, tiny);
        nmt_error_prefix("--set %s", text);
        return st;
    }
    long failures_before = nmt_alloc_failures();
    if (!wants_string || ((key->flags & CFG_LIST) && raw[0] == '['))
        value = cJSON_ParseWithOpts(raw, NULL, 1); /* the whole value: no "0.5,5" read as 0.5 */
    if (!value && nmt_alloc_failures() != failures_before) return nmt_fail_nomem("applying --set");
    if (value && (key->flags & CFG_LIST) && key->type != CFG_FLOAT && !cJSON_IsArray(value)) {
        /* a string list's "[x" or a number: the text itself */
        cJSON_Delete(value);
        value = NULL;
    }
    if (value && (cJSON_IsObject(value) || (cJSON_IsArray(value) && !(key->flags & CFG_LIST)))) {
        cJSON_Delete(value);
        value = NULL;
    }
    if (!value) value = cJSON_CreateString(raw);
    if (!value) return nmt_fail_nomem("applying --set");
    return tree_set(root, path, value);
}

/* Line and column of byte `offset` in `text`. */
static void line_column(const char *text, size_t offset, int *line, int *column) {
    *line = 1;
    *column = 1;
    for (size_t i = 0; i < offset && text[i]; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *column = 1;
        } else {
            (*column)++;
        }
    }
}

int config_is_explicit(const Config *cfg, const char *path) {
    const ConfigKey *key = find_key(path);
    return key && cfg->explicit_keys && cfg->explicit_keys[key - config_keys];
}

static int key_index(const char *path) {
    const ConfigKey *key = find_key(path);
    NMT_ASSERT(key);
    return (int)(key - config_keys);
}

/* Checks between keys, and values derived from others (enc_hidden, auto). */
NmtStatus config_check_subword_sampling(const Config *cfg) {
    const DataConfig *d = &cfg->data;
    if (d->spm_sample_alpha <= 0) return NMT_OK;
    NmtStatus st = NMT_OK;
    if (d->tokenizer != CFG_TOKENIZER_SPM)
        st = nmt_fail(NMT_ERR_CONFIG, "data.spm_sample_alpha: subword sampling needs data.tokenizer spm, got %s",
                      tokenizer_kind_names[d->tokenizer]);
    else if (d->spm_model_type == CFG_SPM_BPE && d->spm_sample_alpha >= 1)
        st = nmt_fail(NMT_ERR_CONFIG,
                      "data.spm_sample_alpha: with data.spm_model_type bpe it is the merge dropout "
                      "probability and must be below 1, got %g",
                      d->spm_sample_alpha);
    /* with train.init_from the tokenizer keys are its checkpoint's, whatever
     * the config file says */
    if (st && cfg->train.init_from && cfg->train.init_from[0])
        nmt_error_suffix(" (the tokenizers and their keys are those of train.init_from, %s)", cfg->train.init_from);
    else if (st && d->spm_src_model && d->spm_src_model[0])
        nmt_error_suffix(" (the tokenizers and their keys are those of data.spm_src_model, %s, and "
                         "data.spm_tgt_model, %s)", d->spm_src_model, d->spm_tgt_model);
    return st;
}

/* One tag of data.extra_tag (item `item` of n, 0-based): one token (no
 * white space, which would make it several words, nor a comma, which
 * separates SentencePiece's user-defined symbols), not a special token's
 * name nor holding SentencePiece's word-start mark. */
static NmtStatus check_one_tag(const char *tag, int item, int n) {
    char where[48] = "";
    if (n > 1) snprintf(where, sizeof where, " (item %d)", item + 1);
    for (const char *c = tag; *c; c++)
        if (*c == ' ' || *c == '\t' || *c == '\v' || *c == '\f' || *c == ',')
            return nmt_fail(NMT_ERR_CONFIG, "data.extra_tag%s: \"%s\" must be one token, without %s", where, tag,
                            *c == ',' ? "a comma" : "white space");
    if (strlen(tag) > CFG_MAX_EXTRA_TAG)
        return nmt_fail(NMT_ERR_CONFIG, "data.extra_tag%s: at most %d bytes, got %zu", where, CFG_MAX_EXTRA_TAG,
                        strlen(tag));
    static const char *const reserved[] = {"<pad>", "<unk>", "<s>", "</s>"};
    for (size_t i = 0; i < NMT_ARRAY_LEN(reserved); i++)
        if (!strcmp(tag, reserved[i]))
            return nmt_fail(NMT_ERR_CONFIG, "data.extra_tag%s: \"%s\" is a special token's name", where, tag);
    if (strstr(tag, "\xe2\x96\x81"))
        return nmt_fail(NMT_ERR_CONFIG, "data.extra_tag%s: \"%s\" holds U+2581, SentencePiece's word-start mark",
                        where, tag);
    return NMT_OK;
}

/* data.extra_src and data.extra_tgt: as many corpora on each side;
 * data.extra_tag: none, or one tag per corpus ("" for an untagged one),
 * each checked by check_one_tag; data.extra_weight: one weight, or one
 * per corpus, and given only with the corpora. */
static NmtStatus check_extra_corpora(const Config *cfg) {
    const DataConfig *d = &cfg->data;
    int n_src = config_list_len(d->extra_src), n_tgt = config_list_len(d->extra_tgt);
    int n_tag = config_list_len(d->extra_tag);
    if (!n_src != !n_tgt)
        return nmt_fail(NMT_ERR_CONFIG, "%s: must be given together with %s", n_src ? "data.extra_tgt" : "data.extra_src",
                        n_src ? "data.extra_src" : "data.extra_tgt");
    if (n_src != n_tgt)
        return nmt_fail(NMT_ERR_CONFIG, "data.extra_tgt: %d path%s for the %d %s of data.extra_src: give one "
                        "target side per source side, in the same order", n_tgt, n_tgt == 1 ? "" : "s", n_src,
                        n_src == 1 ? "corpus" : "corpora");
    if (n_tag && !n_src)
        return nmt_fail(NMT_ERR_CONFIG, "data.extra_tag: \"%s\" is put before the sentences of data.extra_src, "
                        "which is not given", d->extra_tag);
    int n_weight = d->extra_weight.n;
    if (!n_src && !(n_weight == 1 && d->extra_weight.v[0] == 1)) /* 1: the default, in every resolved config */
        return nmt_fail(NMT_ERR_CONFIG, "data.extra_weight: weighs the corpora of data.extra_src, which is not given");
    if (n_weight > 1 && n_weight != n_src)
        return nmt_fail(NMT_ERR_CONFIG, "data.extra_weight: %d weights for the %d %s of data.extra_src: give one "
                        "weight for all or a list of one per corpus, in its order", n_weight, n_src,
                        n_src == 1 ? "corpus" : "corpora");
    if (n_tag && n_tag != n_src)
        return nmt_fail(NMT_ERR_CONFIG, "data.extra_tag: %d tag%s for the %d %s of data.extra_src: give a "
                        "list of one per corpus, in its order (\"\" for an untagged one)", n_tag,
                        n_tag == 1 ? "" : "s", n_src, n_src == 1 ? "corpus" : "corpora");
    for (int i = 0; i < n_tag; i++) {
        char *tag = config_list_item(d->extra_tag, i);
        if (!tag) return nmt_fail_nomem("checking data.extra_tag");
        NmtStatus st = check_one_tag(tag, i, n_tag);
        nmt_free(tag);
        if (st) return st;
    }
    return NMT_OK;
}

static NmtStatus validate(Config *cfg) {
    DataConfig *d = &cfg->data;
    ModelConfig *m = &cfg->model;
    struct { const char *a_path, *b_path; const char *a, *b; } pairs[] = {
        {"data.train_src", "data.train_tgt", d->train_src, d->train_tgt},
        {"data.valid_src", "data.valid_tgt", d->valid_src, d->valid_tgt},
        {"data.test_src", "data.test_tgt", d->test_src, d->test_tgt},
    };
    for (size_t i = 0; i < NMT_ARRAY_LEN(pairs); i++) {
        int has_a = pairs[i].a && pairs[i].a[0], has_b = pairs[i].b && pairs[i].b[0];
        if (has_a != has_b)
            return nmt_fail(NMT_ERR_CONFIG, "%s: must be given together with %s",
                            has_a ? pairs[i].b_path : pairs[i].a_path,
                            has_a ? pairs[i].a_path : pairs[i].b_path);
    }
    NmtStatus tst = check_extra_corpora(cfg);
    if (tst) return tst;
    if (cfg->train.batch_sentences == 0 && cfg->train.batch_tokens == 0)
        return nmt_fail(NMT_ERR_CONFIG,
                        "train.batch_sentences: batch_sentences and batch_tokens cannot both be 0");
    if (cfg->train.lr_schedule == CFG_LR_RSQRT && cfg->train.rsqrt_steps == 0 && cfg->train.warmup_steps == 0)
        return nmt_fail(NMT_ERR_CONFIG,
                        "train.rsqrt_steps: train.lr_schedule rsqrt needs train.rsqrt_steps or "
                        "train.warmup_steps above 0 (rsqrt_steps 0 takes warmup_steps), both are 0");
    if (cfg->decode.max_len_a == 0 && cfg->decode.max_len_b == 0)
        return nmt_fail(NMT_ERR_CONFIG, "decode.max_len_b: max_len_a and max_len_b cannot both be 0");
    const char *key_size_name = m->enc_hidden ? "model.enc_hidden" : "model.hidden";
    if (m->enc_hidden == 0) m->enc_hidden = m->hidden;
    if (m->bidirectional && m->enc_hidden % 2)
        return nmt_fail(NMT_ERR_CONFIG,
                        "%s: must be even with model.bidirectional (each direction gets half), got %d",
                        key_size_name, m->enc_hidden);
    AttentionConfig *a = &m->attention;
    int query = config_query_size(cfg), key = config_key_size(cfg);
    if (a->score == ATTN_SCORE_AUTO) a->score = query == key ? ATTN_SCORE_DOT : ATTN_SCORE_ADDITIVE;
    if ((a->score == ATTN_SCORE_DOT || a->score == ATTN_SCORE_SCALED_DOT) && query != key &&
        a->style != ATTN_STYLE_NONE)
        return nmt_fail(NMT_ERR_CONFIG,
                        "model.attention.score: %s needs equal query and key sizes, got query %d "
                        "(model.hidden) and key %d (%s); use general, additive or auto",
                        attn_score_names[a->score], query, key, key_size_name);
    if (a->style != ATTN_STYLE_NONE && a->heads > 1 &&
        (a->score == ATTN_SCORE_DOT || a->score == ATTN_SCORE_SCALED_DOT) && m->hidden % a->heads)
        return nmt_fail(NMT_ERR_CONFIG,
                        "model.attention.heads: must divide model.hidden (%d) for %s scores (each head "
                        "takes an equal slice), got %d",
                        m->hidden, attn_score_names[a->score], a->heads);
    if (d->tokenizer == CFG_TOKENIZER_SPM && d->spm_character_coverage < 0.98)
        return nmt_fail(NMT_ERR_CONFIG,
                        "data.spm_character_coverage: SentencePiece needs at least 0.98, got %g",
                        d->spm_character_coverage);
    int given_src = d->spm_src_model && d->spm_src_model[0], given_tgt = d->spm_tgt_model && d->spm_tgt_model[0];
    if (given_src != given_tgt)
        return nmt_fail(NMT_ERR_CONFIG, "%s: must be given together with %s (the same file for a joint model)",
                        given_src ? "data.spm_tgt_model" : "data.spm_src_model",
                        given_src ? "data.spm_src_model" : "data.spm_tgt_model");
    if (given_src && d->tokenizer != CFG_TOKENIZER_SPM)
        return nmt_fail(NMT_ERR_CONFIG, "data.spm_src_model: a SentencePiece model needs data.tokenizer spm, got %s",
                        tokenizer_kind_names[d->tokenizer]);
    if (given_src && cfg->train.init_from && cfg->train.init_from[0])
        return nmt_fail(NMT_ERR_CONFIG, "data.spm_src_model: with train.init_from the tokenizers are its "
                        "checkpoint's (%s): give one or the other", cfg->train.init_from);
    /* with train.init_from or given SentencePiece models the tokenizer keys
     * are still to come from the checkpoint or the models:
     * cli_load_training_config checks them then */
    if (!(cfg->train.init_from && cfg->train.init_from[0]) && !given_src) {
        NmtStatus sst = config_check_subword_sampling(cfg);
        if (sst) return sst;
    }
    if (d->train_align && d->train_align[0] && a->style == ATTN_STYLE_NONE)
        return nmt_fail(NMT_ERR_CONFIG, "data.train_align: guided alignment needs attention, and "
                        "model.attention.style is none");
    if (m->input_feed && a->style != ATTN_STYLE_LUONG) {
        if (cfg->explicit_keys[key_index("model.input_feed")])
            return nmt_fail(NMT_ERR_CONFIG,
                            "model.input_feed: input feeding needs model.attention.style luong, got %s",
                            attn_style_names[a->style]);
        m->input_feed = false; /* the default only applies where it means something */
    }
    if (m->tie_embeddings && m->emb_dim != m->hidden)
        return nmt_fail(NMT_ERR_CONFIG,
                        "model.tie_embeddings: needs model.emb_dim (%d) equal to model.hidden (%d)",
                        m->emb_dim, m->hidden);
    return NMT_OK;
}

NmtStatus config_load_string(const char *json, const char *origin, const char *base_dir,
                             const char *const *overrides, int n_overrides, Config *cfg) {
    NmtStatus st = config_init_defaults(cfg, base_dir);
    if (st) return st;
    const char *end = NULL;
    long failures_before = nmt_alloc_failures();
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (!root && nmt_alloc_failures() != failures_before) {
        config_free(cfg);
        return nmt_fail_nomem("parsing the config");
    }
    if (!root) {
        int line, column;
        size_t offset = end ? (size_t)(end - json) : strlen(json);
        line_column(json, offset, &line, &column);
        config_free(cfg);
        return nmt_fail(NMT_ERR_CONFIG, "%s:%d:%d: JSON syntax error", origin, line, column);
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        config_free(cfg);
        return nmt_fail(NMT_ERR_CONFIG, "%s: the config must be a JSON object", origin);
    }
    long tiny = underflowing_number(json);
    if (tiny >= 0) {
        int line, column;
        line_column(json, (size_t)tiny, &line, &column);
        char where[600];
        snprintf(where, sizeof where, "%s:%d:%d", origin, line, column);
        cJSON_Delete(root);
        config_free(cfg);
        return underflow_fail(where, json, tiny);
    }
    /* overrides are parsed first, so that a bad --set is reported as such;
     * a key given by --set is not read from the file: the override wins */
    for (int i = 0; !st && i < n_overrides; i++) {
        cJSON *tree = cJSON_CreateObject();
        st = tree ? apply_override(tree, overrides[i]) : nmt_fail_nomem("applying --set");
        cJSON_Delete(tree);
        if (!st) tree_remove(root, overrides[i]);
    }
    if (!st) {
        st = read_object(cfg, root, "");
        if (st) nmt_error_prefix("%s", origin);
    }
    for (int i = 0; !st && i < n_overrides; i++) {
        /* overrides go into a tree, so they are checked like file keys */
        cJSON *tree = cJSON_CreateObject();
        st = tree ? apply_override(tree, overrides[i]) : nmt_fail_nomem("applying --set");
        if (!st) {
            /* a path given on the command line is relative to the current folder */
            char *file_base = cfg->base_dir;
            char *cwd = realpath(".", NULL);
            cfg->base_dir = cwd;
            st = read_object(cfg, tree, "");
            cfg->base_dir = file_base;
            free(cwd); /* from realpath(), not the nmt allocator */
            if (st) nmt_error_prefix("--set %s", overrides[i]);
        }
        cJSON_Delete(tree);
    }
    cJSON_Delete(root);
    if (!st) {
        st = validate(cfg);
        if (st) nmt_error_prefix("%s", origin);
    }
    if (st) config_free(cfg);
    return st;
}

NmtStatus config_load(const char *path, const char *const *overrides, int n_overrides,
                      Config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    FILE *f = fopen(path, "rb");
    if (!f) return nmt_fail(NMT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *grown = nmt_realloc(text, cap);
            if (!grown) {
                nmt_free(text);
                fclose(f);
                return nmt_fail_nomem("reading the config");
            }
            text = grown;
        }
        errno = 0;
        size_t got = fread(text + len, 1, 4096, f);
        len += got;
        if (got < 4096) break;
    }
    int read_error = ferror(f), read_errno = errno; /* e.g. EISDIR: a folder given as the config */
    fclose(f);
    if (read_error) {
        nmt_free(text);
        return nmt_fail(NMT_ERR_IO, "%s: read error: %s", path, read_errno ? strerror(read_errno) : "unknown cause");
    }
    text[len] = '\0';
    if (strlen(text) != len) {
        int line, column;
        line_column(text, strlen(text), &line, &column);
        nmt_free(text);
        return nmt_fail(NMT_ERR_CONFIG, "%s:%d:%d: NUL byte in the config", path, line, column);
    }
    /* relative paths resolve against the folder of the config file */
    char *dir_copy = nmt_strdup(path);
    if (!dir_copy) {
        nmt_free(text);
        return nmt_fail_nomem("reading the config");
    }
    char *slash = strrchr(dir_copy, '/');
    const char *dir = ".";
    if (slash) {
        *slash = '\0';
        dir = slash == dir_copy ? "/" : dir_copy;
    }
    char *absolute = realpath(dir, NULL);
    const char *start = text;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) start += 3; /* UTF-8 BOM */
    NmtStatus st = config_load_string(start, path, absolute ? absolute : dir, overrides,
                                      n_overrides, cfg);
    free(absolute); /* from realpath(), not the nmt allocator */
    nmt_free(dir_copy);
    nmt_free(text);
    if (!st) {
        cfg->config_path = nmt_strdup(path);
        if (!cfg->config_path) {
            config_free(cfg);
            return nmt_fail_nomem("reading the config");
        }
    }
    return st;
}

int config_key_size(const Config *cfg) {
    return cfg->model.enc_hidden ? cfg->model.enc_hidden : cfg->model.hidden;
}
int config_query_size(const Config *cfg) { return cfg->model.hidden; }

/* v as JSON in the shortest text that reads back as the same double: a
 * resumed run compares the checkpoint's config with the current one
 * exactly. */
static cJSON *exact_number(double v) {
    char text[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, v);
        if (strtod(text, NULL) == v) break;
    }
    return cJSON_CreateRaw(text);
}

/* One key's value as a JSON item. */
static cJSON *key_to_json(const Config *cfg, const ConfigKey *key) {
    const void *field = field_cptr(cfg, key);
    switch (key->type) {
    case CFG_INT: return cJSON_CreateNumber(*(const int *)field);
    case CFG_FLOAT: {
        if (!(key->flags & CFG_LIST)) return exact_number(*(const double *)field);
        const ConfigNumbers *list = field;
        if (list->n == 1) return exact_number(list->v[0]);
        cJSON *array = cJSON_CreateArray(); /* a number list's items */
        for (int i = 0; array && i < list->n; i++) {
            cJSON *item = exact_number(list->v[i]);
            if (!item || !cJSON_AddItemToArray(array, item)) {
                cJSON_Delete(item);
                cJSON_Delete(array);
                return NULL;
            }
        }
        return array;
    }
    case CFG_BOOL: return cJSON_CreateBool(*(const bool *)field);
    case CFG_ENUM: return cJSON_CreateString(key->choices[*(const int *)field]);
    case CFG_STRING:
    case CFG_PATH: {
        const char *s = *(char *const *)field;
        if (!(key->flags & CFG_LIST) || config_list_len(s) < 2) return cJSON_CreateString(s ? s : "");
        cJSON *array = cJSON_CreateArray(); /* a list key's items */
        for (int i = 0; array && i < config_list_len(s); i++) {
            char *one = config_list_item(s, i);
            cJSON *item = one ? cJSON_CreateString(one) : NULL;
            nmt_free(one);
            if (!item || !cJSON_AddItemToArray(array, item)) {
                cJSON_Delete(item);
                cJSON_Delete(array);
                return NULL;
            }
        }
        return array;
    }
    }
    return NULL;
}

char *config_to_json(const Config *cfg) {
    use_cjson_allocator();
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    for (int i = 0; i < N_CONFIG_KEYS; i++) {
        cJSON *value = key_to_json(cfg, &config_keys[i]);
        if (!value || tree_set(root, config_keys[i].path, value) != NMT_OK) {
            cJSON_Delete(root);
            return NULL;
        }
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

/* 1 when `key` has the same value in a and b. */
static int key_same(const Config *a, const Config *b, const ConfigKey *key) {
    const void *fa = field_cptr(a, key), *fb = field_cptr(b, key);
    switch (key->type) {
    case CFG_INT:
    case CFG_ENUM: return *(const int *)fa == *(const int *)fb;
    case CFG_FLOAT: {
        if (!(key->flags & CFG_LIST)) return *(const double *)fa == *(const double *)fb;
        const ConfigNumbers *la = fa, *lb = fb;
        if (la->n != lb->n) return 0;
        for (int i = 0; i < la->n; i++)
            if (la->v[i] != lb->v[i]) return 0;
        return 1;
    }
    case CFG_BOOL: return *(const bool *)fa == *(const bool *)fb;
    case CFG_STRING:
    case CFG_PATH: {
        const char *sa = *(char *const *)fa, *sb = *(char *const *)fb;
        return !strcmp(sa ? sa : "", sb ? sb : "");
    }
    }
    return 1;
}

const char *config_first_fixed_difference(const Config *a, const Config *b) {
    for (int i = 0; i < N_CONFIG_KEYS; i++)
        if (!(config_keys[i].flags & CFG_SCHEDULE) && !key_same(a, b, &config_keys[i])) return config_keys[i].path;
    return NULL;
}

char *config_schedule_changes(const Config *a, const Config *b) {
    use_cjson_allocator();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int ok = 1, n = 0;
    for (int i = 0; ok && i < N_CONFIG_KEYS; i++) {
        const ConfigKey *key = &config_keys[i];
        if (!(key->flags & CFG_SCHEDULE) || key_same(a, b, key)) continue;
        cJSON *va = key_to_json(a, key), *vb = key_to_json(b, key);
        char *ta = va ? cJSON_PrintUnformatted(va) : NULL, *tb = vb ? cJSON_PrintUnformatted(vb) : NULL;
        ok = ta && tb;
        if (ok) fprintf(f, "%s%s %s -> %s", n++ ? ", " : "", key->path, ta, tb);
        cJSON_free(ta);
        cJSON_free(tb);
        cJSON_Delete(va);
        cJSON_Delete(vb);
    }
    fclose(f);
    char *out = ok && buf ? nmt_strdup(buf) : NULL;
    free(buf);
    return out;
}

/* Copies a key of a plain type (not a string) from src into dst. */
static void key_copy(Config *dst, const Config *src, const ConfigKey *key) {
    NMT_ASSERT(key->type != CFG_STRING && key->type != CFG_PATH);
    size_t size = key->type == CFG_FLOAT ? ((key->flags & CFG_LIST) ? sizeof(ConfigNumbers) : sizeof(double))
                  : key->type == CFG_BOOL ? sizeof(bool)
                                          : sizeof(int);
    memcpy(field_ptr(dst, key), field_cptr(src, key), size);
}

const char *config_take_model_keys(Config *dst, const Config *src) {
    for (int i = 0; i < N_CONFIG_KEYS; i++) {
        const ConfigKey *key = &config_keys[i];
        if (strncmp(key->path, "model.", 6) != 0) continue;
        if (!config_is_explicit(dst, key->path)) {
            key_copy(dst, src, key);
            continue;
        }
        if (key->flags & CFG_TRAINING_ONLY || key_same(dst, src, key)) continue; /* the config's own */
        /* global attention has no window: its value changes nothing */
        if (!strcmp(key->path, "model.attention.window") && src->model.attention.mode == ATTN_MODE_GLOBAL) {
            key_copy(dst, src, key);
            continue;
        }
        return key->path;
    }
    return NULL;
}

const char *config_take_tokenizer_keys(Config *dst, const Config *src) {
    const char *first = NULL;
    for (int i = 0; i < N_CONFIG_KEYS; i++) {
        const ConfigKey *key = &config_keys[i];
        if (!(key->flags & CFG_TOKENIZER)) continue;
        if (!first && !key_same(dst, src, key)) first = key->path;
        key_copy(dst, src, key);
    }
    return first;
}

void config_write_reference(FILE *out) {
    fprintf(out, "| key | type | default | meaning |\n| --- | --- | --- | --- |\n");
    for (int i = 0; i < N_CONFIG_KEYS; i++) {
        const ConfigKey *key = &config_keys[i];
        char type[256], range[96];
        if (key->type == CFG_ENUM) {
            type[0] = '\0';
            for (int c = 0; key->choices[c]; c++) {
                strncat(type, c ? " \\| " : "", sizeof type - strlen(type) - 1);
                strncat(type, "`", sizeof type - strlen(type) - 1);
                strncat(type, key->choices[c], sizeof type - strlen(type) - 1);
                strncat(type, "`", sizeof type - strlen(type) - 1);
            }
        } else {
            range_text(key, 1, range, sizeof range);
            snprintf(type, sizeof type, "%s%s%s", type_name(key), range[0] ? ", " : "",
                     range[0] ? range + strlen("must be ") : "");
        }
        const char *def = key->default_json;
        fprintf(out, "| `%s` | %s | `%s` | %s%s |\n", key->path, type,
                strcmp(def, "\"\"") ? def : "(none)", key->doc,
                key->flags & CFG_SCHEDULE ? " (may change on resume)" : "");
    }
}
