/* gpulaunch public API, everything in one include: errors, data types and communication. */
#ifndef GPULAUNCH_GPULAUNCH_H
#define GPULAUNCH_GPULAUNCH_H

#include "gpulaunch/error.h"
#include "gpulaunch/types.h"
#include "gpulaunch/comm.h"

#endif
