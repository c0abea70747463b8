/* gpulaunch public API, everything in one include: version, errors, data types and communication. */
#ifndef GPULAUNCH_GPULAUNCH_H
#define GPULAUNCH_GPULAUNCH_H

#include "gpulaunch/version.h"
#include "gpulaunch/error.h"
#include "gpulaunch/types.h"
#include "gpulaunch/comm.h"

#endif
