/* Ground truth transcribed from tests/data/topologies/EXPECTED-MAPPINGS.md, as a data table for the tests. */
#ifndef GPL_TESTS_TOPOLOGY_EXPECTED_H
#define GPL_TESTS_TOPOLOGY_EXPECTED_H

/* One GPU row of a machine's table. NIC lists are "busid name;busid name;..." (the whole best
 * class after the hops tie-break, as the table lists them); NULL = no NIC at all. */
typedef struct exp_gpu_s {
  const char *pci;
  const char *numa;       /* "3" */
  const char *cpus;       /* hwloc list format, as in the file */
  const char *rdma_class; /* "PIX", ... or NULL */
  const char *rdma;       /* nearest RDMA NICs: "0000:04:00.0 mlx5_1" */
  const char *net_class;
  const char *net;        /* nearest netdevs: "0000:04:00.0 ib1" */
  const char *prefer;     /* the one RDMA NIC the notes say to pick (NUMA tie-break), or NULL */
} exp_gpu_t;

typedef struct exp_machine_s {
  const char *file; /* in GPULAUNCH_TOPOLOGY_DIR */
  int ngpus;
  exp_gpu_t gpus[16];
} exp_machine_t;

extern const exp_machine_t exp_machines[];
extern const int exp_nmachines;

/* The folder of the shared XML files (env GPULAUNCH_TOPOLOGY_DIR). */
const char *exp_dir(void);
/* dir/file into buf. */
const char *exp_path(const char *file, char *buf, unsigned len);

#endif
