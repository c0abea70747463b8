/* Internal to topology/nvml*.c: the part of NVIDIA's nvml.h that gpulaunch calls, and the table of functions dlsym found. */
#ifndef GPL_TOPOLOGY_NVML_API_H
#define GPL_TOPOLOGY_NVML_API_H

#include <stdint.h>

/* Signatures and layouts from NVIDIA's NVML API reference (nvml.h of CUDA 12); every function
 * returns nvmlReturn_t, 0 being NVML_SUCCESS. Only what is used is declared. */
typedef int nvml_ret_t;
typedef struct nvml_device_st *nvml_handle_t;
typedef struct nvml_event_set_st *nvml_event_set_t;
typedef struct nvml_gpm_sample_st *nvml_gpm_sample_t;

/* NVIDIA's names, so that the code reads like the API reference (nvml.h itself is never
 * included: these would clash with it, and it is not on build machines). */
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_GPU_IS_LOST = 15,
};

typedef struct nvml_pci_info_s { /* nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3 */
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
} nvml_pci_info_t;

typedef struct nvml_utilization_s { /* nvmlUtilization_t */
  unsigned int gpu, memory;
} nvml_utilization_t;

typedef struct nvml_memory_s { /* nvmlMemory_t (v1): bytes */
  unsigned long long total, free, used;
} nvml_memory_t;

typedef struct nvml_event_data_s { /* nvmlEventData_t; nvmlEventSetWait (v1) fills the first three */
  nvml_handle_t device;
  unsigned long long event_type;
  unsigned long long event_data; /* the XID for nvmlEventTypeXidCriticalError */
  unsigned int gpu_instance_id, compute_instance_id;
} nvml_event_data_t;
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x8ull

enum { NVML_TEMPERATURE_GPU = 0 };
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
enum { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { NVML_VOLATILE_ECC = 0 };
enum { NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
       NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1 };
enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 }; /* nvmlEnableState_t */

/* GPM (nvmlGpm*, Hopper and later). The metrics array of nvmlGpmMetricsGet_t is sized by the
 * header's NVML_GPM_METRIC_MAX, which grew from 98 to 333 across drivers; NVML reads numMetrics
 * entries of it. The largest size keeps any driver within the struct. */
enum { NVML_GPM_METRIC_SM_UTIL = 2, NVML_GPM_METRIC_SM_OCCUPANCY = 3 };
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION 1
#define NVML_GPM_METRIC_SLOTS 333
typedef struct nvml_gpm_metric_s {
  unsigned int metric_id;
  nvml_ret_t ret;
  double value;
  struct {
    char *short_name, *long_name, *unit;
  } info;
} nvml_gpm_metric_t;
typedef struct nvml_gpm_get_s {
  unsigned int version;
  unsigned int num_metrics;
  nvml_gpm_sample_t sample1, sample2;
  nvml_gpm_metric_t metrics[NVML_GPM_METRIC_SLOTS];
} nvml_gpm_get_t;
typedef struct nvml_gpm_support_s {
  unsigned int version;
  unsigned int supported;
} nvml_gpm_support_t;

typedef struct nvml_api_s {
  void *lib;
  int refs;
  nvml_ret_t (*init)(void);
  nvml_ret_t (*shutdown)(void);
  const char *(*error_string)(nvml_ret_t);
  nvml_ret_t (*driver_version)(char *, unsigned int);
  nvml_ret_t (*nvml_version)(char *, unsigned int);
  nvml_ret_t (*cuda_driver_version)(int *);
  nvml_ret_t (*count)(unsigned int *);
  nvml_ret_t (*by_index)(unsigned int, nvml_handle_t *);
  nvml_ret_t (*by_pci)(const char *, nvml_handle_t *);
  nvml_ret_t (*pci_info)(nvml_handle_t, nvml_pci_info_t *);
  nvml_ret_t (*name)(nvml_handle_t, char *, unsigned int);
  nvml_ret_t (*uuid)(nvml_handle_t, char *, unsigned int);
  nvml_ret_t (*utilization)(nvml_handle_t, nvml_utilization_t *);
  nvml_ret_t (*memory)(nvml_handle_t, nvml_memory_t *);
  nvml_ret_t (*power)(nvml_handle_t, unsigned int *);          /* milliwatts */
  nvml_ret_t (*temperature)(nvml_handle_t, int, unsigned int *); /* C */
  nvml_ret_t (*clock)(nvml_handle_t, int, unsigned int *);       /* MHz */
  nvml_ret_t (*pcie)(nvml_handle_t, int, unsigned int *);        /* KB/s */
  nvml_ret_t (*clock_reasons)(nvml_handle_t, unsigned long long *);
  nvml_ret_t (*ecc)(nvml_handle_t, int, int, unsigned long long *);
  nvml_ret_t (*event_set_create)(nvml_event_set_t *);
  nvml_ret_t (*register_events)(nvml_handle_t, unsigned long long, nvml_event_set_t);
  nvml_ret_t (*event_set_wait)(nvml_event_set_t, nvml_event_data_t *, unsigned int);
  nvml_ret_t (*event_set_free)(nvml_event_set_t);
  nvml_ret_t (*retired_pages)(nvml_handle_t, int, unsigned int *, unsigned long long *);
  nvml_ret_t (*retired_pending)(nvml_handle_t, int *);
  nvml_ret_t (*remapped_rows)(nvml_handle_t, unsigned int *, unsigned int *, unsigned int *,
                              unsigned int *);
  nvml_ret_t (*nvlink_state)(nvml_handle_t, unsigned int, int *);
  nvml_ret_t (*nvlink_version)(nvml_handle_t, unsigned int, unsigned int *);
  nvml_ret_t (*gpm_support)(nvml_handle_t, nvml_gpm_support_t *);
  nvml_ret_t (*gpm_alloc)(nvml_gpm_sample_t *);
  nvml_ret_t (*gpm_free)(nvml_gpm_sample_t);
  nvml_ret_t (*gpm_sample)(nvml_handle_t, nvml_gpm_sample_t);
  nvml_ret_t (*gpm_metrics)(nvml_gpm_get_t *);
} nvml_api_t;

/* The loaded library (valid between nvml_open and the last nvml_close). */
extern nvml_api_t nvml__api;

/* NVML's message for r (its nvmlErrorString, or "NVML error r"). */
const char *nvml__err(nvml_ret_t r);

#endif
