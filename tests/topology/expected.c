/* Ground truth transcribed from tests/data/topologies/EXPECTED-MAPPINGS.md (one row per GPU of each table). */
#include "expected.h"

#include <stdio.h>
#include <stdlib.h>

/* {pci, numa, cpus, rdma class, nearest RDMA NICs, netdev class, nearest netdevs, preferred RDMA NIC} */
const exp_machine_t exp_machines[] = {
    {"hwloc-aws-p5en.48xlarge.xml", 8, {
        {"0000:59:00.0", "0", "0-47,96-143", "PIX", "0000:55:00.0 rdmap85s0;0000:56:00.0 rdmap86s0;0000:57:00.0 rdmap87s0;0000:58:00.0 rdmap88s0", "PIX", "0000:47:00.0 enp71s0;0000:48:00.0 enp72s0;0000:49:00.0 enp73s0;0000:4a:00.0 enp74s0", NULL},
        {"0000:5a:00.0", "0", "0-47,96-143", "PIX", "0000:55:00.0 rdmap85s0;0000:56:00.0 rdmap86s0;0000:57:00.0 rdmap87s0;0000:58:00.0 rdmap88s0", "PIX", "0000:47:00.0 enp71s0;0000:48:00.0 enp72s0;0000:49:00.0 enp73s0;0000:4a:00.0 enp74s0", NULL},
        {"0000:72:00.0", "0", "0-47,96-143", "PIX", "0000:6e:00.0 rdmap110s0;0000:6f:00.0 rdmap111s0;0000:70:00.0 rdmap112s0;0000:71:00.0 rdmap113s0", "PIX", "0000:60:00.0 enp96s0;0000:61:00.0 enp97s0;0000:62:00.0 enp98s0;0000:63:00.0 enp99s0", NULL},
        {"0000:73:00.0", "0", "0-47,96-143", "PIX", "0000:6e:00.0 rdmap110s0;0000:6f:00.0 rdmap111s0;0000:70:00.0 rdmap112s0;0000:71:00.0 rdmap113s0", "PIX", "0000:60:00.0 enp96s0;0000:61:00.0 enp97s0;0000:62:00.0 enp98s0;0000:63:00.0 enp99s0", NULL},
        {"0000:8b:00.0", "1", "48-95,144-191", "PIX", "0000:87:00.0 rdmap135s0;0000:88:00.0 rdmap136s0;0000:89:00.0 rdmap137s0;0000:8a:00.0 rdmap138s0", "PIX", "0000:7a:00.0 enp122s0;0000:7b:00.0 enp123s0;0000:7c:00.0 enp124s0;0000:7d:00.0 enp125s0", NULL},
        {"0000:8c:00.0", "1", "48-95,144-191", "PIX", "0000:87:00.0 rdmap135s0;0000:88:00.0 rdmap136s0;0000:89:00.0 rdmap137s0;0000:8a:00.0 rdmap138s0", "PIX", "0000:7a:00.0 enp122s0;0000:7b:00.0 enp123s0;0000:7c:00.0 enp124s0;0000:7d:00.0 enp125s0", NULL},
        {"0000:a4:00.0", "1", "48-95,144-191", "PIX", "0000:a0:00.0 rdmap160s0;0000:a1:00.0 rdmap161s0;0000:a2:00.0 rdmap162s0;0000:a3:00.0 rdmap163s0", "PIX", "0000:92:00.0 enp146s0;0000:93:00.0 enp147s0;0000:94:00.0 enp148s0;0000:95:00.0 enp149s0", NULL},
        {"0000:a5:00.0", "1", "48-95,144-191", "PIX", "0000:a0:00.0 rdmap160s0;0000:a1:00.0 rdmap161s0;0000:a2:00.0 rdmap162s0;0000:a3:00.0 rdmap163s0", "PIX", "0000:92:00.0 enp146s0;0000:93:00.0 enp147s0;0000:94:00.0 enp148s0;0000:95:00.0 enp149s0", NULL},
    }},
    {"hwloc-dell-xe8640-4xh100-llnl-ipa20.xml", 4, {
        {"0000:4e:00.0", "3", "42-55,154-167", "PIX", "0000:4d:00.0 mlx5_0;0000:4d:00.1 mlx5_1", "PIX", "0000:4d:00.0 hsi0;0000:4d:00.1 ibs2f1", NULL},
        {"0000:5f:00.0", "1", "14-27,126-139", "PIX", "0000:5e:00.0 mlx5_2", "PIX", "0000:5e:00.0 ibp94s0", NULL},
        {"0000:cb:00.0", "7", "98-111,210-223", "SYS", "0000:4d:00.0 mlx5_0;0000:4d:00.1 mlx5_1;0000:5e:00.0 mlx5_2;0000:da:00.0 mlx5_3", "SYS", "0000:01:00.0 eno8303;0000:01:00.1 eno8403", "mlx5_3"},
        {"0000:db:00.0", "5", "70-83,182-195", "PIX", "0000:da:00.0 mlx5_3", "PIX", "0000:da:00.0 ibp218s0", NULL},
    }},
    {"hwloc-jureca-dc-gpu-jrc0386.xml", 4, {
        {"0000:03:00.0", "3", "48-63,176-191", "PIX", "0000:04:00.0 mlx5_1", "PIX", "0000:04:00.0 ib1", NULL},
        {"0000:44:00.0", "1", "16-31,144-159", "PIX", "0000:43:00.0 mlx5_0", "PIX", "0000:43:00.0 ib0", NULL},
        {"0000:84:00.0", "7", "112-127,240-255", "PIX", "0000:83:00.0 mlx5_3", "PIX", "0000:83:00.0 ib3", NULL},
        {"0000:c4:00.0", "5", "80-95,208-223", "PIX", "0000:c3:00.0 mlx5_2", "PIX", "0000:c3:00.0 ib2", NULL},
    }},
    {"hwloc-juwels-booster-jwb0001.xml", 4, {
        {"0000:03:00.0", "3", "18-23,66-71", "PIX", "0000:04:00.0 mlx5_1", "PIX", "0000:04:00.0 ib1", NULL},
        {"0000:44:00.0", "1", "6-11,54-59", "PIX", "0000:43:00.0 mlx5_0", "PIX", "0000:43:00.0 ib0", NULL},
        {"0000:84:00.0", "7", "42-47,90-95", "PIX", "0000:83:00.0 mlx5_3", "PIX", "0000:83:00.0 ib3", NULL},
        {"0000:c4:00.0", "5", "30-35,78-83", "PIX", "0000:c3:00.0 mlx5_2", "PIX", "0000:c3:00.0 ib2", NULL},
    }},
    {"hwloc-juwels-cluster-gpu-jwc09n003.xml", 4, {
        {"0000:5d:00.0", "0", "0-19,40-59", "PIX", "0000:5f:00.0 mlx5_0", "PIX", "0000:5f:00.0 ib0", NULL},
        {"0000:5e:00.0", "0", "0-19,40-59", "PIX", "0000:5f:00.0 mlx5_0", "PIX", "0000:5f:00.0 ib0", NULL},
        {"0000:88:00.0", "1", "20-39,60-79", "PIX", "0000:8a:00.0 mlx5_1", "PIX", "0000:8a:00.0 ib1", NULL},
        {"0000:89:00.0", "1", "20-39,60-79", "PIX", "0000:8a:00.0 mlx5_1", "PIX", "0000:8a:00.0 ib1", NULL},
    }},
    {"hwloc-llnl-pascal-2xp100-1ib.xml", 2, {
        {"0000:04:00.0", "0", "0-17,36-53", "PIX", "0000:08:00.0 mlx5_0", "PIX", "0000:08:00.0 hsi0", NULL},
        {"0000:07:00.0", "0", "0-17,36-53", "PIX", "0000:08:00.0 mlx5_0", "PIX", "0000:08:00.0 hsi0", NULL},
    }},
    {"hwloc-aws-g4dn.metal-8xt4.xml", 8, {
        {"0000:18:00.0", "0", "0-23,48-71", "SYS", "0000:c5:00.0 rdmap197s0", "SYS", "0000:c6:00.0 eth0", NULL},
        {"0000:19:00.0", "0", "0-23,48-71", "SYS", "0000:c5:00.0 rdmap197s0", "SYS", "0000:c6:00.0 eth0", NULL},
        {"0000:35:00.0", "0", "0-23,48-71", "SYS", "0000:c5:00.0 rdmap197s0", "SYS", "0000:c6:00.0 eth0", NULL},
        {"0000:36:00.0", "0", "0-23,48-71", "SYS", "0000:c5:00.0 rdmap197s0", "SYS", "0000:c6:00.0 eth0", NULL},
        {"0000:e7:00.0", "1", "24-47,72-95", "NODE", "0000:c5:00.0 rdmap197s0", "NODE", "0000:c6:00.0 eth0", NULL},
        {"0000:e8:00.0", "1", "24-47,72-95", "NODE", "0000:c5:00.0 rdmap197s0", "NODE", "0000:c6:00.0 eth0", NULL},
        {"0000:f4:00.0", "1", "24-47,72-95", "NODE", "0000:c5:00.0 rdmap197s0", "NODE", "0000:c6:00.0 eth0", NULL},
        {"0000:f5:00.0", "1", "24-47,72-95", "NODE", "0000:c5:00.0 rdmap197s0", "NODE", "0000:c6:00.0 eth0", NULL},
    }},
    {"hwloc-inria-24em64t-2n6c2t-3gpu-1ib.xml", 3, {
        {"0000:06:00.0", "0", "0,2,4,6,8,10,12,14,16,18,20,22", "PHB", "0000:05:00.0 mlx4_0", "PHB", "0000:04:00.0 eth0;0000:04:00.1 eth1;0000:05:00.0 eth2", NULL},
        {"0000:11:00.0", "1", "1,3,5,7,9,11,13,15,17,19,21,23", "SYS", "0000:05:00.0 mlx4_0", "SYS", "0000:04:00.0 eth0;0000:04:00.1 eth1;0000:05:00.0 eth2", NULL},
        {"0000:14:00.0", "1", "1,3,5,7,9,11,13,15,17,19,21,23", "SYS", "0000:05:00.0 mlx4_0", "SYS", "0000:04:00.0 eth0;0000:04:00.1 eth1;0000:05:00.0 eth2", NULL},
    }},
    {"hwloc-deep-est-esb-dp-esb01.xml", 1, {
        {"0000:65:00.0", "0", "0-15", "NODE", "0000:b3:00.0 mlx5_0", "NODE", "0000:17:00.0 eno1;0000:17:00.1 eno2;0000:b3:00.0 ib0", NULL},
    }},
    {"hwloc-nvidia-dgx2h.xml", 16, {
        {"0000:34:00.0", "0", "0-1", NULL, NULL, NULL, NULL, NULL},
        {"0000:36:00.0", "0", "0-1", NULL, NULL, NULL, NULL, NULL},
        {"0000:39:00.0", "0", "0-1", NULL, NULL, NULL, NULL, NULL},
        {"0000:3b:00.0", "0", "0-1", NULL, NULL, NULL, NULL, NULL},
        {"0000:57:00.0", "0", "0-1", NULL, NULL, NULL, NULL, NULL},
        {"0000:59:00.0", "0", "0-1", NULL, NULL, NULL, NULL, NULL},
        {"0000:5c:00.0", "0", "0-1", NULL, NULL, NULL, NULL, NULL},
        {"0000:5e:00.0", "0", "0-1", NULL, NULL, NULL, NULL, NULL},
        {"0000:b7:00.0", "1", "24-25", NULL, NULL, NULL, NULL, NULL},
        {"0000:b9:00.0", "1", "24-25", NULL, NULL, NULL, NULL, NULL},
        {"0000:bc:00.0", "1", "24-25", NULL, NULL, NULL, NULL, NULL},
        {"0000:be:00.0", "1", "24-25", NULL, NULL, NULL, NULL, NULL},
        {"0000:e0:00.0", "1", "24-25", NULL, NULL, NULL, NULL, NULL},
        {"0000:e2:00.0", "1", "24-25", NULL, NULL, NULL, NULL, NULL},
        {"0000:e5:00.0", "1", "24-25", NULL, NULL, NULL, NULL, NULL},
        {"0000:e7:00.0", "1", "24-25", NULL, NULL, NULL, NULL, NULL},
    }},
};
const int exp_nmachines = (int)(sizeof exp_machines / sizeof exp_machines[0]);

const char *exp_dir(void) {
  const char *d = getenv("GPULAUNCH_TOPOLOGY_DIR");
  return d && *d ? d : "tests/data/topologies";
}

const char *exp_path(const char *file, char *buf, unsigned len) {
  snprintf(buf, len, "%s/%s", exp_dir(), file);
  return buf;
}
