/* test_lr_schedule.c: the learning rate of update t (optimizer_rate) under
 * train.lr_schedule constant and rsqrt, with warmup and the plateau/epoch
 * decay factor lr_scale, from configs loaded as nmt loads them (so the
 * defaults and rsqrt_steps 0 = warmup_steps are those of config_keys.h);
 * and the config error when rsqrt has neither rsqrt_steps nor
 * warmup_steps. The rates a training run logs are checked end to end in
 * tests/test_lr_schedule.sh. */
#include "backend.h"
#include "config.h"
#include "train/optimizer.h"
#include "test_util.h"

/* Loads a config of `train` settings (--set style) into cfg. */
static NmtStatus load_sets(const char *const *sets, int n_sets, Config *cfg) {
    const char *json = "{}";
    const char *path = test_write_file(test_tmpdir(), "cfg.json", json, strlen(json));
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", path);
    return config_load(copy, sets, n_sets, cfg);
}

/* An SGD optimizer (no moments to allocate) for the config of `sets`. */
static Optimizer *optimizer_for(Backend *be, const char *const *sets, int n_sets) {
    Config cfg;
    NmtStatus st = load_sets(sets, n_sets, &cfg);
    CHECK(st == NMT_OK, "config: %s", nmt_error_message());
    if (st) return NULL;
    Optimizer *o = NULL;
    st = optimizer_create(be, &cfg.train, 4, &o);
    CHECK(st == NMT_OK, "optimizer_create: %s", nmt_error_message());
    config_free(&cfg);
    return o;
}

/* Relative closeness: the rates are computed in double from exact inputs. */
#define CHECK_RATE(got, want) CHECK_NEAR((got) / (want), 1.0, 1e-12)

static void test_constant(Backend *be) {
    /* the default schedule is constant: today's rate, exactly */
    const char *sets[] = {"train.optimizer=sgd", "train.lr=0.5", "train.warmup_steps=100"};
    Optimizer *o = optimizer_for(be, sets, 3);
    if (!o) return;
    CHECK_EQ_INT(o->sched.schedule, CFG_LR_CONSTANT);
    CHECK(optimizer_rate(o, 1, 1.0) == 0.5 * 1.0 * (1.0 / 100), "t = 1: %.17g", optimizer_rate(o, 1, 1.0));
    CHECK(optimizer_rate(o, 50, 1.0) == 0.5 * (50.0 / 100), "t = 50");
    CHECK(optimizer_rate(o, 100, 1.0) == 0.5, "t = warmup: %.17g", optimizer_rate(o, 100, 1.0));
    CHECK(optimizer_rate(o, 400, 1.0) == 0.5, "t = 4 warmup: %.17g", optimizer_rate(o, 400, 1.0));
    CHECK(optimizer_rate(o, 1000000, 0.25) == 0.5 * 0.25, "late, lr_scale 0.25");
    optimizer_free(o);
    /* no warmup: the full rate from t = 1 */
    const char *nowarm[] = {"train.optimizer=sgd", "train.lr=0.5"};
    o = optimizer_for(be, nowarm, 2);
    if (!o) return;
    CHECK(optimizer_rate(o, 1, 1.0) == 0.5, "no warmup, t = 1");
    optimizer_free(o);
}

static void test_rsqrt(Backend *be) {
    /* rsqrt_steps 0: N = warmup_steps = 100 */
    const char *sets[] = {"train.optimizer=sgd", "train.lr=0.5", "train.warmup_steps=100",
                          "train.lr_schedule=rsqrt"};
    Optimizer *o = optimizer_for(be, sets, 4);
    if (!o) return;
    CHECK_EQ_INT(o->sched.schedule, CFG_LR_RSQRT);
    CHECK_EQ_INT(o->sched.rsqrt_steps, 100);
    CHECK_RATE(optimizer_rate(o, 1, 1.0), 0.5 / 100);   /* warmup ramp as before */
    CHECK_RATE(optimizer_rate(o, 50, 1.0), 0.5 / 2);
    CHECK_RATE(optimizer_rate(o, 100, 1.0), 0.5);       /* the peak at t = warmup */
    CHECK_RATE(optimizer_rate(o, 400, 1.0), 0.5 / 2);   /* half at 4 warmup */
    CHECK_RATE(optimizer_rate(o, 200, 1.0), 0.5 * sqrt(0.5));
    CHECK_RATE(optimizer_rate(o, 10000, 1.0), 0.5 / 10);
    /* lr_scale (the plateau/epoch decay) multiplies it */
    CHECK_RATE(optimizer_rate(o, 1, 0.5), 0.25 / 100);
    CHECK_RATE(optimizer_rate(o, 100, 0.5), 0.25);
    CHECK_RATE(optimizer_rate(o, 400, 0.5), 0.25 / 2);
    CHECK_RATE(optimizer_rate(o, 400, 0.125), 0.5 * 0.125 / 2);
    /* it falls monotonically after N */
    int monotone = 1;
    for (int64_t t = 101; t < 5000; t++)
        if (!(optimizer_rate(o, t, 1.0) < optimizer_rate(o, t - 1, 1.0))) monotone = 0;
    CHECK(monotone, "rsqrt should fall at every update after N");
    optimizer_free(o);

    /* rsqrt_steps given: N = 400 while warmup is 100; the ramp and the
     * decay are independent factors */
    const char *own[] = {"train.optimizer=sgd", "train.lr=0.5", "train.warmup_steps=100",
                         "train.lr_schedule=rsqrt", "train.rsqrt_steps=400"};
    o = optimizer_for(be, own, 5);
    if (!o) return;
    CHECK_EQ_INT(o->sched.rsqrt_steps, 400);
    CHECK_RATE(optimizer_rate(o, 1, 1.0), 0.5 / 100);
    CHECK_RATE(optimizer_rate(o, 100, 1.0), 0.5);
    CHECK_RATE(optimizer_rate(o, 400, 1.0), 0.5);
    CHECK_RATE(optimizer_rate(o, 1600, 1.0), 0.25);
    CHECK_RATE(optimizer_rate(o, 1600, 0.5), 0.125);
    optimizer_free(o);

    /* no warmup, rsqrt_steps 4: the full rate up to t = 4, then the decay */
    const char *nowarm[] = {"train.optimizer=sgd", "train.lr=0.5", "train.lr_schedule=rsqrt",
                            "train.rsqrt_steps=4"};
    o = optimizer_for(be, nowarm, 4);
    if (!o) return;
    CHECK_RATE(optimizer_rate(o, 1, 1.0), 0.5);
    CHECK_RATE(optimizer_rate(o, 4, 1.0), 0.5);
    CHECK_RATE(optimizer_rate(o, 16, 1.0), 0.25);
    CHECK_RATE(optimizer_rate(o, 9, 1.0), 0.5 * 2.0 / 3.0);
    optimizer_free(o);
}

