/* The library's version at run time, for programs that check it against the headers they were built with. */
#include "gpulaunch/version.h"

unsigned int gpl_version(void) { return GPULAUNCH_VERSION_HEX; }

const char *gpl_version_string(void) { return GPULAUNCH_VERSION_STRING; }
