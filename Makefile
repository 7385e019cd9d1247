# Makefile for nmt.
#   make              build ./nmt (CPU backend; plus CUDA when nvcc is on PATH)
#   make CUDA=0|1     force the CUDA backend off / on (1 fails without nvcc)
#   make test         build and run the whole test suite (no GPU needed)
#   make WERROR=1     treat warnings as errors (CI does)
#   make bench        training speed next to PyTorch (docs/benchmarks.md)
# Sources are found by wildcard: a new src/**/*.c, src/data/*.cc or
# src/gpu/*.cu is built without editing this file; a new tests/test_*.c
# becomes a test program (tests/test_*.cu too, with CUDA), a new
# tests/test_*.sh a shell test.

CC      ?= gcc
CXX     ?= g++
NVCC    ?= nvcc
PKG_CONFIG ?= pkg-config

HAVE_NVCC := $(shell command -v $(NVCC) >/dev/null 2>&1 && echo 1 || echo 0)
CUDA ?= $(HAVE_NVCC)
ifeq ($(CUDA),1)
ifeq ($(HAVE_NVCC),0)
$(error CUDA=1 but $(NVCC) is not on PATH)
endif
endif

# OpenBLAS itself (never the generic -lblas, which Debian's alternatives may
# point at the reference BLAS). The OpenMP build of OpenBLAS is preferred
# (libopenblas-openmp-dev): it shares one thread pool with nmt's own OpenMP
# loops instead of competing with them for the cores; it is found through
# its own pkg-config file and an rpath, whatever the system default is.
OPENBLAS_OMP_PC := $(firstword $(wildcard /usr/lib/*/openblas-openmp/pkgconfig/openblas.pc))
ifneq ($(OPENBLAS_OMP_PC),)
BLAS_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(OPENBLAS_OMP_PC))
BLAS_LIBDIR := $(shell $(PKG_CONFIG) --variable=libdir $(OPENBLAS_OMP_PC))
BLAS_LIBS   := -L$(BLAS_LIBDIR) -Wl,-rpath,$(BLAS_LIBDIR) -lopenblas
else
BLAS_CFLAGS := $(shell $(PKG_CONFIG) --cflags openblas 2>/dev/null)
BLAS_LIBS   := $(shell $(PKG_CONFIG) --libs openblas 2>/dev/null || echo -lopenblas)
endif
PKGS     := libcjson zlib
PKG_CFLAGS := $(BLAS_CFLAGS) $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(BLAS_LIBS) $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null || echo -lcjson -lz)

WARN     := -Wall -Wextra -Wshadow -Wno-unused-parameter
NVCC_WARN := -Xcompiler -Wall,-Wextra,-Wshadow,-Wno-unused-parameter
ifeq ($(WERROR),1)
WARN     += -Werror
NVCC_WARN += -Werror all-warnings
endif
OPT      ?= -O3 -g
CPPFLAGS += -Isrc $(PKG_CFLAGS) -D_GNU_SOURCE
# -fno-trapping-math: FP exceptions stay masked (as always on Linux), so gcc may
# if-convert the branch-free exp/tanh of src/kernels/ into SIMD loops.
# -fno-math-errno: nothing reads errno after math calls, so sqrtf becomes one
# instruction and loops with it (Adam) vectorise; results are unchanged.
# -ffp-contract=off: no fused multiply-add where a target has one (the AVX-512
# versions of src/cpu/cpu_ops.c's rows), so that they compute the same bits.
CFLAGS   += -std=c11 $(OPT) $(WARN) -fno-trapping-math -fno-math-errno -ffp-contract=off -fopenmp -MMD -MP
CXXFLAGS += -std=c++17 $(OPT) $(WARN) -MMD -MP
LDLIBS   += $(PKG_LIBS) -lsentencepiece -lsentencepiece_train -fopenmp -lm -lpthread

BUILD    := build
# The binary; work going on side by side in one tree gives each its own BUILD and BIN.
BIN      ?= nmt
LIB_C    := $(filter-out src/main.c,$(wildcard src/*.c src/*/*.c))
LIB_CC   := $(wildcard src/*/*.cc)
LIB_OBJ  := $(LIB_C:%.c=$(BUILD)/%.o) $(LIB_CC:%.cc=$(BUILD)/%.o)

ifeq ($(CUDA),1)
CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(shell command -v $(NVCC))))
CU_SRC   := $(wildcard src/gpu/*.cu)
LIB_OBJ  += $(CU_SRC:%.cu=$(BUILD)/%.o)
CPPFLAGS += -DNMT_WITH_CUDA
NVCCFLAGS ?= -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
# cuBLAS is not linked: src/gpu/gpu_cublas.cu opens it with dlopen when a CUDA
# backend is made (the run path lets it find the build machine's toolkit);
# cuRAND's device API is header-only.
LDLIBS   += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt
endif

TEST_C    := $(wildcard tests/test_*.c)
TEST_BIN  := $(TEST_C:tests/%.c=$(BUILD)/tests/%)
# tests/test_*.cu: host programs that need nvcc but no GPU (cuRAND's header)
ifeq ($(CUDA),1)
TEST_BIN  += $(patsubst tests/%.cu,$(BUILD)/tests/%,$(wildcard tests/test_*.cu))
endif
TEST_SH   := $(wildcard tests/test_*.sh)
# The slowest tests, slowest first (the times of a CI run): run-tests.sh
# runs the tests side by side, one per core, each starting when a slot
# frees, so a long test started last would run on alone at the end. `make
# test` (and the sanitizer suite) runs these, then the C tests, then the
# other shell tests.
TEST_FIRST := tests/test_gpu_emu_parity.sh tests/test_gpu_check_dry.sh tests/test_attention_gain.sh \
              tests/test_train_e2e.sh tests/test_reference_decode.sh tests/test_translate_cli.sh \
              tests/test_guided_alignment.sh tests/test_combo_soak.sh \
              tests/test_translate_stream_gzip.sh tests/test_score_cli.sh tests/test_gpu_emu.sh
# test_order BINS SHS: the test programs BINS and shell tests SHS in that order
test_order = $(filter $(2),$(TEST_FIRST)) $(1) $(filter-out $(TEST_FIRST),$(2))

BENCH_C   := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_C:bench/%.c=$(BUILD)/bench/%)

.PHONY: all test bench clean distclean
.SECONDARY:
all: $(BIN)

$(BIN): $(BUILD)/src/main.o $(LIB_OBJ)
	$(CXX) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(NVCC_WARN) -Isrc -DNMT_WITH_CUDA -MMD -MP -MF $(@:.o=.d) -c -o $@ $<

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIB_OBJ)
	$(CXX) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CFLAGS) -c -o $@ $<

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIB_OBJ)
	$(CXX) -o $@ $^ $(LDLIBS)

$(BUILD)/bench/%.o: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# Speed next to PyTorch (a benchmark, not a test): see docs/benchmarks.md
bench: $(BIN) $(BENCH_BIN)
	bash scripts/bench.sh

# With SAN=1, mk/check.mk makes `test` run the suite under the sanitizers.
ifneq ($(SAN),1)
# (bench_train, bench_recurrence: tests/test_gpu_check_dry.sh runs
# scripts/gpu-check.sh's dry run; mk/gpu.mk adds the emulated programs.)
test: $(BIN) $(TEST_BIN) $(BUILD)/bench/bench_train $(BUILD)/bench/bench_recurrence
	@NMT_BIN=$(abspath $(BIN)) NMT_BUILD=$(abspath $(BUILD)) NMT_CUDA=$(CUDA) scripts/run-tests.sh \
	  $(call test_order,$(TEST_BIN),$(TEST_SH))
endif

clean:
	rm -rf $(BUILD) $(BIN)

# Optional parts, one file each (mk/gpu.mk: the CUDA bundle and parity tests;
# mk/check.mk: sanitizers and fuzzing).
-include $(wildcard mk/*.mk)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
