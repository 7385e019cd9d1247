# Makefile for nmt.
#   make              build ./nmt (CPU backend; plus CUDA when nvcc is on PATH)
#   make CUDA=0|1     force the CUDA backend off / on (1 fails without nvcc)
#   make test         build and run the whole test suite (no GPU needed)
#   make WERROR=1     treat warnings as errors (CI does)
# Sources are found by wildcard: a new src/**/*.c, src/data/*.cc or
# src/gpu/*.cu is built without editing this file; a new tests/test_*.c
# becomes a test program, a new tests/test_*.sh a shell test.

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

PKGS     := openblas libcjson zlib
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
ifeq ($(strip $(PKG_LIBS)),)
PKG_LIBS := -lopenblas -lcjson -lz
endif

WARN     := -Wall -Wextra -Wshadow -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN     += -Werror
endif
OPT      ?= -O2 -g
CPPFLAGS += -Isrc $(PKG_CFLAGS) -D_GNU_SOURCE
CFLAGS   += -std=c11 $(OPT) $(WARN) -fopenmp -MMD -MP
CXXFLAGS += -std=c++17 $(OPT) $(WARN) -MMD -MP
LDLIBS   += $(PKG_LIBS) -lsentencepiece -lsentencepiece_train -fopenmp -lm -lpthread

BUILD    := build
LIB_C    := $(filter-out src/main.c,$(wildcard src/*.c src/*/*.c))
LIB_CC   := $(wildcard src/*/*.cc)
LIB_OBJ  := $(LIB_C:%.c=$(BUILD)/%.o) $(LIB_CC:%.cc=$(BUILD)/%.o)

ifeq ($(CUDA),1)
CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(shell command -v $(NVCC))))
CU_SRC   := $(wildcard src/gpu/*.cu)
LIB_OBJ  += $(CU_SRC:%.cu=$(BUILD)/%.o)
CPPFLAGS += -DNMT_WITH_CUDA
NVCCFLAGS ?= -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
LDLIBS   += -L$(CUDA_HOME)/lib64 -lcublas -lcurand -lcudart_static -ldl -lrt
endif

TEST_C    := $(wildcard tests/test_*.c)
TEST_BIN  := $(TEST_C:tests/%.c=$(BUILD)/tests/%)
TEST_SH   := $(wildcard tests/test_*.sh)

.PHONY: all test clean distclean
.SECONDARY:
all: nmt

nmt: $(BUILD)/src/main.o $(LIB_OBJ)
	$(CXX) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -Isrc -DNMT_WITH_CUDA -Xcompiler -Wall -c -o $@ $<

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIB_OBJ)
	$(CXX) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CFLAGS) -c -o $@ $<

test: nmt $(TEST_BIN)
	@NMT_BIN=$(CURDIR)/nmt scripts/run-tests.sh $(TEST_BIN) $(TEST_SH)

clean:
	rm -rf $(BUILD) nmt

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
