/* The small utilities, one header each by purpose (clocks, parsing, sorting, suggestions, word
 * splitting, strings, secrets, files, this process's identity), plus the array/min/max macros. */
#ifndef GPL_COMMON_UTIL_H
#define GPL_COMMON_UTIL_H

#define GPL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define GPL_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GPL_MAX(a, b) ((a) > (b) ? (a) : (b))

#include "common/util_file.h"
#include "common/util_host.h"
#include "common/util_parse.h"
#include "common/util_secret.h"
#include "common/util_sort.h"
#include "common/util_str.h"
#include "common/util_suggest.h"
#include "common/util_time.h"
#include "common/util_words.h"

#endif
