/* Shared checks of the topology tests (cmocka): field-by-field comparisons, plan sanity, JSON round trip. */
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

/* cmocka's asserts for one field of a whole machine: a mismatch fails the case with its context
 * (the file, the GPU or rank) and both values. */
#define assert_field_str(ctx, field, want, got)                                                     \
  do {                                                                                              \
    const char *w_ = (want), *g_ = (got);                                                           \
    if (strcmp(w_ ? w_ : "(null)", g_ ? g_ : "(null)") != 0)                                        \
      fail_msg("%s: %s: expected '%s', got '%s'", (ctx), (field), w_ ? w_ : "(null)", g_ ? g_ : "(null)"); \
  } while (0)
#define assert_field_int(ctx, field, want, got)                                                     \
  do {                                                                                              \
    long w_ = (long)(want), g_ = (long)(got);                                                       \
    if (w_ != g_) fail_msg("%s: %s: expected %ld, got %ld", (ctx), (field), w_, g_);                \
  } while (0)

/* The rules every plan must obey whatever the machine (GPUs with NUMA and CPUs, distinct GPUs,
 * rank CPUs local to their GPU and disjoint, and check_plan_node_env); a failure fails the case. */
void check_plan_sane(const char *ctx, const topo_t *t, const plan_t *p);
/* The node-wide environment (issue 10): the same CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER and
 * NCCL_IB_HCA on every rank; device LOCAL_RANK is the planned GPU; NCCL_IB_HCA holds a nearest
 * NIC (by an oracle of its own) of every GPU and none that is nearest to no GPU. Part of
 * check_plan_sane. */
void check_plan_node_env(const char *ctx, const topo_t *t, const plan_t *p);
/* report_json printed, parsed back with cJSON and compared with the structs. */
void check_json_roundtrip(const char *ctx, const topo_t *t, const plan_t *p);

#endif
