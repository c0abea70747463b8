/* The exit-code table's two renderings: --help's "Exit status" lines and the README's table. */
#include "launcher/exitcode.h"

#include <string.h>

typedef struct exit_row_s {
  const char *label, *help, *sep, *doc;
} exit_row_t;

static const exit_row_t g_rows[] = {
#define EXIT_ROW_CODE_(name, code, help, sep, doc) {#code, help, sep, doc},
#define EXIT_ROW_RANGE_(label, help, sep, doc) {label, help, sep, doc},
    GPL_EXIT_LIST(EXIT_ROW_CODE_, EXIT_ROW_RANGE_)
#undef EXIT_ROW_CODE_
#undef EXIT_ROW_RANGE_
};

void exitcode_print(FILE *f, int markdown) {
  size_t n = sizeof g_rows / sizeof g_rows[0];
  if (markdown) {
    fputs("| status | meaning |\n|---|---|\n", f);
    for (size_t i = 0; i < n; i++) fprintf(f, "| %s | %s |\n", g_rows[i].label, g_rows[i].doc);
    return;
  }
  fputs("Exit status: ", f);
  for (size_t i = 0; i < n; i++) {
    /* A line a row's sep began is indented (the 0/program/signal sentence is the first). */
    if (i > 0 && strchr(g_rows[i - 1].sep, '\n')) fputs("  ", f);
    fprintf(f, "%s %s%s", g_rows[i].label, g_rows[i].help, g_rows[i].sep);
  }
}
