/* Writes docs/config.md (the configuration reference) to standard output, from the schema. */
#include <stdio.h>

#include "launcher/conf/conf.h"

int main(void) {
  conf_doc_markdown(stdout);
  return fflush(stdout) == 0 ? 0 : 1;
}
