/* Shared checks of the topology tests: field-by-field comparisons that report every mismatch, plan sanity, JSON round trip. */
#ifndef GPL_TESTS_TOPOLOGY_CHECKS_H
#define GPL_TESTS_TOPOLOGY_CHECKS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "topology/plan.h"
#include "topology/topo.h"

/* Field-by-field comparison: every mismatch is printed with its context, the test fails at the
 * end with their count (so one run shows all differences, not only the first). */
extern int g_fail;
#define EXPECT_STR(ctx, field, want, got)                                                           \
  do {                                                                                              \
    const char *w_ = (want), *g_ = (got);                                                           \
    if (strcmp(w_ ? w_ : "(null)", g_ ? g_ : "(null)") != 0) {                                      \
      print_error("%s: %s: expected '%s', got '%s'\n", (ctx), (field), w_ ? w_ : "(null)", g_ ? g_ : "(null)"); \
      g_fail++;                                                                                     \
    }                                                                                               \
  } while (0)
#define EXPECT_INT(ctx, field, want, got)                                                           \
  do {                                                                                              \
    long w_ = (long)(want), g_ = (long)(got);                                                       \
    if (w_ != g_) {                                                                                 \
      print_error("%s: %s: expected %ld, got %ld\n", (ctx), (field), w_, g_);                       \
      g_fail++;                                                                                     \
    }                                                                                               \
  } while (0)

/* The rules every plan must obey whatever the machine (GPUs with NUMA and CPUs, distinct GPUs,
 * rank CPUs local to their GPU and disjoint, and check_plan_node_env). \return failures. */
int check_plan_sane(const char *ctx, const topo_t *t, const plan_t *p);
/* The node-wide environment (issue 10): the same CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER and
 * NCCL_IB_HCA on every rank; device LOCAL_RANK is the planned GPU; NCCL_IB_HCA holds a nearest
 * NIC (by an oracle of its own) of every GPU and none that is nearest to no GPU. Part of
 * check_plan_sane. \return failures. */
int check_plan_node_env(const char *ctx, const topo_t *t, const plan_t *p);
/* report_json printed, parsed back with cJSON and compared with the structs. \return failures. */
int check_json_roundtrip(const char *ctx, const topo_t *t, const plan_t *p);

#endif