static void test_config(void) {
    Config cfg;
    /* rsqrt with neither rsqrt_steps nor warmup_steps: a config error naming the key */
    const char *none[] = {"train.lr_schedule=rsqrt"};
    CHECK_EQ_INT(load_sets(none, 1, &cfg), NMT_ERR_CONFIG);
    CHECK_CONTAINS(nmt_error_message(), "train.rsqrt_steps: train.lr_schedule rsqrt needs train.rsqrt_steps or "
                                        "train.warmup_steps above 0");
    const char *zeros[] = {"train.lr_schedule=rsqrt", "train.rsqrt_steps=0", "train.warmup_steps=0"};
    CHECK_EQ_INT(load_sets(zeros, 3, &cfg), NMT_ERR_CONFIG);
    CHECK_CONTAINS(nmt_error_message(), "train.rsqrt_steps:");
    /* either one is enough; constant needs neither */
    const char *n_only[] = {"train.lr_schedule=rsqrt", "train.rsqrt_steps=8"};
    CHECK_EQ_INT(load_sets(n_only, 2, &cfg), NMT_OK);
    config_free(&cfg);
    const char *w_only[] = {"train.lr_schedule=rsqrt", "train.warmup_steps=8"};
    CHECK_EQ_INT(load_sets(w_only, 2, &cfg), NMT_OK);
    CHECK_EQ_INT(cfg.train.rsqrt_steps, 0); /* stays 0 in the resolved config: "follow warmup_steps" */
    config_free(&cfg);
    CHECK_EQ_INT(load_sets(NULL, 0, &cfg), NMT_OK);
    CHECK_EQ_INT(cfg.train.lr_schedule, CFG_LR_CONSTANT);
    CHECK_EQ_INT(cfg.train.rsqrt_steps, 0);
    config_free(&cfg);
    /* bad values */
    const char *bad_name[] = {"train.lr_schedule=inverse_sqrt"};
    CHECK_EQ_INT(load_sets(bad_name, 1, &cfg), NMT_ERR_CONFIG);
    CHECK_CONTAINS(nmt_error_message(), "train.lr_schedule: must be one of constant, rsqrt");
    const char *bad_n[] = {"train.lr_schedule=rsqrt", "train.rsqrt_steps=-1"};
    CHECK_EQ_INT(load_sets(bad_n, 2, &cfg), NMT_ERR_CONFIG);
    CHECK_CONTAINS(nmt_error_message(), "train.rsqrt_steps: must be >= 0, got -1");

    /* both are schedule keys: a resumed run may change them */
    Config a, b;
    const char *sa[] = {"train.warmup_steps=8"};
    const char *sb[] = {"train.warmup_steps=8", "train.lr_schedule=rsqrt", "train.rsqrt_steps=50"};
    CHECK_EQ_INT(load_sets(sa, 1, &a), NMT_OK);
    CHECK_EQ_INT(load_sets(sb, 3, &b), NMT_OK);
    const char *diff = config_first_fixed_difference(&a, &b);
    CHECK(diff == NULL, "lr_schedule and rsqrt_steps should be schedule keys, got a difference in %s", diff);
    config_free(&a);
    config_free(&b);
}

int main(void) {
    Backend *be = cpu_backend_create(1);
    CHECK(be != NULL, "cpu backend");
    if (!be) return test_summary("test_lr_schedule");
    test_constant(be);
    test_rsqrt(be);
    test_config();
    be->destroy(be);
    return test_summary("test_lr_schedule");
}
